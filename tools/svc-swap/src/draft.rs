//! What a swap will do, worked out before anything runs: the plan (the
//! edit or the restore), the swap record as planned, the far-side job's
//! file step and the backup's name.

use std::time::SystemTime;

use serde_json::Value;
use sweepkit::records::{
    Change, Config, StartInfo, StopInfo, SwapMethod, SwapRecord, SCHEMA_VERSION,
};

use crate::execstart::ExecLine;
use crate::job;
use crate::request::{fail, Failed, Request};
use crate::target::{Plan, Target};
use crate::{edit, flags};

/// `PATH.sweepkit-bak.20261130T050102.345Z`: sorts by time.
pub(crate) fn backup_path(path: &str) -> String {
    let stamp: String = sweepkit::time::rfc3339(SystemTime::now())
        .chars()
        .filter(|c| !matches!(c, '-' | ':'))
        .collect();
    format!("{path}.sweepkit-bak.{stamp}")
}

/// The plan, its changes, the config it gives and warnings.
pub(crate) fn plan(
    target: &mut dyn Target,
    req: &Request,
    cur: &ExecLine,
) -> Result<(Plan, Vec<Change>, Config, Vec<String>), Failed> {
    if req.restore {
        let plan = target
            .plan_restore(req.in_place)
            .map_err(|e| fail(e, &Config::new()))?;
        let changes = flags::diff(cur, &plan.line);
        let config = flags::config_of(&plan.line, &changes);
        return Ok((plan, changes, config, Vec::new()));
    }
    let e = edit::apply(cur, &req.ops);
    let plan = target
        .plan_edit(&e.line, req.in_place)
        .map_err(|x| fail(x, &e.config))?;
    Ok((plan, e.changes, e.config, e.warnings))
}

/// The swap record as planned, before anything ran.
pub(crate) fn new_record(
    target: &dyn Target,
    req: &Request,
    plan: &Plan,
    (changes, config, warnings): (Vec<Change>, Config, Vec<String>),
    started: SystemTime,
    upstream: Option<Value>,
) -> SwapRecord {
    let mut rec = SwapRecord {
        schema: SCHEMA_VERSION,
        config,
        provenance: sweepkit::records::Provenance::new("svc-swap", started),
        target: target.info(),
        changes,
        exec_start: plan.line.logical_argv(),
        stop: StopInfo::default(),
        start: StartInfo::default(),
        method: if req.restore {
            SwapMethod::Restore
        } else {
            plan.method.clone()
        },
        path: Some(plan.path.clone()),
        backup: None,
        warnings,
        preflight: Vec::new(),
        upstream,
        ..Default::default()
    };
    req.transport.describe_into(&mut rec.target);
    rec.target.port = req.opts.port.or(rec.target.port);
    rec
}

/// What the far-side job does to the file: keep it (a plain restart),
/// write the new text, or remove it (a restore to no drop-in).
pub(crate) fn file_job(
    target: &dyn Target,
    req: &Request,
    plan: &Plan,
    unchanged: bool,
    backup: Option<String>,
) -> job::FileJob {
    let mode = match (&plan.new, unchanged) {
        (_, true) => "keep",
        (Some(_), false) => "write",
        (None, false) => "remove",
    };
    job::FileJob {
        path: plan.path.clone(),
        mode,
        new_text: plan.new.clone().filter(|_| !unchanged),
        backup,
        restores: plan.restores.clone(),
        keep: req.keep_backups,
        go_wait_s: if unchanged || !target.needs_verdict() {
            0
        } else {
            job::GO_WAIT_S
        },
    }
}
