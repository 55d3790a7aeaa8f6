//! svc-swap: stop a service, edit its launch flags, restart it and prove the
//! edit took, locally, through a command prefix (`pct exec 129 --`,
//! `nsenter ...`) or over SSH. Writes one swap record (or failure record).

pub mod apply;
pub mod cli;
pub mod compose;
pub mod container;
pub mod diff;
pub mod draft;
pub mod edit;
pub mod execstart;
pub mod far_files;
pub mod far_side;
pub mod flags;
mod fold;
pub mod job;
pub mod preflight;
pub mod preflight_schedule;
pub mod process;
pub mod process_spec;
pub mod ready;
pub mod request;
pub mod schedule;
pub mod show;
mod spec_layout;
pub mod swap;
pub mod systemd;
pub mod target;
pub mod template_unit;
pub mod unitfile;

use std::io::{BufRead, Write};
use std::time::SystemTime;

use serde_json::Value;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::io::write_record;
use sweepkit::records::{failure, FailureKind, Record, Stage, StopResult, SwapRecord};
use sweepkit::transport::Transport;

use cli::TOOL;
pub use cli::{Args, Manager};

/// Run svc-swap with the given streams.
pub fn run(mut args: Args, stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    let started = SystemTime::now();
    let manager = args.manager()?;
    args.resolve_spec()?;
    // --ssh-key and friends no longer require --ssh at parse time (a later
    // stage takes the destination from the record); here nothing does.
    args.transport
        .clone()
        .fill_from(None)
        .map_err(|e| Exit::new(exit::USAGE, anyhow::anyhow!(e)))?;
    let file_dir = far_files::dir(&args, manager)?;
    let edits = apply::edits(&args, &file_dir, stdin, &mut stdout)?;
    if !edits.files.is_empty() && manager == Manager::Container && args.file_dir.is_none() {
        return Err(Exit::new(
            exit::USAGE,
            anyhow::anyhow!(
                "--container: give --file-dir DIR, a directory inside the container \
                 that one of its bind mounts holds (the file is written to the mount's \
                 host side)"
            ),
        ));
    }
    let s = Session {
        req: args.request(edits.ops),
        args: &args,
        manager,
        started,
        upstream: edits.upstream,
        files: edits.files,
        file_dir,
    };
    let transport = match make_transport(&args) {
        Ok(t) => t,
        Err(e) => return s.fail_out(&mut stdout, s.early(e)),
    };
    let t: &dyn Transport = transport.as_ref();
    let mut target = match s.load(t) {
        Ok(x) => x,
        Err(e) => return s.fail_out(&mut stdout, s.early(e)),
    };
    let dir = target.state_dir();
    let outcome = s.attempt(t, &mut target);
    let id = match &outcome {
        Ok(r) => r.swap_id.clone(),
        Err(f) => f.swap_id.clone(),
    };
    let res = match outcome {
        Ok(rec) => write_swap(&args, &mut stdout, rec),
        Err(f) => s.fail_out(&mut stdout, f),
    };
    // Only once the record is out: until then a reattach can still tell.
    if let Some(id) = id {
        job::cleanup(t, &dir, &id);
    }
    res
}

/// One run: the request and what its failure record must keep.
struct Session<'a> {
    args: &'a Args,
    manager: Manager,
    req: request::Request,
    started: SystemTime,
    upstream: Option<Value>,
    /// Files to copy to the far side before the stop (`far_files.rs`).
    files: Vec<far_files::FileFlag>,
    file_dir: String,
}

impl Session<'_> {
    /// Read the service (unit or spec file) through `t`, once no job of an
    /// earlier run is at work on it (svc-swap(1): the next run waits).
    fn load<'t>(&self, t: &'t dyn Transport) -> Result<Box<dyn target::Target + 't>, Exit> {
        let a = self.args;
        let limit = self.req.opts.job_limit();
        let settled = |dir: &str| job::await_idle(t, &job::glob_literal(dir), limit);
        Ok(match self.manager {
            Manager::Systemd => {
                let unit = systemd::unit_name(a.unit.as_deref().unwrap_or_default());
                settled(&systemd::state_dir(&unit))?;
                Box::new(systemd::Systemd::load(t, &unit)?)
            }
            Manager::Process => {
                let spec = a.spec.as_deref().unwrap_or_default();
                settled(&process::state_dir(spec))?;
                Box::new(process::Process::load(t, spec)?)
            }
            Manager::Container => {
                let name = a.container.as_deref().unwrap_or_default();
                container::check_name(name)?;
                let engine = container::engine::pick(t, a.engine)?;
                settled(&container::state_dir(engine, name))?;
                Box::new(container::Container::load(t, name, engine)?)
            }
            Manager::Compose => {
                // The project is read from the service's container: any
                // project's job on a service of this name is waited for.
                let service = a.service.as_deref().unwrap_or_default();
                let dirs = format!(
                    "/run/sweepkit-swap/compose-*-{}",
                    job::glob_literal(service)
                );
                job::await_idle(t, &dirs, limit)?;
                Box::new(compose::Compose::load(
                    t,
                    a.compose.as_deref().unwrap_or_default(),
                    service,
                    a.engine,
                )?)
            }
        })
    }

    /// Reattach to a job, or settle earlier jobs, pass pre-flight and swap.
    fn attempt<'t>(
        &self,
        t: &'t dyn Transport,
        target: &mut Box<dyn target::Target + 't>,
    ) -> Result<SwapRecord, request::Failed> {
        if let Some(id) = &self.args.reattach {
            return swap::reattach(t, target.as_mut(), &self.req, id, false);
        }
        // A job an earlier run lost track of must end before this one
        // starts: two jobs on one service would undo each other.
        let earlier = settle_earlier(t, target.as_mut(), &self.req).map_err(|e| self.early(e))?;
        if !earlier.is_empty() {
            *target = self.load(t).map_err(|e| self.early(e))?;
        }
        // Before anything is written or stopped: a config SGLang would
        // refuse after its model load is refused here, and the old server
        // keeps running.
        let read = |p: &str| self.adaptive_config_text(t, p);
        let notes = preflight_gate(self.args, &self.req, target.current(), &read)?;
        // The copies and their checks, still before the stop: a mismatch
        // leaves the running server as it was.
        let files = if self.req.dry_run {
            let d = &self.file_dir;
            self.files.iter().map(|f| f.record(d)).collect()
        } else if self.manager == Manager::Container && !self.files.is_empty() {
            let name = self.args.container.as_deref().unwrap_or_default();
            far_files::inspect_raw(t, self.args.engine, name)
                .and_then(|raw| {
                    far_files::upload_container(t, &self.files, &self.file_dir, &raw, name)
                })
                .map_err(|e| {
                    let mut f = self.early(e);
                    f.running = Some("old");
                    f
                })?
        } else {
            far_files::upload(t, &self.files, &self.file_dir).map_err(|e| {
                let mut f = self.early(e);
                f.running = Some("old");
                f
            })?
        };
        let up = self.upstream.clone();
        let mut r = swap::run(t, target.as_mut(), &self.req, self.started, up)?;
        r.warnings.extend(earlier);
        r.preflight = notes;
        r.files = files;
        Ok(r)
    }

    /// The text of the adaptive config at far path `p`, for pre-flight: the
    /// bytes of a file this run copies there, else the far file itself
    /// (`None`: not checked, with the reason; a container's own paths are
    /// not the host's).
    fn adaptive_config_text(&self, t: &dyn Transport, p: &str) -> Result<ConfigText, Exit> {
        if let Some(f) = self.files.iter().find(|f| f.far_path(&self.file_dir) == p) {
            return Ok(ConfigText::Text(
                String::from_utf8_lossy(&f.bytes).into_owned(),
            ));
        }
        if !p.starts_with('/') || self.manager == Manager::Container {
            return Ok(ConfigText::Unchecked(format!(
                "--speculative-adaptive-config {p} was not checked (a path the server \
                 resolves itself: relative, or inside the container)"
            )));
        }
        match far_side::read_file(t, p)? {
            Some(text) => Ok(ConfigText::Text(text)),
            None => Err(Exit::new(
                exit::PREFLIGHT_REJECTED,
                anyhow::anyhow!(
                    "pre-flight: SGLang refuses at start-up: FileNotFoundError: [Errno 2] No \
                     such file or directory: '{p}' (on {}); nothing was stopped",
                    t.describe()
                ),
            )),
        }
    }

    /// A failure before the target is read: the config is what the edits
    /// ask for.
    fn early(&self, exit: Exit) -> request::Failed {
        let any = execstart::ExecLine {
            prefix: String::new(),
            words: vec!["x".into()],
        };
        let config = edit::apply(&any, &self.req.ops).config;
        request::fail(exit, &config)
    }

    /// Write the failure record, then end with its exit code.
    fn fail_out(&self, stdout: &mut dyn Write, f: request::Failed) -> Result<(), Exit> {
        let reason = f
            .exit
            .error
            .as_ref()
            .map_or("failed".into(), |e| format!("{e:#}"));
        let kind = if f.exit.code == exit::PREFLIGHT_REJECTED {
            FailureKind::PreflightRejected
        } else {
            FailureKind::SwapFailed
        };
        let up = self.upstream.clone();
        let mut rec = failure(TOOL, self.started, f.config, Stage::Swap, kind, reason, up);
        // SSH connect, authentication or a lost session, a container
        // engine that does not answer: a later try may well work, so a
        // sweep retries it rather than record a result.
        if exit::is_transient(f.exit.code) {
            rec.class = Some(sweepkit::records::FailureClass::Transport);
        }
        rec.exit_code = Some(i32::from(f.exit.code));
        rec.log_tail = f.log_tail;
        rec.running = f.running.map(String::from);
        rec.swap_id = f.swap_id;
        write_record(stdout, &Record::Failure(rec))?;
        Err(f.exit)
    }
}

fn write_swap(args: &Args, stdout: &mut dyn Write, mut rec: SwapRecord) -> Result<(), Exit> {
    // swap::run already described the transport into the target (before
    // the ready command ran); a reattach's record carries it from then.
    rec.target.port = args.port.or(rec.target.port);
    // The record was drafted before the stop and start ran: it is finished
    // now, after `start.started_at` (issue 21: finished_at came 2 s before).
    rec.provenance.finished_at = sweepkit::time::rfc3339(SystemTime::now());
    let what = if rec.noop {
        "already running the requested config; not restarted".to_string()
    } else if rec.changes.is_empty() {
        "no flag changes".into()
    } else {
        swap::describe(&rec.changes)
    };
    let stop = match &rec.stop.result {
        StopResult::NotStopped => "-".to_string(),
        r => r.to_string(),
    };
    sweepkit::diag::info(
        TOOL,
        format!("{} {}: {what} (stop: {stop})", rec.method, rec.target.unit),
    );
    write_record(stdout, &Record::Swap(rec))?;
    Ok(())
}

/// Follow jobs earlier runs left unreported; say how each ended.
fn settle_earlier(
    t: &dyn Transport,
    target: &mut dyn target::Target,
    req: &request::Request,
) -> Result<Vec<String>, Exit> {
    let dir = target.state_dir();
    let mut said = Vec::new();
    for id in job::unreported(t, &dir)? {
        let line = match swap::reattach(t, target, req, &id, true) {
            Ok(r) => format!(
                "an earlier swap (job {id}) ended with the new config running: {}",
                swap::describe(&r.changes)
            ),
            Err(f) => format!(
                "an earlier swap (job {id}) ended with {} config running: {}",
                f.running.unwrap_or("an unknown"),
                f.exit.error.map_or(String::new(), |e| format!("{e:#}"))
            ),
        };
        sweepkit::diag::warning(TOOL, &line);
        said.push(line);
        job::cleanup(t, &dir, &id);
    }
    Ok(said)
}

/// The adaptive config as pre-flight gets it.
enum ConfigText {
    Text(String),
    /// Not checked, and why (a note).
    Unchecked(String),
}

/// How pre-flight gets the adaptive config's text.
type ReadConfig<'a> = dyn Fn(&str) -> Result<ConfigText, Exit> + 'a;

/// Check the edited command line with `preflight` (SGLang, or llm-sim as
/// SGLang) and `preflight_schedule` (both servers' schedules); the notes
/// go to stderr now and into the swap record.
fn preflight_gate(
    args: &Args,
    req: &request::Request,
    cur: &execstart::ExecLine,
    read: &ReadConfig,
) -> Result<Vec<String>, request::Failed> {
    if args.no_preflight || req.restore {
        return Ok(Vec::new());
    }
    let edited = edit::apply(cur, &req.ops);
    let reject = |reason: String| {
        let mut f = request::fail(
            Exit::new(
                exit::PREFLIGHT_REJECTED,
                anyhow::anyhow!("pre-flight: {reason}; nothing was stopped"),
            ),
            &edited.config,
        );
        f.running = Some("old");
        f
    };
    let mut argv = edited.line.logical_argv();
    let mut notes = Vec::new();
    if preflight_schedule::is_vllm(&argv) {
        notes = preflight_schedule::check_vllm(&argv).map_err(|e| reject(e.to_string()))?;
    } else if preflight::is_sglang(&argv) {
        let adaptive = argv.iter().any(|w| w == "--speculative-adaptive");
        let path = preflight_schedule::value(&argv, &["--speculative-adaptive-config"]);
        let text = match path.filter(|_| adaptive) {
            None => Some(None),
            Some(p) => match read(&p) {
                Ok(ConfigText::Text(t)) => Some(Some(t)),
                Ok(ConfigText::Unchecked(why)) => {
                    notes.push(why);
                    None
                }
                Err(e) => {
                    let mut f = request::fail(e, &edited.config);
                    f.running = Some("old");
                    return Err(f);
                }
            },
        };
        if let Some(text) = text {
            let a = preflight_schedule::check_sglang(&argv, text.as_deref())
                .map_err(|e| reject(e.to_string()))?;
            argv.extend(a.implied);
            notes.extend(a.notes);
        }
        let findings =
            preflight::check_for_load(&argv, args.max_load).map_err(|e| reject(e.to_string()))?;
        notes.extend(findings.notes);
    }
    if !args.quiet_preflight {
        for n in &notes {
            sweepkit::diag::warning(TOOL, format!("pre-flight: {n}"));
        }
    }
    Ok(notes)
}

/// The transport svc-swap runs through. Over SSH, transient faults are
/// retried by the transport itself within `--ssh-retry` (the one retry
/// layer, shared with wait-ready); svc-swap marks every far-side command
/// it runs as safe to repeat (far_side.rs says why each one is).
fn make_transport(args: &Args) -> Result<Box<dyn Transport>, Exit> {
    args.transport
        .open()
        .map_err(|e| Exit::new(e.exit_code(), anyhow::anyhow!("{e}")))
}
