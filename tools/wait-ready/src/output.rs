//! Turning a verdict into the record on stdout (`ready` when ready or
//! down, `failure` otherwise) and the one reason line on stderr.

use std::time::SystemTime;

use sweepkit::records::{
    self, FailureKind, ReadyOutcome, ReadyRecord, Record, ServerInfo, Stage, SCHEMA_VERSION,
};
use sweepkit::redact;
use sweepkit::Provenance;

use crate::upstream_record::Upstream;
use crate::wait::Verdict;

pub const TOOL: &str = "wait-ready";

/// The failure kind for a non-ready outcome.
pub fn failure_kind(v: &Verdict) -> FailureKind {
    match v.outcome {
        ReadyOutcome::Crashed if v.oom => FailureKind::Oom,
        ReadyOutcome::Crashed => FailureKind::CrashedAtLoad,
        ReadyOutcome::RestartLoop => FailureKind::RestartLoop,
        ReadyOutcome::Unreachable => FailureKind::Unreachable,
        ReadyOutcome::ConfigMismatch => FailureKind::ConfigMismatch,
        ReadyOutcome::Interrupted => FailureKind::Interrupted,
        ReadyOutcome::NotFound => FailureKind::NotFound,
        ReadyOutcome::Unauthorized => FailureKind::Unauthorized,
        ReadyOutcome::Timeout | ReadyOutcome::Ready | ReadyOutcome::Down => FailureKind::Timeout,
    }
}

/// The record for this verdict.
pub fn record(
    v: &Verdict,
    started: SystemTime,
    up: &Upstream,
    server: Option<ServerInfo>,
    via: Option<&str>,
) -> Record {
    match v.outcome {
        ReadyOutcome::Ready | ReadyOutcome::Down => Record::Ready(ReadyRecord {
            schema: SCHEMA_VERSION,
            config: up.config.clone(),
            provenance: Provenance::new(TOOL, started),
            outcome: v.outcome,
            reason: v.reason.clone(),
            targets: v.targets.clone(),
            via: via.map(String::from),
            time_to_port_open_s: v.time_to_port_open_s.map(round_ms),
            time_to_ready_s: v.time_to_ready_s.map(round_ms),
            elapsed_s: round_ms(v.elapsed_s),
            attempts: v.attempts,
            server,
            config_source: None,
            log_tail: v.log_tail.clone(),
            warnings: v.warnings.iter().map(|w| redact::text(w)).collect(),
            upstream: up.raw.clone(),
        }),
        _ => {
            let mut f = records::failure(
                TOOL,
                started,
                up.config.clone(),
                Stage::Ready,
                failure_kind(v),
                v.reason.clone(),
                up.raw.clone(),
            );
            f.exit_code = Some(v.outcome.exit_code() as i32);
            f.log_tail = v.log_tail.clone();
            Record::Failure(f)
        }
    }
}

/// Seconds rounded to the millisecond (records stay readable).
fn round_ms(s: f64) -> f64 {
    (s * 1000.0).round() / 1000.0
}

/// The reason line on stderr: `wait-ready: ready after ...` or
/// `wait-ready: error: crashed after ...`, plus the log tail's last lines;
/// the verdict's warnings before it.
pub fn report(v: &Verdict) {
    use sweepkit::diag;
    // The reason and the log tail may quote a command line or server args
    // (diag redacts each line and writes it in one write).
    for w in &v.warnings {
        diag::warning(TOOL, w);
    }
    match v.outcome {
        ReadyOutcome::Ready | ReadyOutcome::Down => diag::info(TOOL, &v.reason),
        _ => {
            diag::line(format!("{TOOL}: error: {}", v.reason));
            let n = v.log_tail.len();
            for l in &v.log_tail[n.saturating_sub(5)..] {
                diag::line(format!("{TOOL}:   | {l}"));
            }
        }
    }
}
