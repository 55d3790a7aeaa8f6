//! Numbers and failures in the words people read: shared by the analysis
//! (its decision texts) and the renderers, so neither needs the other.

use crate::cli::Objective;
use crate::input::FailureInfo;

/// A number as people read it: no decimals from 100 up, one from 10, else two.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 || (x.fract() == 0.0 && a < 1e15) {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// A score as every line prints it (the overall pick, the recommendation,
/// the schedule's decision and depth-cap lines): three decimals for a
/// weighted score (a fraction of the best), else the metric's own
/// rounding. A missing one is "no score", not "none": the schedule's
/// decision line says "none" for a missing static pick in the same
/// sentence ("the static pick none stands ...: no score against ..."),
/// and the recommendation has always said "no score".
pub fn score(objective: Objective, x: Option<f64>) -> String {
    match (x, objective) {
        (None, _) => "no score".into(),
        (Some(x), Objective::Weighted) => format!("{x:.3}"),
        (Some(x), _) => num(x),
    }
}

/// What a failure was, in the words of the person who ran the sweep.
pub fn failure_label(f: &FailureInfo) -> String {
    let at_load = f.stage == "ready" || f.stage == "swap";
    match f.kind.as_str() {
        "crashed_at_load" => "crashed at load".into(),
        "oom" if at_load => "OOM at load".into(),
        "oom" => "OOM mid-run".into(),
        "crashed_mid_run" => "crashed mid-run".into(),
        "timeout" => "timeout".into(),
        "restart_loop" => "restart loop".into(),
        "unreachable" => "unreachable".into(),
        "config_mismatch" => "config mismatch".into(),
        "swap_failed" => "swap failed".into(),
        "bench_failed" => "bench failed".into(),
        "interrupted" => "interrupted".into(),
        other => other.replace('_', " "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_well() {
        assert_eq!(num(1596.4), "1596");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(0.876), "0.88");
        assert_eq!(num(80.0), "80");
    }

    #[test]
    fn scores_read_alike_everywhere() {
        assert_eq!(score(Objective::Weighted, Some(0.9166)), "0.917");
        assert_eq!(score(Objective::Weighted, Some(1.0)), "1.000");
        assert_eq!(score(Objective::Max, Some(1596.4)), "1596");
        assert_eq!(score(Objective::Slo, Some(12.345)), "12.3");
        assert_eq!(score(Objective::Weighted, None), "no score");
    }

    #[test]
    fn failures_read_as_what_they_were() {
        let f = |stage: &str, kind: &str| FailureInfo {
            stage: stage.into(),
            kind: kind.into(),
            reason: String::new(),
        };
        assert_eq!(failure_label(&f("ready", "oom")), "OOM at load");
        assert_eq!(failure_label(&f("bench", "oom")), "OOM mid-run");
        assert_eq!(
            failure_label(&f("ready", "crashed_at_load")),
            "crashed at load"
        );
        assert_eq!(
            failure_label(&f("ready", "config_mismatch")),
            "config mismatch"
        );
        assert_eq!(failure_label(&f("ready", "timeout")), "timeout");
        assert_eq!(
            failure_label(&f("bench", "brand_new_kind")),
            "brand new kind"
        );
    }
}
