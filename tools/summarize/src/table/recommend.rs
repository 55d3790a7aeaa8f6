//! The one thing to do, in words, and why: apply the static pick, apply
//! the validated schedule (with its depth per batch range), or extend the
//! range (still gaining at the largest value). The report's verdict and
//! the text table say the same sentences, and the pick's score is one
//! figure with one definition (`score_line`) wherever it appears.

use sweepkit::stats::change_pct;

use crate::analysis::schedule_cells::Row;
use crate::analysis::{Analysis, Overall};
use crate::cli::Objective;
use crate::input::level::trim_float;
use crate::metric_name::human;
use crate::table::cell::pct;
use crate::wording::{num, score};

/// What to do and the reasons, one sentence each.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    /// `apply speculative-num-steps=4`.
    pub action: String,
    pub why: Vec<String>,
}

/// The recommendation of `a`.
pub fn of(a: &Analysis) -> Recommendation {
    let Some(o) = &a.overall else {
        return Recommendation {
            action: "nothing to apply: no config was picked".into(),
            why: vec!["the warnings say why".into()],
        };
    };
    let sched = a.schedule.iter().find(|s| s.current);
    if let Some(s) = sched.filter(|s| s.wins) {
        return schedule_wins(a, s);
    }
    let label = &a.model.rows[o.row].label;
    let mut why = vec![score_line(a, o), levels_line(a, o.row)];
    why.extend(noise_line(a));
    if let Some(s) = sched {
        why.push(format!(
            "{} lost: {} against {} for {label}",
            s.label,
            score(a.opts.objective, s.score),
            score(a.opts.objective, s.pick_score)
        ));
    }
    let action = extend(a, o.row).unwrap_or_else(|| format!("apply {label}"));
    Recommendation { action, why }
}

/// The pick's score and what it means.
fn score_line(a: &Analysis, o: &Overall) -> String {
    let metric = human(&a.opts.metric.path);
    match (a.opts.objective, o.col) {
        (Objective::Weighted, _) => {
            let levels: Vec<String> = weight_levels(a);
            format!(
                "weighted score {}: its {metric} at each of {} divided by the best \
                 config's there, averaged with {}; 1 is the best at every level",
                score(a.opts.objective, Some(o.score)),
                levels.join(", "),
                if a.opts.weights.is_empty() {
                    "equal weights".to_string()
                } else {
                    "the --weights given".to_string()
                }
            )
        }
        (_, Some(c)) => format!(
            "score {}: its {metric} at {}, the best single cell{}",
            score(a.opts.objective, Some(o.score)),
            a.model.levels[c].label(),
            if a.opts.slo.is_empty() {
                ""
            } else {
                " meeting the SLO"
            }
        ),
        _ => o.text.clone(),
    }
}

fn weight_levels(a: &Analysis) -> Vec<String> {
    a.weights
        .iter()
        .map(|(c, _)| a.model.levels[*c].label())
        .collect()
}

/// Where the pick is best, and what beats it elsewhere by how much.
fn levels_line(a: &Analysis, row: usize) -> String {
    let m = &a.model;
    let mut best = Vec::new();
    let mut others = Vec::new();
    for (c, w) in a.best_per_level.iter().enumerate() {
        let Some(w) = *w else { continue };
        if w == row {
            best.push(m.levels[c].label());
            continue;
        }
        let (Some(x), Some(y)) = (&a.grid[w][c], &a.grid[row][c]) else {
            continue;
        };
        others.push(format!(
            "{} at {} ({} against {}, {})",
            m.rows[w].label,
            m.levels[c].label(),
            num(x.median),
            num(y.median),
            change_pct(x.median, y.median).map_or_else(String::new, pct)
        ));
    }
    let mut s = if best.is_empty() {
        "best at no single level".to_string()
    } else {
        format!("best at {}", best.join(", "))
    };
    if !others.is_empty() {
        s += &format!("; elsewhere the best is {}", others.join("; "));
    }
    s
}

/// Said once: whether the noise is known, and what would measure it.
fn noise_line(a: &Analysis) -> Option<String> {
    let repeated = a.grid.iter().flatten().flatten().any(|s| s.n > 1);
    if repeated || a.noise.any_ci() {
        return None;
    }
    Some(NOISE_UNKNOWN.to_string())
}

/// The one sentence a one-run sweep gets about noise.
pub const NOISE_UNKNOWN: &str = "noise unknown: one run per config and level, so no \
     difference here is known to be beyond noise; loadgen --until-stable 5% (sweep \
     --load-arg --until-stable --load-arg 5%) measures each level's interval, and \
     repeated starts (sweep --adaptive --repeat-budget N) the start-to-start spread";

/// `extend the range: ...` when the pick is the largest value of the
/// plateau's parameter and some level still gains there.
fn extend(a: &Analysis, row: usize) -> Option<String> {
    let p = a.plateau.as_ref()?;
    let pi = a.model.varying.iter().position(|k| *k == p.param)?;
    let x = |r: usize| -> Option<f64> { a.model.rows[r].key[pi].as_deref()?.trim().parse().ok() };
    let top = (0..a.model.rows.len())
        .filter_map(x)
        .fold(f64::MIN, f64::max);
    if x(row)? < top {
        return None;
    }
    let gaining: Vec<String> = p
        .per_level
        .iter()
        .filter(|(_, at)| at.is_none())
        .map(|(c, _)| a.model.levels[*c].label())
        .collect();
    (!gaining.is_empty()).then(|| {
        format!(
            "extend the range: still gaining at the largest value, {}={} ({}% or more at {}); \
             measure larger values before applying one",
            p.param,
            trim_float(top),
            trim_float(a.opts.plateau_threshold * 100.0),
            gaining.join(", ")
        )
    })
}

fn schedule_wins(a: &Analysis, s: &Row) -> Recommendation {
    let mut action = format!("apply the {} schedule", s.server);
    // Why: the row's own decision line ("... wins by the objective ...").
    let mut why = vec![s.decision.clone()];
    if let Some(p) = &s.plan {
        action += &format!(" ({})", p.ranges_text());
        why.push(format!("its config: {}", p.where_text()));
    }
    why.extend(noise_line(a));
    Recommendation { action, why }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analysis_of_lines;

    /// `steps` at c=1 and c=16 with these tokens/s, one run each.
    fn sweep(rows: &[(&str, f64, f64)]) -> Analysis {
        let line = |steps: &str, c: u64, tok_s: f64| {
            serde_json::json!({
                "type": "bench", "schema": 1,
                "config": {"speculative-num-steps": steps},
                "load": {"mode": "closed", "concurrency": c},
                "throughput": {"output_tok_per_s": tok_s},
            })
            .to_string()
        };
        let lines: Vec<String> = rows
            .iter()
            .flat_map(|(s, a, b)| [line(s, 1, *a), line(s, 16, *b)])
            .collect();
        analysis_of_lines(&lines)
    }

    #[test]
    fn a_pick_inside_the_range_is_applied_with_its_score_and_noise_once() {
        let a = sweep(&[
            ("1", 100.0, 1000.0),
            ("2", 120.0, 1300.0),
            ("4", 121.0, 1200.0),
        ]);
        let r = of(&a);
        assert_eq!(r.action, "apply speculative-num-steps=2");
        // The score is the pick line's own figure.
        let o = a.overall.as_ref().unwrap();
        assert!(o.text.contains(&score(a.opts.objective, Some(o.score))));
        assert!(r.why[0].starts_with(&format!("weighted score {:.3}: ", o.score)));
        assert_eq!(
            r.why.iter().filter(|w| w.contains("noise unknown")).count(),
            1
        );
    }

    #[test]
    fn still_gaining_at_the_largest_value_says_extend_the_range() {
        let a = sweep(&[
            ("1", 100.0, 1000.0),
            ("2", 130.0, 1300.0),
            ("4", 170.0, 1700.0),
        ]);
        let r = of(&a);
        assert!(
            r.action.starts_with(
                "extend the range: still gaining at the largest value, speculative-num-steps=4"
            ),
            "{}",
            r.action
        );
    }
}
