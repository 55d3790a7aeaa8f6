//! The swap itself, written once for every manager: plan the file change,
//! skip it when the live instance already runs it, hand the install,
//! reload, stop and start to a far-side job (`job.rs`) that puts the old
//! config back itself when the new one fails, verify before it stops
//! anything, run the ready command, roll back on request.

use std::time::SystemTime;

use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{Change, Config, SwapMethod, SwapRecord};
use sweepkit::transport::Transport;

use crate::draft::{backup_path, file_job, new_record, plan};
use crate::execstart::ExecLine;
use crate::request::{fail, Failed, Request};
use crate::target::{Plan, Target};
use crate::{diff, job, ready};

fn dry_run(plan: &Plan) {
    let name = |p: &Option<String>| {
        if p.is_some() {
            plan.path.as_str()
        } else {
            "/dev/null"
        }
    };
    let old = plan.old.as_deref().unwrap_or("");
    let new = plan.new.as_deref().unwrap_or("");
    let (from, to) = (name(&plan.old), name(&plan.new));
    // Each line in one write (a diff may be longer than a pipe's atomic
    // write), so another stage's lines never land inside one.
    sweepkit::diag::verbatim(&sweepkit::redact::text(&diff::unified(old, new, from, to)));
}

pub fn run(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    started: SystemTime,
    upstream: Option<Value>,
) -> Result<SwapRecord, Failed> {
    let cur = target.current().clone();
    let (plan, changes, config, warnings) = plan(target, req, &cur)?;
    for w in &warnings {
        sweepkit::diag::warning("svc-swap", w);
    }
    let parts = (changes, config.clone(), warnings);
    let mut rec = new_record(&*target, req, &plan, parts, started, upstream);
    if req.dry_run {
        dry_run(&plan);
        rec.method = SwapMethod::DryRun;
        return Ok(rec);
    }
    // Nothing to write (no edits, or edits that change nothing): a plain
    // restart, without a drop-in that repeats the unit's line; none at all
    // when the live instance already runs the line (checked against the
    // manager's ExecStart and the process's own argv).
    let unchanged = plan.old == plan.new || (!req.restore && plan.line == cur);
    if unchanged {
        rec.path = None;
        let live = target
            .live_matches(&plan.line)
            .map_err(|e| fail(e, &config))?;
        if live && !req.force_restart {
            rec.noop = true;
            ready_check(target, req, &rec).map_err(|e| fail(e, &config))?;
            return Ok(rec);
        }
    }
    launch(t, target, req, &plan, &cur, rec, unchanged)
}

/// Hand the swap to a far-side job, follow it to its end, then run the
/// ready command (rolling back on request when it fails).
fn launch(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    plan: &Plan,
    cur: &ExecLine,
    mut rec: SwapRecord,
    unchanged: bool,
) -> Result<SwapRecord, Failed> {
    let config = rec.config.clone();
    let id = job::new_id();
    let dir = target.state_dir();
    let tagged = |mut f: Failed| {
        f.swap_id = Some(id.clone());
        f
    };
    if !unchanged && plan.old.is_some() && plan.restores.is_none() {
        rec.backup = Some(backup_path(&plan.path));
    }
    let (m, stop) = target
        .job(&req.opts, &plan.line, cur)
        .map_err(|e| fail(e, &config))?;
    rec.stop = stop;
    rec.swap_id = Some(id.clone());
    let f = file_job(&*target, req, plan, unchanged, rec.backup.clone());
    let pending = job::Pending {
        record: rec,
        prefix: plan.line.prefix.clone(),
        words: plan.line.words.clone(),
        rollback: false,
    };
    job::launch(t, &dir, &id, &pending, &f, &m).map_err(|e| tagged(fail(e, &config)))?;
    sweepkit::diag::info("svc-swap", format!("swap job {id} started"));
    let base = pending.record.clone();
    let rec = match conclude(t, target, req, &dir, &id, pending, false) {
        Ok(r) => r,
        Err(f) if f.exit.code == exit::ROLLED_BACK => {
            return Err(tagged(rolled_back_ready(target, req, &base, f)))
        }
        Err(f) => return Err(tagged(f)),
    };
    ready_or_rollback(t, target, req, rec, plan, cur).map_err(tagged)
}

/// Follow job `id` to its end and turn its state into the record.
pub fn conclude(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    dir: &str,
    id: &str,
    pending: job::Pending,
    superseded: bool,
) -> Result<SwapRecord, Failed> {
    let mut rec = pending.record;
    let line = ExecLine {
        prefix: pending.prefix,
        words: pending.words,
    };
    let limit = req.opts.job_limit();
    let verdict = target.needs_verdict();
    // A job still waiting for its verdict when a later run (not --reattach)
    // finds it is called off: that run has a swap of its own to do.
    let mut verify = || {
        if superseded {
            return Err(Exit::new(
                exit::FAILURE,
                anyhow::anyhow!("superseded by a later svc-swap run"),
            ));
        }
        target.verify(&line)
    };
    let v: Option<&mut dyn FnMut() -> Result<(), Exit>> =
        if verdict { Some(&mut verify) } else { None };
    let (st, refused) = job::follow(t, dir, id, v, limit).map_err(|e| {
        let why = e.error.map_or(String::new(), |e| format!("{e:#}"));
        let e = Exit::new(
            e.code,
            anyhow::anyhow!(
                "{why}; swap job {id} goes on over there: `svc-swap --reattach {id}` says how it ended"
            ),
        );
        fail(e, &rec.config)
    })?;
    let running = st.result().unwrap_or("none");
    if running == "new" {
        let mut stop = rec.stop.clone();
        rec.start = target
            .finish(&st, &line, &mut stop)
            .map_err(|e| fail(e, &rec.config))?;
        rec.stop = stop;
        target.finish_record(&mut rec);
        return Ok(rec);
    }
    let errors = st.errors();
    let (code, what) = match (&refused, running) {
        (Some(e), _) => (e.code, "nothing stopped"),
        // Not the config's failure: a sweep tries it again (class transport).
        (None, "old") if st.has("engine_down", "1") => (
            exit::ENGINE_UNAVAILABLE,
            "the container engine did not answer for a while; the old config runs",
        ),
        (None, _) if st.has("engine_down", "1") => (
            exit::ENGINE_UNAVAILABLE,
            "the container engine did not answer; nothing runs",
        ),
        (None, "old") if st.has("phase", "starting") => (
            exit::ROLLED_BACK,
            "the far side restored the old config and restarted it",
        ),
        // A process spec whose server was down before the swap.
        (None, _) if st.has("old_down", "1") => (
            exit::ROLLED_BACK,
            "the far side restored the old config; nothing ran before this swap, so nothing was started",
        ),
        (None, "old") if st.has("phase", "stopping") => {
            (exit::STOP_FAILED, "the old config is still running")
        }
        (None, "old") => (exit::FAILURE, "nothing stopped"),
        _ => (exit::START_FAILED, "the old config failed to start too"),
    };
    let mut f = fail(
        Exit::new(code, anyhow::anyhow!("swap job {id}: {errors}; {what}")),
        &rec.config,
    );
    if st.has("phase", "starting") {
        // The job keeps the log of a new instance it had to remove (a
        // container's goes with it); else the manager's log.
        let kept: Vec<String> = st
            .kv
            .iter()
            .filter(|(k, _)| k == "log")
            .map(|(_, v)| v.clone())
            .collect();
        f.log_tail = if kept.is_empty() {
            target.log_tail()
        } else {
            kept
        };
    }
    f.running = Some(match running {
        "old" => "old",
        _ => "none",
    });
    Err(f)
}

/// `--ready-cmd` with the record on stdin; `Err` says why it failed.
fn ready_check(target: &dyn Target, req: &Request, rec: &SwapRecord) -> Result<(), Exit> {
    let Some(cmd) = &req.ready_cmd else {
        return Ok(());
    };
    // Through the one record writer, so the ready command's stdin is
    // redacted like stdout (`sweepkit::redact`).
    let mut line = Vec::new();
    let _ = sweepkit::io::write_record(&mut line, &sweepkit::records::Record::Swap(rec.clone()));
    // The instance and the transport in its environment, so `wait-ready
    // URL` alone works on every topology.
    let mut env = target.ready_env();
    env.extend(ready::context_env(&rec.target));
    ready::run(cmd, &env, &line, req.ready_timeout)
        .map_err(|m| Exit::new(exit::START_FAILED, anyhow::anyhow!(m)))
}

/// The far side put the old config back after the new one failed to start:
/// with a ready command it must be ready again by the same rule (exit 25
/// only then; 24 saying so when it is not).
fn rolled_back_ready(target: &dyn Target, req: &Request, rec: &SwapRecord, f: Failed) -> Failed {
    let Err(e) = ready_check(target, req, &rollback_record(rec, rec.clone())) else {
        return f;
    };
    let why = f
        .exit
        .error
        .as_ref()
        .map_or(String::new(), |e| format!("{e:#}"));
    let m = e.error.map_or(String::new(), |e| format!("{e:#}"));
    Failed {
        exit: Exit::new(
            exit::START_FAILED,
            anyhow::anyhow!("{why}; the old config restarted but is not ready: {m}"),
        ),
        ..f
    }
}

/// The record of a rollback: the changes undone, the old values as config.
fn rollback_record(rec: &SwapRecord, back: SwapRecord) -> SwapRecord {
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
    r.method = SwapMethod::Rollback;
    r.start = back.start;
    r.stop = back.stop;
    r.swap_id = back.swap_id;
    r
}

fn ready_or_rollback(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    rec: SwapRecord,
    plan: &Plan,
    old: &ExecLine,
) -> Result<SwapRecord, Failed> {
    let Err(e) = ready_check(target, req, &rec) else {
        return Ok(rec);
    };
    let log_tail = target.log_tail();
    let why = e.error.as_ref().map_or(String::new(), |e| format!("{e:#}"));
    let changed = rec.path.is_some();
    let (exit, running) = if req.rollback_on_fail && changed {
        // The old config back is not enough: it must be ready again by the
        // same rule as the sweep's (the ready command on a rollback record).
        let back = rollback(t, target, req, &rec, plan, old).and_then(|b| {
            ready_check(target, req, &rollback_record(&rec, b)).map_err(|e| {
                let m = e.error.map_or(String::new(), |e| format!("{e:#}"));
                let mut f = fail(
                    Exit::new(
                        exit::START_FAILED,
                        anyhow::anyhow!("the old config restarted but is not ready: {m}"),
                    ),
                    &rec.config,
                );
                f.running = Some("old");
                f
            })
        });
        match back {
            Ok(()) => (
                Exit::new(
                    exit::ROLLED_BACK,
                    anyhow::anyhow!("{why}; rolled back: {} restored and restarted", plan.path),
                ),
                "old",
            ),
            Err(f) => (
                Exit::new(
                    exit::START_FAILED,
                    anyhow::anyhow!(
                        "{why}; rollback failed too: {}",
                        f.exit.error.map_or(String::new(), |e| format!("{e:#}"))
                    ),
                ),
                f.running.unwrap_or("none"),
            ),
        }
    } else {
        (e, "new")
    };
    let mut f = fail(exit, &rec.config);
    f.log_tail = log_tail;
    f.running = Some(running);
    Err(f)
}

/// Put the old file back and restart the old config, as a job of its own.
fn rollback(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    rec: &SwapRecord,
    plan: &Plan,
    old: &ExecLine,
) -> Result<SwapRecord, Failed> {
    let id = job::new_id();
    let dir = target.state_dir();
    let mode = if plan.old.is_some() {
        "write"
    } else {
        "remove"
    };
    let (m, stop) = target
        .job(&req.opts, old, &plan.line)
        .map_err(|e| fail(e, &rec.config))?;
    let mut back = rec.clone();
    back.stop = stop;
    back.swap_id = Some(id.clone());
    let f = job::FileJob {
        path: plan.path.clone(),
        mode,
        new_text: plan.old.clone(),
        backup: None,
        // The backup of the old text is the old text itself: drop it.
        restores: rec.backup.clone(),
        keep: 0,
        go_wait_s: if target.needs_verdict() {
            job::GO_WAIT_S
        } else {
            0
        },
    };
    let pending = job::Pending {
        record: back,
        prefix: old.prefix.clone(),
        words: old.words.clone(),
        rollback: true,
    };
    job::launch(t, &dir, &id, &pending, &f, &m).map_err(|e| fail(e, &rec.config))?;
    let r = conclude(t, target, req, &dir, &id, pending, false);
    job::cleanup(t, &dir, &id);
    r
}

/// `--reattach ID`, or a job an earlier run left unreported: follow it to
/// its end and say which config runs.
pub fn reattach(
    t: &dyn Transport,
    target: &mut dyn Target,
    req: &Request,
    id: &str,
    superseded: bool,
) -> Result<SwapRecord, Failed> {
    let dir = target.state_dir();
    let pending = match job::read_pending(t, &dir, id) {
        Ok(Some(p)) => p,
        Ok(None) => {
            let e = Exit::new(
                exit::TARGET_ERROR,
                anyhow::anyhow!("no swap job {id} in {dir} (reported and cleaned up already?)"),
            );
            return Err(fail(e, &Config::new()));
        }
        Err(e) => return Err(fail(e, &Config::new())),
    };
    let rollback = pending.rollback;
    let mut r = conclude(t, target, req, &dir, id, pending, superseded).map_err(|mut f| {
        f.swap_id = Some(id.to_string());
        f
    });
    if let Ok(rec) = &mut r {
        rec.reattached = true;
        if rollback {
            let e = Exit::new(
                exit::ROLLED_BACK,
                anyhow::anyhow!("swap job {id} was a rollback; the old config runs again"),
            );
            let mut f = fail(e, &rec.config);
            f.running = Some("old");
            f.swap_id = Some(id.to_string());
            return Err(f);
        }
    }
    r
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
    // A secret flag's values are never shown (`sweepkit::redact`).
    let shown = |c: &sweepkit::records::Change, o: &Option<String>| match o {
        Some(s) if !s.is_empty() && sweepkit::redact::is_secret_key(&c.flag) => {
            sweepkit::redact::REDACTED.to_string()
        }
        _ => v(o),
    };
    changes
        .iter()
        .map(|c| format!("{}: {} -> {}", c.flag, shown(c, &c.old), shown(c, &c.new)))
        .collect::<Vec<_>>()
        .join(", ")
}
