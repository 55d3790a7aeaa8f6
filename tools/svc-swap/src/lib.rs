//! svc-swap: stop a service, edit its launch flags, restart it and prove the
//! edit took, locally, through a command prefix (`pct exec 129 --`,
//! `nsenter ...`) or over SSH. Writes one swap record (or failure record).

pub mod cli;
pub mod diff;
pub mod execstart;
pub mod far;
pub mod flags;
pub mod job;
pub mod preflight;
pub mod process;
pub mod ready;
pub mod retry;
pub mod show;
pub mod spec;
pub mod swap;
pub mod systemd;
pub mod target;
pub mod unitfile;

use std::io::{BufRead, Write};
use std::time::SystemTime;

use serde_json::Value;

use sweepkit::exit;
use sweepkit::io::{write_record, RecordReader};
use sweepkit::records::{failure, FailureKind, Record, Stage, SwapRecord};
use sweepkit::report::{Exit, WithCode};
use sweepkit::transport::Transport;

pub use cli::{Args, Manager};
use flags::Op;

const TOOL: &str = "svc-swap";

/// Run svc-swap with the given streams.
pub fn run(args: Args, stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    let started = SystemTime::now();
    let manager = args.manager()?;
    // --ssh-key and friends no longer require --ssh at parse time (a later
    // stage takes the destination from the record); here nothing does.
    args.transport
        .clone()
        .fill_from(None)
        .map_err(|e| Exit::new(exit::USAGE, anyhow::anyhow!(e)))?;
    // --apply-from: the config of an upstream record becomes --set edits.
    let mut ops = Vec::new();
    let mut upstream = None;
    if let Some(src) = &args.apply_from {
        let reader: Box<dyn BufRead> = if src == "-" {
            Box::new(stdin)
        } else {
            Box::new(std::io::BufReader::new(
                std::fs::File::open(src).with_context_code(src, exit::BAD_INPUT)?,
            ))
        };
        let name = if src == "-" { "<stdin>" } else { src.as_str() };
        let (rec, raw) = RecordReader::new(reader, name)
            .read_one("a record with a config")
            .code(exit::BAD_INPUT)?;
        if let Record::Failure(_) = rec {
            write_record(&mut stdout, &rec)?;
            return Err(Exit::new(
                exit::UPSTREAM_FAILED,
                anyhow::anyhow!("{name}: upstream record is a failure; passed through"),
            ));
        }
        for (k, v) in rec.config() {
            let op = Op::parse_set(&format!("{k}={v}")).map_err(|e| {
                Exit::new(exit::BAD_INPUT, anyhow::anyhow!("{name}: config key {e}"))
            })?;
            ops.push(op);
        }
        // A summary's pick may leave keys unset (speculation off drops
        // --speculative-algorithm): remove them, or the old value lingers.
        if let Record::Summary(s) = &rec {
            for k in &s.best_unset {
                ops.push(Op::parse_unset(k).map_err(|e| {
                    Exit::new(exit::BAD_INPUT, anyhow::anyhow!("{name}: best_unset {e}"))
                })?);
            }
        }
        // A sweep's origin record: flags absent originally are removed.
        if let Record::Origin(o) = &rec {
            for k in &o.unset {
                ops.push(Op::parse_unset(k).map_err(|e| {
                    Exit::new(exit::BAD_INPUT, anyhow::anyhow!("{name}: unset {e}"))
                })?);
            }
        }
        if ops.is_empty() {
            return Err(Exit::new(
                exit::BAD_INPUT,
                anyhow::anyhow!("{name}: the record's config is empty"),
            ));
        }
        upstream = Some(raw);
    }
    for s in &args.set {
        ops.push(
            Op::parse_set(s).map_err(|e| Exit::new(exit::USAGE, anyhow::anyhow!("--set {e}")))?,
        );
    }
    for s in &args.unset {
        ops.push(
            Op::parse_unset(s)
                .map_err(|e| Exit::new(exit::USAGE, anyhow::anyhow!("--unset {e}")))?,
        );
    }
    let req = args.request(ops);
    let fail_out = |stdout: &mut dyn Write, f: swap::Failed, upstream: Option<Value>| {
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
        let mut rec = failure(TOOL, started, f.config, Stage::Swap, kind, reason, upstream);
        // SSH connect, authentication or a lost session: a later try may
        // well work, so a sweep retries it rather than record a result.
        if f.exit.code == exit::TRANSPORT_ERROR {
            rec.class = Some(sweepkit::records::FailureClass::Transport);
        }
        rec.exit_code = Some(i32::from(f.exit.code));
        rec.log_tail = f.log_tail;
        rec.running = f.running.map(String::from);
        rec.swap_id = f.swap_id;
        write_record(stdout, &Record::Failure(rec))?;
        Err::<(), Exit>(f.exit)
    };
    // Before the target is read, the config is what the edits ask for.
    let early = |exit: Exit| {
        let any = execstart::ExecLine {
            prefix: String::new(),
            words: vec!["x".into()],
        };
        let config = flags::apply(&any, &req.ops).config;
        swap::fail(exit, &config)
    };
    let transport = match make_transport(&args) {
        Ok(t) => t,
        Err(e) => return fail_out(&mut stdout, early(e), upstream),
    };
    let t: &dyn Transport = transport.as_ref();
    let load = || -> Result<Box<dyn target::Target + '_>, Exit> {
        Ok(match manager {
            Manager::Systemd => Box::new(systemd::Systemd::load(
                t,
                args.unit.as_deref().unwrap_or_default(),
            )?),
            Manager::Process => Box::new(process::Process::load(
                t,
                args.spec.as_deref().unwrap_or_default(),
            )?),
        })
    };
    let mut target = match load() {
        Ok(x) => x,
        Err(e) => return fail_out(&mut stdout, early(e), upstream),
    };
    let dir = target.state_dir();
    let outcome = if let Some(id) = &args.reattach {
        swap::reattach(t, target.as_mut(), &req, id, false)
    } else {
        // A job an earlier run lost track of must end before this one
        // starts: two jobs on one service would undo each other.
        let earlier = match settle_earlier(t, target.as_mut(), &req) {
            Ok(w) => w,
            Err(e) => return fail_out(&mut stdout, early(e), upstream),
        };
        if !earlier.is_empty() {
            target = match load() {
                Ok(x) => x,
                Err(e) => return fail_out(&mut stdout, early(e), upstream),
            };
        }
        // Before anything is written or stopped: a config SGLang would
        // refuse after its model load is refused here, and the old server
        // keeps running.
        let notes = match preflight_gate(&args, &req, target.current()) {
            Ok(n) => n,
            Err(f) => return fail_out(&mut stdout, f, upstream),
        };
        swap::run(t, target.as_mut(), &req, started, upstream.clone()).map(|mut r| {
            r.warnings.extend(earlier);
            r.preflight = notes;
            r
        })
    };
    let id = match &outcome {
        Ok(r) => r.swap_id.clone(),
        Err(f) => f.swap_id.clone(),
    };
    let res = match outcome {
        Ok(rec) => write_swap(&args, &mut stdout, rec),
        Err(f) => fail_out(&mut stdout, f, upstream),
    };
    // Only once the record is out: until then a reattach can still tell.
    if let Some(id) = id {
        job::cleanup(t, &dir, &id);
    }
    res
}

fn write_swap(args: &Args, stdout: &mut dyn Write, mut rec: SwapRecord) -> Result<(), Exit> {
    // swap::run already described the transport into the target (before
    // the ready command ran); a reattach's record carries it from then.
    rec.target.port = args.port.or(rec.target.port);
    let what = if rec.noop {
        "already running the requested config; not restarted".to_string()
    } else if rec.changes.is_empty() {
        "no flag changes".into()
    } else {
        swap::describe(&rec.changes)
    };
    let stop = if rec.stop.result.is_empty() {
        "-"
    } else {
        &rec.stop.result
    };
    sweepkit::report::info(
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
    req: &swap::Request,
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
        sweepkit::report::warning(TOOL, &line);
        said.push(line);
        job::cleanup(t, &dir, &id);
    }
    Ok(said)
}

/// Check the edited command line with `preflight` when it starts SGLang
/// (or llm-sim); the notes go to stderr now and into the swap record.
fn preflight_gate(
    args: &Args,
    req: &swap::Request,
    cur: &execstart::ExecLine,
) -> Result<Vec<String>, swap::Failed> {
    if args.no_preflight || req.restore {
        return Ok(Vec::new());
    }
    let edited = flags::apply(cur, &req.ops);
    let argv = edited.line.logical_argv();
    if !preflight::is_sglang(&argv) {
        return Ok(Vec::new());
    }
    match preflight::check(&argv) {
        Ok(found) => {
            for n in &found.notes {
                sweepkit::report::warning(TOOL, format!("pre-flight: {n}"));
            }
            Ok(found.notes)
        }
        Err(reason) => {
            let mut f = swap::fail(
                Exit::new(
                    exit::PREFLIGHT_REJECTED,
                    anyhow::anyhow!("pre-flight: {reason}; nothing was stopped"),
                ),
                &edited.config,
            );
            f.running = Some("old");
            Err(f)
        }
    }
}

fn make_transport(args: &Args) -> Result<Box<dyn Transport>, Exit> {
    let t = args
        .transport
        .open()
        .map_err(|e| Exit::new(e.exit_code(), anyhow::anyhow!("{e}")))?;
    if !args.transport.is_remote() {
        return Ok(t);
    }
    Ok(Box::new(retry::Retrying::new(t, retry::BUDGET)))
}

trait ContextCode<T> {
    fn with_context_code(self, what: &str, code: u8) -> Result<T, Exit>;
}

impl<T> ContextCode<T> for std::io::Result<T> {
    fn with_context_code(self, what: &str, code: u8) -> Result<T, Exit> {
        self.map_err(|e| Exit::new(code, anyhow::anyhow!("{what}: {e}")))
    }
}
