//! svc-swap: stop a service, edit its launch flags, restart it and prove the
//! edit took, locally, through a command prefix (`pct exec 129 --`,
//! `nsenter ...`) or over SSH. Writes one swap record (or failure record).

pub mod apply;
pub mod cli;
pub mod compose;
pub mod container;
pub mod diff;
pub mod draft;
pub mod execstart;
pub mod far;
pub mod flags;
pub mod job;
pub mod preflight;
pub mod process;
pub mod ready;
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
use sweepkit::io::write_record;
use sweepkit::records::{failure, FailureKind, Record, Stage, SwapRecord};
use sweepkit::report::Exit;
use sweepkit::transport::Transport;

pub use cli::{Args, Manager};

pub(crate) const TOOL: &str = "svc-swap";

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
    let (ops, upstream) = apply::edits(&args, stdin, &mut stdout)?;
    let s = Session {
        req: args.request(ops),
        args: &args,
        manager,
        started,
        upstream,
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
    req: swap::Request,
    started: SystemTime,
    upstream: Option<Value>,
}

impl Session<'_> {
    /// Read the service (unit or spec file) through `t`.
    fn load<'t>(&self, t: &'t dyn Transport) -> Result<Box<dyn target::Target + 't>, Exit> {
        let a = self.args;
        Ok(match self.manager {
            Manager::Systemd => Box::new(systemd::Systemd::load(
                t,
                a.unit.as_deref().unwrap_or_default(),
            )?),
            Manager::Process => Box::new(process::Process::load(
                t,
                a.spec.as_deref().unwrap_or_default(),
            )?),
            Manager::Container => Box::new(container::Container::load(
                t,
                a.container.as_deref().unwrap_or_default(),
                a.engine,
            )?),
            Manager::Compose => Box::new(compose::Compose::load(
                t,
                a.compose.as_deref().unwrap_or_default(),
                a.service.as_deref().unwrap_or_default(),
                a.engine,
            )?),
        })
    }

    /// Reattach to a job, or settle earlier jobs, pass pre-flight and swap.
    fn attempt<'t>(
        &self,
        t: &'t dyn Transport,
        target: &mut Box<dyn target::Target + 't>,
    ) -> Result<SwapRecord, swap::Failed> {
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
        let notes = preflight_gate(self.args, &self.req, target.current())?;
        let up = self.upstream.clone();
        let mut r = swap::run(t, target.as_mut(), &self.req, self.started, up)?;
        r.warnings.extend(earlier);
        r.preflight = notes;
        Ok(r)
    }

    /// A failure before the target is read: the config is what the edits
    /// ask for.
    fn early(&self, exit: Exit) -> swap::Failed {
        let any = execstart::ExecLine {
            prefix: String::new(),
            words: vec!["x".into()],
        };
        let config = flags::apply(&any, &self.req.ops).config;
        swap::fail(exit, &config)
    }

    /// Write the failure record, then end with its exit code.
    fn fail_out(&self, stdout: &mut dyn Write, f: swap::Failed) -> Result<(), Exit> {
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

/// The transport svc-swap runs through. Over SSH, transient faults are
/// retried by the transport itself within `--ssh-retry` (the one retry
/// layer, shared with wait-ready); svc-swap marks every far-side command
/// it runs as safe to repeat (far.rs says why each one is).
fn make_transport(args: &Args) -> Result<Box<dyn Transport>, Exit> {
    args.transport
        .open()
        .map_err(|e| Exit::new(e.exit_code(), anyhow::anyhow!("{e}")))
}
