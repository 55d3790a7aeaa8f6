//! svc-swap: stop a service, edit its launch flags, restart it and prove the
//! edit took, locally, through a command prefix (`pct exec 129 --`,
//! `nsenter ...`) or over SSH. Writes one swap record (or failure record).

pub mod cli;
pub mod diff;
pub mod execstart;
pub mod far;
pub mod flags;
pub mod process;
pub mod ready;
pub mod settle;
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
use sweepkit::records::{failure, FailureKind, Record, Stage};
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
        let kind = FailureKind::SwapFailed;
        let mut rec = failure(TOOL, started, f.config, Stage::Swap, kind, reason, upstream);
        // SSH connect, authentication or a lost session: a later try may
        // well work, so a sweep retries it rather than record a result.
        if f.exit.code == exit::TRANSPORT_ERROR {
            rec.class = Some(sweepkit::records::FailureClass::Transport);
        }
        rec.exit_code = Some(i32::from(f.exit.code));
        rec.log_tail = f.log_tail;
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
        swap::Failed {
            exit,
            config,
            log_tail: Vec::new(),
        }
    };
    let transport = match make_transport(&args) {
        Ok(t) => t,
        Err(e) => return fail_out(&mut stdout, early(e), upstream),
    };
    let t: &dyn Transport = transport.as_ref();
    let loaded: Result<Box<dyn target::Target>, Exit> = match manager {
        Manager::Systemd => systemd::Systemd::load(t, args.unit.as_deref().unwrap_or_default())
            .map(|s| Box::new(s) as Box<dyn target::Target>),
        Manager::Process => process::Process::load(t, args.spec.as_deref().unwrap_or_default())
            .map(|s| Box::new(s) as Box<dyn target::Target>),
    };
    let mut target = match loaded {
        Ok(x) => x,
        Err(e) => return fail_out(&mut stdout, early(e), upstream),
    };
    match swap::run(t, target.as_mut(), &req, started, upstream.clone()) {
        Ok(rec) => {
            sweepkit::report::info(
                TOOL,
                format!(
                    "{} {}: {} (stop: {})",
                    rec.method,
                    rec.target.unit,
                    if rec.changes.is_empty() {
                        "no flag changes".into()
                    } else {
                        swap::describe(&rec.changes)
                    },
                    if rec.stop.result.is_empty() {
                        "-"
                    } else {
                        &rec.stop.result
                    },
                ),
            );
            write_record(&mut stdout, &Record::Swap(rec))?;
            Ok(())
        }
        Err(f) => fail_out(&mut stdout, f, upstream),
    }
}

fn make_transport(args: &Args) -> Result<Box<dyn Transport>, Exit> {
    args.transport
        .open()
        .map_err(|e| Exit::new(exit::TRANSPORT_ERROR, anyhow::anyhow!("{e}")))
}

trait ContextCode<T> {
    fn with_context_code(self, what: &str, code: u8) -> Result<T, Exit>;
}

impl<T> ContextCode<T> for std::io::Result<T> {
    fn with_context_code(self, what: &str, code: u8) -> Result<T, Exit> {
        self.map_err(|e| Exit::new(code, anyhow::anyhow!("{what}: {e}")))
    }
}
