//! The adaptive sweep's decision, as a pure function of what was measured
//! so far along one ordered parameter: measure the next value, re-measure
//! the close calls, or stop (and why). `sweep-plan next` feeds it from a
//! results file and summarize's scores; sweep(1) `--adaptive` acts on the
//! answer.
//!
//! Two early stops, both known from hyperparameter tuning:
//! - along the parameter, a plateau or a clear peak (the "patience" of
//!   early stopping: K further values that did not improve);
//! - among candidates, successive halving (Jamieson & Talwalkar 2016,
//!   "Non-stochastic Best Arm Identification and Hyperparameter
//!   Optimization"; Optuna's `SuccessiveHalvingPruner`): re-measure only the
//!   configs still within noise of the best, one round at a time, in
//!   interleaved order so a drift of the machine hits every candidate alike.

/// Which way the metric improves (summarize's summary record says, in
/// `details.better`), and the pick rule summarize picks by, so the search's
/// best is the config summarize picks and sweep applies.
use sweepkit::pick::{pick, Better};

/// What is known about one value of the parameter (index = its order).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowData {
    /// Has a result: complete bench records, or a failure of its own.
    pub done: bool,
    /// Failed at every level (no bench figure at all).
    pub failed: bool,
    /// Whole measurement runs (config starts that produced bench records).
    pub runs: usize,
    /// Median of the metric per level (`None`: not measured there).
    pub medians: Vec<Option<f64>>,
    /// Weighted score (summarize's weighted objective, 0..1, higher is
    /// better); `None` when not measured at every weighted level.
    pub weighted: Option<f64>,
    /// Relative noise of one run, from this value's repeats (median over
    /// levels of the cells' relative noise as the conservative score has
    /// it: 1.4826 x MAD / median moderated towards the level's, see
    /// `decide::moderate_noise`); `None` with a single run.
    pub sigma_rel: Option<f64>,
}

/// The knobs (from the flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Knobs {
    /// K: values past the best that must all show the plateau.
    pub patience: usize,
    /// Gain below which a further value counts as no better (fraction).
    pub threshold: f64,
    /// Weighted-score gap within which two configs are a close call
    /// before repeats have measured the noise (fraction).
    pub margin: f64,
    /// Extra config starts allowed for repeats.
    pub repeat_budget: usize,
    /// The pick's tolerance: within it the smaller value wins.
    pub tolerance: f64,
    pub better: Better,
}

/// Why the search stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// K values past the best gained less than the threshold everywhere
    /// and lost somewhere.
    Plateau,
    /// The last value's weighted score is clearly below the best.
    Peaked,
    /// Every value was measured.
    Exhausted,
}

impl Rule {
    pub fn word(self) -> &'static str {
        match self {
            Rule::Plateau => "plateau",
            Rule::Peaked => "peaked",
            Rule::Exhausted => "exhausted",
        }
    }
}

/// The answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Measure these values (indexes), in this order.
    Measure { rows: Vec<usize>, why: String },
    /// The search is over.
    Done {
        /// The best value, if any was measured.
        best: Option<usize>,
        /// Values never measured, skipped by `rule`.
        skip: Vec<usize>,
        rule: Rule,
        /// Why the exploration stopped.
        stop_why: String,
        /// Why no (further) repeats.
        repeat_why: String,
    },
}

/// Decide, given every value's data in parameter order; `label(i)` names a
/// value in messages.
pub fn decide(rows: &[RowData], k: &Knobs, label: &dyn Fn(usize) -> String) -> Decision {
    let stop = match explore(rows, k, label) {
        Ok(stop) => stop,
        Err(next) => {
            return Decision::Measure {
                rows: vec![next.0],
                why: next.1,
            }
        }
    };
    let (rule, stop_why) = stop;
    let skip: Vec<usize> = (0..rows.len()).filter(|&i| !rows[i].done).collect();
    match repeats(rows, k, label) {
        Repeat::Measure(rows, why) => Decision::Measure { rows, why },
        Repeat::Done(best, repeat_why) => Decision::Done {
            best,
            skip,
            rule,
            stop_why,
            repeat_why,
        },
    }
}

/// The best row by weighted score; within `tol` the smaller value wins.
pub fn best_row(rows: &[RowData], tol: f64) -> Option<usize> {
    let cands: Vec<(usize, f64)> = (0..rows.len())
        .filter(|&i| rows[i].done && !rows[i].failed)
        .filter_map(|i| rows[i].weighted.map(|s| (i, s)))
        .collect();
    let p = pick(&cands, Better::Higher, tol)?.winner;
    Some(cands[p].0)
}

/// Exploration along the parameter: `Ok((rule, why))` when it is over,
/// `Err((row, why))` with the next value to measure.
type Explored = Result<(Rule, String), (usize, String)>;

fn explore(rows: &[RowData], k: &Knobs, label: &dyn Fn(usize) -> String) -> Explored {
    let open = (0..rows.len()).find(|&i| !rows[i].done);
    // The reference is the smallest value within the plateau threshold of
    // the best: on a flat, noisy stretch the best moves about by chance,
    // and a gain below the threshold is no gain.
    let Some(r) = best_row(rows, k.threshold.max(k.tolerance)) else {
        return match open {
            Some(i) => Err((i, "nothing measured yet".into())),
            None => Ok((Rule::Exhausted, "every value was measured".into())),
        };
    };
    let after: Vec<usize> = (r + 1..rows.len()).filter(|&j| rows[j].done).collect();
    let plateau_ok = |j: usize| rows[j].failed || plateau_vs(&rows[j], &rows[r], k);
    let sr = rows[r].weighted.unwrap_or(0.0);
    let peaked =
        |j: usize| rows[j].failed || rows[j].weighted.is_some_and(|s| s < sr * (1.0 - k.margin));
    if k.patience > 0 && after.len() >= k.patience {
        let last = &after[after.len() - k.patience..];
        if last.iter().all(|&j| plateau_ok(j)) {
            let names: Vec<String> = last.iter().map(|&j| label(j)).collect();
            let why = format!(
                "{} gained less than {} over {} at every level and lost at some",
                names.join(", "),
                pct(k.threshold),
                label(r)
            );
            return Ok((Rule::Plateau, why));
        }
    }
    if let Some(&j) = after.last().filter(|&&j| peaked(j)) {
        let why = if rows[j].failed {
            format!("{} failed after the best, {}", label(j), label(r))
        } else {
            format!(
                "{} scored {:.3}, more than {} below the best, {} ({:.3})",
                label(j),
                rows[j].weighted.unwrap_or(0.0),
                pct(k.margin),
                label(r),
                sr
            )
        };
        return Ok((Rule::Peaked, why));
    }
    match open {
        Some(i) => Err((i, format!("best so far {}; still exploring", label(r)))),
        None => Ok((Rule::Exhausted, "every value was measured".into())),
    }
}

/// Gained less than the threshold at every level and lost at some level,
/// comparing medians of `j` against the best `r`.
fn plateau_vs(j: &RowData, r: &RowData, k: &Knobs) -> bool {
    let mut lost = false;
    for (a, b) in j.medians.iter().zip(&r.medians) {
        let (Some(a), Some(b)) = (a, b) else { continue };
        if *b == 0.0 {
            continue;
        }
        let g = match k.better {
            Better::Higher => (a - b) / b.abs(),
            Better::Lower => (b - a) / b.abs(),
        };
        if g >= k.threshold {
            return false;
        }
        lost |= g <= 0.0; // a tie is no gain either
    }
    lost
}

enum Repeat {
    Measure(Vec<usize>, String),
    Done(Option<usize>, String),
}

/// Successive halving over the close calls: the candidates within the
/// noise margin of the best are re-measured, a round at a time (the
/// laggards of an unfinished round first), until one is clear or the
/// budget is spent.
fn repeats(rows: &[RowData], k: &Knobs, label: &dyn Fn(usize) -> String) -> Repeat {
    let Some(b) = best_row(rows, k.tolerance) else {
        return Repeat::Done(None, "no value was measured".into());
    };
    let sb = rows[b].weighted.unwrap_or(0.0);
    let measured: Vec<usize> = (0..rows.len())
        .filter(|&i| rows[i].done && !rows[i].failed && rows[i].weighted.is_some())
        .collect();
    let margin = |j: usize| -> f64 {
        let n = rows[j].runs.min(rows[b].runs).max(1);
        match noise(rows) {
            // Two configs' difference has sqrt(2) times one run's sigma;
            // n runs each divide it by sqrt(n); 2 sigma is "clearly".
            Some(sigma) => (2.0 * sigma * (2.0 / n as f64).sqrt()).max(k.tolerance),
            None => k.margin,
        }
    };
    let close: Vec<usize> = measured
        .iter()
        .copied()
        .filter(|&j| j == b || rows[j].weighted.unwrap_or(0.0) > sb * (1.0 - margin(j)))
        .collect();
    if close.len() < 2 {
        let runner = measured
            .iter()
            .copied()
            .filter(|&j| j != b)
            .max_by(|&x, &y| rows[x].weighted.partial_cmp(&rows[y].weighted).unwrap());
        let why = match runner {
            Some(j) => format!(
                "clear: the next best, {}, is {} behind {} (noise margin {})",
                label(j),
                pct(1.0 - rows[j].weighted.unwrap_or(0.0) / sb),
                label(b),
                pct(margin(j))
            ),
            None => format!("{} is the only value measured", label(b)),
        };
        return Repeat::Done(Some(b), why);
    }
    let most = close.iter().map(|&j| rows[j].runs).max().unwrap_or(1);
    let mut round: Vec<usize> = close
        .iter()
        .copied()
        .filter(|&j| rows[j].runs < most)
        .collect();
    if round.is_empty() {
        round = close.clone();
    }
    let used: usize = rows.iter().map(|r| r.runs.saturating_sub(1)).sum();
    let left = k.repeat_budget.saturating_sub(used);
    if round.len() > left && left >= 2 {
        // More close calls than the budget: halve towards the best scores
        // (successive halving keeps the top of the field), interleaved in
        // parameter order.
        round.sort_by(|&x, &y| rows[y].weighted.partial_cmp(&rows[x].weighted).unwrap());
        round.truncate(left);
        round.sort_unstable();
    }
    let names: Vec<String> = close.iter().map(|&j| label(j)).collect();
    if round.len() > left {
        let why = format!(
            "repeat budget spent ({used} of {}); {} still within noise, {} picked",
            k.repeat_budget,
            names.join(", "),
            label(b)
        );
        return Repeat::Done(Some(b), why);
    }
    let why = format!(
        "close call: {} within noise of each other; repeating {}",
        names.join(", "),
        round
            .iter()
            .map(|&j| label(j))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Repeat::Measure(round, why)
}

/// The noise of one run, relative: the median over the repeated values of
/// their `sigma_rel` (as the conservative score has it). `None` until
/// some value was measured twice.
fn noise(rows: &[RowData]) -> Option<f64> {
    let mut xs: Vec<f64> = rows
        .iter()
        .filter(|r| r.runs >= 2)
        .filter_map(|r| r.sigma_rel)
        .collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    Some(xs[xs.len() / 2])
}

/// A fraction as a percentage for messages ("2%", "1.5%").
pub fn pct(x: f64) -> String {
    format!("{}%", trim_float((x * 1000.0).round() / 10.0))
}

/// `2` rather than `2.0`, as summarize prints figures.
pub fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
