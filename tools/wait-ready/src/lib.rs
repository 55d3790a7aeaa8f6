//! wait-ready: wait until an inference server is ready, telling loading from
//! crashed from unreachable, and write a `ready` or `failure` record.

pub mod argv;
pub mod check;
pub mod cli;
pub mod command;
pub mod files;
pub mod info;
pub mod live;
pub mod machine;
pub mod output;
pub mod probe;
pub mod target;
pub mod upstream_record;
pub mod wait;
pub mod watch;

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use regex::Regex;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{ConfigSource, ReadyOutcome};
use sweepkit::ssh::Ssh;
use sweepkit::transport::{Local, Transport};
use sweepkit::transport_args::FillError;

pub use cli::Args;
use cli::{usage, ServerKind};
use upstream_record::{Input, Upstream};
use watch::{Place, Watchers};

/// Set by SIGINT/SIGTERM.
static STOP: AtomicBool = AtomicBool::new(false);

/// The flags, checked and parsed.
struct Checked {
    user_expect: check::Expect,
    headers: Vec<(String, String)>,
    fatal: Vec<Regex>,
    configs: Vec<info::ConfigExpect>,
    files: Vec<files::FileExpect>,
}

fn check_args(a: &Args) -> Result<Checked, Exit> {
    let status = check::StatusSet::parse(&a.expect_status)?;
    let json = a
        .expect_json
        .iter()
        .map(|s| check::JsonExpect::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let body = match &a.expect_body {
        Some(r) => Some(Regex::new(r).map_err(|e| usage(format!("--expect-body: {e}")))?),
        None => None,
    };
    let headers = a
        .header
        .iter()
        .map(|h| match h.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() && !k.contains(' ') => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => Err(usage(format!("--header '{h}': want 'Name: value'"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let fatal = a
        .fatal_regex
        .iter()
        .map(|r| Regex::new(r).map_err(|e| usage(format!("--fatal-regex: {e}"))))
        .collect::<Result<Vec<_>, _>>()?;
    let files = a
        .expect_file
        .iter()
        .map(|s| files::FileExpect::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let configs = a
        .expect_config
        .iter()
        .map(|s| info::ConfigExpect::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if a.method.is_empty() || !a.method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(usage(format!(
            "--method '{}': not an HTTP method",
            a.method
        )));
    }
    if a.attempt_timeout.is_some_and(|d| d.is_zero()) || a.interval.is_zero() {
        return Err(usage("--attempt-timeout and --interval must be above zero"));
    }
    Ok(Checked {
        user_expect: check::Expect { status, json, body },
        headers,
        fatal,
        configs,
        files,
    })
}

/// Run wait-ready. `stdin` is read for an upstream record unless
/// `--no-stdin` (main passes an empty reader when stdin is a terminal).
pub fn run(args: Args, stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    let started = SystemTime::now();
    let c = check_args(&args)?;
    let up = read_upstream(&args, stdin, &mut stdout, started)?;
    let targets = target::build(
        &target_args(&args, &up)?,
        args.server,
        args.deep,
        &c.user_expect,
    )
    .map_err(|e| usage(e.to_string()))?;
    let (transport, ssh) = match open_transport(&args, &up) {
        Ok(x) => x,
        Err(e) => return Err(transport_failure(&args, e, started, &up, &mut stdout)),
    };
    let place = match &transport {
        Some(t) => Place::Remote(t.clone()),
        None => Place::Local,
    };
    let mut watchers = match watchers(&args, &up, &c, transport.clone(), &place) {
        Ok(w) => w,
        Err(e) if e.code == exit::TRANSPORT_ERROR => {
            return Err(transport_failure(&args, e, started, &up, &mut stdout))
        }
        Err(e) => return Err(e),
    };
    let plan = plan(&args, targets, request(&args, &c, ssh));
    // A second handler cannot be set (tests run `run` more than once).
    let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    let mut verdict = match wait::wait(&plan, &mut watchers, &STOP) {
        Ok(v) => v,
        // The SSH session (or the prefix) failed while watching, or the
        // container engine stopped answering: still a record, so the
        // config is not lost and a sweep retries it.
        Err(e) => return Err(transport_failure(&args, e, started, &up, &mut stdout)),
    };
    let ask = Inspect {
        args: &args,
        c: &c,
        plan: &plan,
        place: &place,
        pid: watchers
            .unit
            .as_ref()
            .and_then(|u| u.main_pid)
            .or(watchers.container.as_ref().and_then(|c| c.main_pid))
            .or(up.pid),
        container: watchers.container.as_ref(),
    };
    let live = inspect_live(&ask, &mut verdict)?;
    check_files(&args, &c, &up, &place, &mut verdict);
    output::report(&verdict);
    if !args.quiet {
        let via = transport.as_ref().map(|t| t.describe());
        // Once per run, after the wait: it never delays readiness (nor a
        // Ctrl-C, which should end the run at once).
        let host = (verdict.outcome != ReadyOutcome::Interrupted)
            .then(|| machine::read(transport.as_ref(), machine::identity(&args, &up)))
            .flatten();
        write_verdict(&mut stdout, &verdict, started, &up, live, via, host)?;
    }
    let code = verdict.outcome.exit_code();
    if code != exit::OK {
        return Err(Exit::silent(code));
    }
    if !args.command.is_empty() {
        drop(stdout);
        command::run(&args.command)?;
    }
    Ok(())
}

/// The upstream record, unless --no-stdin; a failure record is passed
/// through (exit 4), and so is a missing one when a driver ran this stage
/// for a config (--pipeline-config): nothing is probed then.
fn read_upstream(
    args: &Args,
    stdin: impl BufRead,
    mut stdout: impl Write,
    started: SystemTime,
) -> Result<Upstream, Exit> {
    if args.no_stdin {
        return Ok(Upstream::default());
    }
    // --quiet writes no record, a passed-through one neither (a failed
    // restore printed svc-swap's failure on sweep's stdout; issue 21).
    let mut quiet = std::io::sink();
    let stdout: &mut dyn Write = if args.quiet { &mut quiet } else { &mut stdout };
    match upstream_record::read(stdin)? {
        Input::None => match args.pipeline.config() {
            Some(config) => Err(sweepkit::upstream_input::missing(
                output::TOOL,
                started,
                sweepkit::records::Stage::Swap,
                config,
                stdout,
            )),
            None => Ok(Upstream::default()),
        },
        Input::Record(u) => Ok(*u),
        Input::Failure(raw) => Err(sweepkit::upstream_input::pass_through(
            output::TOOL,
            &raw,
            stdout,
        )),
    }
}

/// The targets given, or the upstream swap record's port.
fn target_args(args: &Args, up: &Upstream) -> Result<Vec<String>, Exit> {
    if !args.targets.is_empty() {
        return Ok(args.targets.clone());
    }
    match up.port {
        // Every server kind answers /health; the preset may refine it.
        Some(p) if args.server.is_some() => Ok(vec![format!("http://127.0.0.1:{p}")]),
        Some(p) => Ok(vec![format!("http://127.0.0.1:{p}/health")]),
        None => Err(usage(
            "no target: give a URL or tcp://HOST:PORT, or pipe a swap record \
             with target.port",
        )),
    }
}

/// The watchers the flags and the swap record ask for.
fn watchers(
    args: &Args,
    up: &Upstream,
    c: &Checked,
    transport: Option<Arc<dyn Transport>>,
    place: &Place,
) -> Result<Watchers, Exit> {
    let mut watchers = Watchers::default();
    let from_record = up.container.clone();
    if let Some(name) = args
        .container
        .clone()
        .or(from_record.as_ref().map(|c| c.0.clone()))
    {
        let t: Arc<dyn Transport> = transport.clone().unwrap_or_else(|| Arc::new(Local::new()));
        // The record's engine for the record's container, else the probe.
        let recorded = from_record
            .filter(|c| c.0 == name)
            .and_then(|c| sweepkit::engine::Engine::from_name(&c.1));
        let engine = match args.engine.or(recorded) {
            Some(e) => e,
            None => sweepkit::engine::pick(&*t, None)?,
        };
        watchers.container = Some(watch::container::ContainerWatch::new(&name, engine, t));
    }
    if let Some(unit) = args.unit.clone().or(up.unit.clone()) {
        let t: Arc<dyn Transport> = transport.unwrap_or_else(|| Arc::new(Local::new()));
        let mut u = watch::unit::UnitWatch::new(&unit, t);
        // Only trust svc-swap's invocation id for the unit it started.
        if up.unit.as_deref() == Some(unit.as_str()) {
            u.expect_invocation = up.invocation_id.clone();
        }
        watchers.unit = Some(u);
    }
    if let Some(pid) = args.pid.or(up.pid) {
        watchers.pid = Some(watch::pid::PidWatch::new(pid, place.clone()));
    }
    if let Some(log) = args.log.clone().or(up.log.clone()) {
        // The swap record's offset belongs to the swap record's log only.
        let from = args.log_offset.or(up
            .log_offset
            .filter(|_| up.log.as_deref() == Some(log.as_str())));
        let w = watch::log::LogWatch::new(&log, place.clone(), &c.fatal, from);
        watchers.log = Some(w);
    }
    Ok(watchers)
}

/// How each probe is sent.
fn request(args: &Args, c: &Checked, ssh: Option<Arc<dyn Transport>>) -> probe::RequestSpec {
    let bearer = args.api_key.clone().or_else(|| {
        (args.server == Some(ServerKind::Openai))
            .then(|| std::env::var("OPENAI_API_KEY").ok())
            .flatten()
    });
    if let Some(k) = &bearer {
        // Never echoed: scrubbed from every record and message from here on.
        sweepkit::redact::remember(k);
    }
    probe::RequestSpec {
        method: args.method.to_ascii_uppercase(),
        headers: c.headers.clone(),
        body: args.body.clone(),
        bearer,
        route: ssh.clone().map(tunnel_route),
        tunnel: ssh,
    }
}

fn plan(args: &Args, targets: Vec<target::Target>, req: probe::RequestSpec) -> wait::Plan {
    wait::Plan {
        targets,
        req,
        timeout: args.timeout,
        attempt_timeout: args
            .attempt_timeout
            .unwrap_or_else(|| cli::attempt_timeout(args.server)),
        schedule: wait::Schedule {
            interval: args.interval,
            max_interval: args.max_interval,
            backoff: args.backoff,
        },
        unreachable_after: Some(args.unreachable_after).filter(|d| !d.is_zero()),
        unresolved_after: Some(args.unresolved_after).filter(|d| !d.is_zero()),
        not_found_after: Some(args.not_found_after).filter(|d| !d.is_zero()),
        invert: args.invert,
        verbose: args.verbose,
    }
}

/// The ready (or failure) record, with the live server's args and where
/// they came from.
fn write_verdict(
    stdout: &mut impl Write,
    verdict: &wait::Verdict,
    started: SystemTime,
    up: &Upstream,
    live: Option<(sweepkit::records::ServerInfo, ConfigSource)>,
    via: Option<String>,
    host: Option<sweepkit::records::HostInfo>,
) -> Result<(), Exit> {
    let (server, source) = live.unzip();
    let mut rec = output::record(verdict, started, up, server, via.as_deref());
    if let sweepkit::Record::Ready(r) = &mut rec {
        r.config_source = source;
    }
    machine::attach(&mut rec, host);
    sweepkit::io::write_record(stdout, &rec).context("writing stdout")?;
    Ok(())
}

/// Once ready: the swap record's copied files (unless --no-stdin) and
/// --expect-file, checked on the far side; a mismatch is exit 13. For a
/// container, the host side of the bind mount svc-swap wrote through.
fn check_files(
    args: &Args,
    c: &Checked,
    up: &Upstream,
    place: &Place,
    verdict: &mut wait::Verdict,
) {
    if verdict.outcome != ReadyOutcome::Ready {
        return;
    }
    // Inside a container the server reads `far_path`; its host side (the
    // bind mount's source, `host_path`) is what the far side's commands see.
    let in_container = args.container.is_some() || up.container.is_some();
    let mut want = c.files.clone();
    let mut unchecked = 0;
    for f in &up.files {
        match (&f.host_path, in_container) {
            (Some(h), true) => want.push(files::FileExpect {
                path: h.clone(),
                sha256: f.sha256.clone(),
            }),
            (None, true) => unchecked += 1,
            (_, false) => want.push(files::FileExpect {
                path: f.far_path.clone(),
                sha256: f.sha256.clone(),
            }),
        }
    }
    if unchecked > 0 {
        verdict.warnings.push(format!(
            "{unchecked} copied file(s) not checked: no host path for a path inside the container"
        ));
    }
    if want.is_empty() {
        return;
    }
    let bad = files::check(place, &want);
    if !bad.is_empty() {
        verdict.outcome = ReadyOutcome::ConfigMismatch;
        let why = format!("config mismatch: {}", bad.join("; "));
        verdict.reason = if verdict.reason.starts_with("config mismatch") {
            format!("{}; {}", verdict.reason, bad.join("; "))
        } else {
            why
        };
    }
}

/// What the live check needs.
struct Inspect<'a> {
    args: &'a Args,
    c: &'a Checked,
    plan: &'a wait::Plan,
    place: &'a Place,
    /// The server's PID: --pid, the unit's MainPID or the swap record's.
    pid: Option<u32>,
    /// The watched container: its command, by the engine's inspect.
    container: Option<&'a watch::container::ContainerWatch>,
}

/// Once ready: the server's resolved args (and --expect-config checked
/// against them, a mismatch turning the verdict into exit 13), with where
/// they were read from.
fn inspect_live(
    a: &Inspect,
    verdict: &mut wait::Verdict,
) -> Result<Option<(sweepkit::records::ServerInfo, ConfigSource)>, Exit> {
    if verdict.outcome != ReadyOutcome::Ready {
        return Ok(None);
    }
    let Some(base) = a.plan.targets.iter().find_map(|t| t.base_url()) else {
        if a.c.configs.is_empty() {
            return Ok(None);
        }
        return Err(usage("--expect-config needs an http:// target"));
    };
    let live = live::inspect(&live::Ask {
        base: &base,
        kind: a.args.server,
        req: &a.plan.req,
        configs: &a.c.configs,
        pid: a.args.pid.or(a.pid),
        place: a.place,
        container: a.container,
    });
    verdict.warnings.extend(live.warnings);
    if !live.mismatches.is_empty() {
        verdict.outcome = ReadyOutcome::ConfigMismatch;
        verdict.reason = format!("config mismatch: {}", live.mismatches.join("; "));
    }
    Ok(Some((live.server, live.source)))
}

/// The transport for far-side commands: the transport flags, each filled
/// from the swap record's target when not given (`--ssh-key K` alone works
/// when the record names the destination); None when everything is local.
/// The second value is the SSH transport, if any.
#[allow(clippy::type_complexity)]
fn open_transport(
    args: &Args,
    up: &Upstream,
) -> Result<(Option<Arc<dyn Transport>>, Option<Arc<dyn Transport>>), Exit> {
    let mut ta = args.transport.clone();
    ta.fill_from(up.target.as_ref()).map_err(|e| match e {
        FillError::Target { .. } => Exit::new(exit::BAD_INPUT, anyhow::anyhow!("<stdin>: {e}")),
        FillError::SshOnlyWithoutDestination => usage(e.to_string()),
    })?;
    // Resolved through the ssh config as --ssh would be, also for a
    // destination that came from the record.
    let ssh_cfg = ta.ssh_config().map_err(|e| {
        let from = if args.transport.ssh.is_none() {
            "<stdin>: target.ssh: "
        } else {
            ""
        };
        Exit::new(e.exit_code(), anyhow::anyhow!("{from}{e}"))
    })?;
    if let Some(c) = ssh_cfg {
        let t: Arc<dyn Transport> = Arc::new(
            Ssh::connect(c).map_err(|e| Exit::new(e.exit_code(), anyhow::anyhow!("{e}")))?,
        );
        return Ok((Some(t.clone()), Some(t)));
    }
    let prefix = ta.prefix();
    if prefix.is_empty() {
        Ok((None, None))
    } else {
        Ok((Some(Arc::new(Local::with_prefix(prefix))), None))
    }
}

/// A transport error (SSH connect, the session lost while watching, a
/// container engine that stopped answering: `exit::is_transient`): write
/// a failure record first, unless --quiet, so the config is not lost:
/// class `transport`, the error's exit code. Other errors pass as they
/// are.
fn transport_failure(
    args: &Args,
    e: Exit,
    started: SystemTime,
    up: &Upstream,
    stdout: &mut impl Write,
) -> Exit {
    use sweepkit::records::{self, FailureClass, FailureKind, Record, Stage};
    if !exit::is_transient(e.code) || args.quiet {
        return e;
    }
    let reason = e.error.as_ref().map_or(String::new(), |e| format!("{e:#}"));
    let mut f = records::failure(
        output::TOOL,
        started,
        up.config.clone(),
        Stage::Ready,
        FailureKind::Unreachable,
        format!("transport: {reason}"),
        up.raw.clone(),
    );
    f.class = Some(FailureClass::Transport);
    f.exit_code = Some(i32::from(e.code));
    match sweepkit::io::write_record(stdout, &Record::Failure(f)).context("writing stdout") {
        Ok(()) => e,
        Err(w) => w.into(),
    }
}

/// Resolve `host:port` to a local forwarder that tunnels to it over SSH;
/// one forwarder per address, opened on first use.
fn tunnel_route(t: Arc<dyn Transport>) -> probe::Route {
    let cache = std::sync::Mutex::new(std::collections::HashMap::new());
    Arc::new(move |netloc: &str| {
        let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(a) = cache.get(netloc) {
            return Ok(vec![*a]);
        }
        let (host, port) = netloc
            .rsplit_once(':')
            .and_then(|(h, p)| Some((h.trim_matches(['[', ']']), p.parse::<u16>().ok()?)))
            .ok_or_else(|| std::io::Error::other(format!("bad address {netloc}")))?;
        let a = t.forward(host, port).map_err(std::io::Error::other)?;
        cache.insert(netloc.to_string(), a);
        Ok(vec![a])
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[test]
    fn verify_cli() {
        Args::command().debug_assert();
    }

    #[test]
    fn bad_flags_are_usage_errors() {
        for bad in [
            &["wait-ready", "--expect-json", "a..b=1", "http://h/"][..],
            &["wait-ready", "--expect-status", "abc", "http://h/"],
            &["wait-ready", "--expect-body", "(", "http://h/"],
            &["wait-ready", "--header", "nocolon", "http://h/"],
            &["wait-ready", "--expect-config", "x", "http://h/"],
        ] {
            let a = Args::try_parse_from(bad).unwrap();
            let e = check_args(&a).err().expect("accepted");
            assert_eq!(e.code, exit::USAGE, "{bad:?}");
        }
    }
}
