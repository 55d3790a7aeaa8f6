//! The swap itself, written once for every manager: plan the file change,
//! write it (backup first), reload, verify, stop, start, run the ready
//! command, and undo the change on the way out of any failure.

use std::time::SystemTime;

use serde_json::Value;
use sweepkit::exit;
use sweepkit::records::{Change, Config, StartInfo, StopInfo, SwapRecord, SCHEMA_VERSION};
use sweepkit::report::Exit;
use sweepkit::transport::Transport;

use crate::flags::{self, Op};
use crate::target::{Opts, Plan, Target};
use crate::{diff, far, ready};

/// What the caller asked for.
pub struct Request {
    pub ops: Vec<Op>,
    pub restore: bool,
    pub in_place: bool,
    pub dry_run: bool,
    pub opts: Opts,
    pub ready_cmd: Option<String>,
    pub ready_timeout: std::time::Duration,
    pub rollback_on_fail: bool,
    /// How the far side is reached: recorded in `target` (and so in the
    /// record the ready command reads) and given to it as SWEEPKIT_*.
    pub transport: sweepkit::transport_args::TransportArgs,
}

/// A failed swap: the exit, plus what the failure record needs.
pub struct Failed {
    pub exit: Exit,
    pub config: Config,
    pub log_tail: Vec<String>,
}

fn fail(exit: Exit, config: &Config) -> Failed {
    Failed {
        exit,
        config: config.clone(),
        log_tail: Vec::new(),
    }
}

/// `PATH.sweepkit-bak.20261130T050102.345Z`: sorts by time.
fn backup_path(path: &str) -> String {
    let stamp: String = sweepkit::time::rfc3339(SystemTime::now())
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{path}.sweepkit-bak.{stamp}")
}

/// Write the plan; returns the backup made, if any.
fn write(t: &dyn Transport, plan: &Plan) -> Result<Option<String>, Exit> {
    let mut backup = None;
    if let (Some(old), None) = (&plan.old, &plan.restores) {
        let b = backup_path(&plan.path);
        far::write_file(t, &b, old)?;
        backup = Some(b);
    }
    match &plan.new {
        Some(text) => far::write_file(t, &plan.path, text)?,
        None => far::remove(t, &plan.path)?,
    }
    Ok(backup)
}

/// Put the file back as it was before `write`.
fn undo(
    t: &dyn Transport,
    target: &mut dyn Target,
    plan: &Plan,
    backup: &Option<String>,
) -> Result<(), Exit> {
    match &plan.old {
        Some(text) => far::write_file(t, &plan.path, text)?,
        None => far::remove(t, &plan.path)?,
    }
    if let Some(b) = backup {
        far::remove(t, b)?;
    }
    target.reload()
}

pub fn run(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    started: SystemTime,
    upstream: Option<Value>,
) -> Result<SwapRecord, Failed> {
    let cur = target.current().clone();
    let (plan, changes, config, warnings) = if req.restore {
        let plan = target
            .plan_restore(req.in_place)
            .map_err(|e| fail(e, &Config::new()))?;
        let changes = flags::diff(&cur, &plan.line);
        let config = flags::config_of(&plan.line, &changes);
        (plan, changes, config, Vec::new())
    } else {
        let e = flags::apply(&cur, &req.ops);
        let plan = target
            .plan_edit(&e.line, req.in_place)
            .map_err(|x| fail(x, &e.config))?;
        (plan, e.changes, e.config, e.warnings)
    };
    for w in &warnings {
        sweepkit::report::warning("svc-swap", w);
    }
    let mut rec = SwapRecord {
        schema: SCHEMA_VERSION,
        config: config.clone(),
        provenance: sweepkit::records::Provenance::new("svc-swap", started),
        target: target.info(),
        changes,
        exec_start: plan.line.logical_argv(),
        stop: StopInfo::default(),
        start: StartInfo::default(),
        method: if req.restore {
            "restore".into()
        } else {
            plan.method.into()
        },
        path: Some(plan.path.clone()),
        backup: None,
        warnings,
        upstream,
    };
    req.transport.describe_into(&mut rec.target);
    rec.target.port = req.opts.port.or(rec.target.port);
    // Nothing to write (no edits, or edits that change nothing): a plain
    // verified restart, without a drop-in that repeats the unit's line.
    let unchanged = plan.old == plan.new || (!req.restore && plan.line == cur);
    if req.dry_run {
        let old = plan.old.as_deref().unwrap_or("");
        let new = plan.new.as_deref().unwrap_or("");
        let from = if plan.old.is_some() {
            plan.path.as_str()
        } else {
            "/dev/null"
        };
        let to = if plan.new.is_some() {
            plan.path.as_str()
        } else {
            "/dev/null"
        };
        eprint!("{}", diff::unified(old, new, from, to));
        rec.method = "dry-run".into();
        return Ok(rec);
    }
    let backup = if unchanged {
        rec.path = None;
        None
    } else {
        let b = write(t, &plan).map_err(|e| fail(e, &config))?;
        target.reload().map_err(|e| fail(e, &config))?;
        if let Err(e) = target.verify(&plan.line) {
            let _ = undo(t, target, &plan, &b);
            return Err(fail(e, &config));
        }
        b
    };
    rec.backup = backup.clone();
    let undo_all = |target: &mut dyn Target| {
        if unchanged {
            Ok(())
        } else {
            undo(t, target, &plan, &backup)
        }
    };
    rec.stop = match target.stop(&req.opts) {
        Ok(s) => s,
        Err(e) => {
            let _ = undo_all(target);
            return Err(fail(e, &config));
        }
    };
    let started_ok = target.start(&req.opts, &plan.line).and_then(|s| {
        rec.start = s;
        let Some(cmd) = &req.ready_cmd else {
            return Ok(());
        };
        run_ready(cmd, target, req, &rec)
    });
    if let Err(e) = started_ok {
        let log_tail = target.log_tail();
        let e = if req.rollback_on_fail && !unchanged {
            rollback(target, req, (&plan, &rec), &cur, e, &undo_all)
        } else {
            e
        };
        return Err(Failed {
            exit: e,
            config,
            log_tail,
        });
    }
    if let Some(b) = &plan.restores {
        far::remove(t, b).map_err(|e| fail(e, &config))?;
    }
    Ok(rec)
}

/// Run `--ready-cmd` with `rec` on its stdin and the instance and transport
/// in its environment, so `wait-ready URL` alone works on every topology.
fn run_ready(cmd: &str, target: &dyn Target, req: &Request, rec: &SwapRecord) -> Result<(), Exit> {
    let line =
        serde_json::to_vec(&sweepkit::records::Record::Swap(rec.clone())).unwrap_or_default();
    let mut env = target.ready_env();
    env.extend(ready::context_env(&rec.target));
    ready::run(
        cmd,
        &env,
        &[line, b"\n".to_vec()].concat(),
        req.ready_timeout,
    )
    .map_err(|m| Exit::new(exit::START_FAILED, anyhow::anyhow!(m)))
}

/// The record of a rollback: the changes undone, the old values as config.
fn rollback_record(rec: &SwapRecord, start: StartInfo) -> SwapRecord {
    let mut r = rec.clone();
    r.changes = rec
        .changes
        .iter()
        .map(|c| Change {
            flag: c.flag.clone(),
            old: c.new.clone(),
            new: c.old.clone(),
        })
        .collect();
    r.config = rec
        .changes
        .iter()
        .filter_map(|c| Some((c.flag.trim_start_matches('-').to_string(), c.old.clone()?)))
        .collect();
    r.method = "rollback".into();
    r.start = start;
    r
}

/// Restore the old config, restart it and, with a ready command, check it
/// is ready again by the same rule; exit 25 when all that worked.
fn rollback(
    target: &mut dyn Target,
    req: &Request,
    (plan, rec): (&Plan, &SwapRecord),
    old: &crate::execstart::ExecLine,
    why: Exit,
    undo_all: &dyn Fn(&mut dyn Target) -> Result<(), Exit>,
) -> Exit {
    let why_text = why
        .error
        .as_ref()
        .map_or(String::new(), |e| format!("{e:#}"));
    let res = undo_all(target)
        .and_then(|_| target.stop(&req.opts))
        .and_then(|_| target.start(&req.opts, old))
        .and_then(|s| match &req.ready_cmd {
            Some(cmd) => run_ready(cmd, target, req, &rollback_record(rec, s)).map_err(|e| {
                let m = e.error.map_or(String::new(), |e| format!("{e:#}"));
                Exit::new(
                    exit::START_FAILED,
                    anyhow::anyhow!("the old config restarted but is not ready: {m}"),
                )
            }),
            None => Ok(()),
        });
    match res {
        Ok(_) => Exit::new(
            exit::ROLLED_BACK,
            anyhow::anyhow!(
                "{why_text}; rolled back: {} restored and restarted",
                plan.path
            ),
        ),
        Err(e) => Exit::new(
            exit::START_FAILED,
            anyhow::anyhow!(
                "{why_text}; rollback failed too: {}",
                e.error.map_or(String::new(), |e| format!("{e:#}"))
            ),
        ),
    }
}

/// The changes as `flag: old -> new` for the human line on stderr.
pub fn describe(changes: &[Change]) -> String {
    let v = |o: &Option<String>| {
        o.clone().map_or("(absent)".into(), |s| {
            if s.is_empty() {
                "(switch)".into()
            } else {
                s
            }
        })
    };
    changes
        .iter()
        .map(|c| format!("{}: {} -> {}", c.flag, v(&c.old), v(&c.new)))
        .collect::<Vec<_>>()
        .join(", ")
}
