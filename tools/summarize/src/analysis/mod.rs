//! From the grouped table to the decisions every output format shows:
//! per-cell statistics, the baseline, best per level, the overall pick
//! under the objective, the plateau, and the warnings a human should read.

pub(crate) mod decide;
pub(crate) mod group;
pub(crate) mod interval;
pub(crate) mod noise;
pub(crate) mod not_per_level;
pub(crate) mod pooled;
pub(crate) mod schedule_cells;

use sweepkit::stats;

use crate::analysis::decide::{CellStat, Grid, Plateau};
use crate::analysis::group::{is_off, is_spec_key, Model};
use crate::cli::Objective;
use crate::error::AnalysisError;
use crate::flag_values::SloTerm;
use crate::input::level::trim_float;
use crate::input::Obs;
use crate::metric::{lookup, Metric};
use crate::wording::score;

/// The choices that shape the decisions (from the flags).
#[derive(Debug, Clone)]
pub struct Options {
    pub metric: Metric,
    pub objective: Objective,
    pub slo: Vec<SloTerm>,
    /// `(level label, weight)` as given; empty: equal weights.
    pub weights: Vec<(crate::input::level::Level, f64)>,
    pub baseline: Option<(String, String)>,
    pub param: Option<String>,
    pub tolerance: f64,
    pub plateau_threshold: f64,
}

/// The overall pick.
#[derive(Debug, Clone)]
pub struct Overall {
    pub row: usize,
    /// The level it won at (objectives max and slo).
    pub col: Option<usize>,
    /// The number it won on (a conservative score or a weighted score).
    pub score: f64,
    /// One line saying what was picked and why.
    pub text: String,
}

/// The plateau along one parameter.
#[derive(Debug, Clone)]
pub struct PlateauFinding {
    pub param: String,
    /// Per level: `Some(row)` where gains stop, `None` still gaining.
    pub per_level: Vec<(usize, Option<usize>)>,
    pub text: String,
}

/// Everything the renderers show.
#[derive(Debug, Clone)]
pub struct Analysis {
    pub opts: Options,
    pub model: Model,
    pub grid: Grid,
    pub baseline: usize,
    pub baseline_why: String,
    pub best_per_level: Vec<Option<usize>>,
    pub overall: Option<Overall>,
    /// Weighted scores per row (objective weighted only).
    pub weighted: Vec<Option<f64>>,
    /// The weighted score's levels and their weights, `(level column,
    /// weight)` (objective weighted only).
    pub weights: Vec<(usize, f64)>,
    /// Which cells failed (`[row][level]`, [`failed`]).
    pub failed: Vec<Vec<bool>>,
    pub plateau: Option<PlateauFinding>,
    pub warnings: Vec<String>,
    /// Each cell's interval and few-requests flag (`noise`).
    pub noise: crate::analysis::noise::Noise,
    /// Each cell's bench records (`[row][level]`), for the views that read
    /// more than the metric (`pareto`, `capacity`, `report`).
    pub records: Vec<Vec<Vec<serde_json::Value>>>,
    /// The validated schedules' rows (schedule/row.rs), filled by the
    /// caller; empty when the input has none.
    pub schedule: Vec<crate::analysis::schedule_cells::Row>,
}

/// Decide. `Err` is a usage problem (a `--baseline` or `--weights` that
/// names nothing in the input), exit 2.
pub fn analyse(model: Model, obs: &[Obs], opts: Options) -> Result<Analysis, AnalysisError> {
    let better = opts.metric.better;
    let mut warnings = Vec::new();
    warnings.extend(crate::analysis::not_per_level::warning(
        &model,
        &opts.metric.path,
    ));
    let grid = cell_stats(&model, obs, &opts, &mut warnings);
    let noise = crate::analysis::noise::of(&model, obs, &opts.metric.path);
    let records = crate::analysis::noise::cell_records(&model, obs);
    warnings.extend(crate::analysis::noise::few_warnings(
        &model,
        &noise,
        &opts.metric.path,
    ));
    let failed = failed(&model);
    let (baseline, baseline_why) = baseline(&model, &grid, &opts)?;
    let slo = !opts.slo.is_empty();
    let mut best_per_level = Vec::new();
    for (c, level) in model.levels.iter().enumerate() {
        let pick = decide::best_in_level(&grid, c, better, opts.tolerance, slo);
        if let Some(p) = pick {
            noisy(
                &model,
                &grid,
                (p.winner, c),
                p.rival.map(|r| (r, c)),
                &mut warnings,
            );
        } else if slo && (0..model.rows.len()).any(|r| grid[r][c].is_some()) {
            warnings.push(format!("{}: no config meets the SLO", level.label()));
        }
        best_per_level.push(pick.map(|p| p.winner));
    }
    let mut weighted = Vec::new();
    let mut weights = Vec::new();
    let overall = match opts.objective {
        Objective::Max | Objective::Slo => decide::best_cell(&grid, better, opts.tolerance, slo)
            .map(|p| {
                noisy(&model, &grid, p.winner, p.rival, &mut warnings);
                overall_cell(&model, &grid, &opts, p)
            }),
        Objective::Weighted => {
            weights = weight_columns(&model, &opts, &grid, &failed)?;
            weighted = decide::weighted_scores(&grid, &failed, &weights, better, slo);
            for (r, s) in weighted.iter().enumerate() {
                if s.is_none() {
                    warnings.push(format!(
                        "{}: not measured at every weighted level; left out of the weighted pick",
                        model.rows[r].label
                    ));
                }
            }
            overall_weighted(&model, &weighted, &weights, &opts)
        }
    };
    if overall.is_none() {
        warnings.push(format!(
            "no config {}; nothing to apply",
            if slo { "meets the SLO" } else { "was measured" }
        ));
    }
    let plateau = plateau(&model, &grid, &opts, baseline, &mut warnings);
    Ok(Analysis {
        opts,
        model,
        grid,
        baseline,
        baseline_why,
        best_per_level,
        overall,
        weighted,
        weights,
        failed,
        plateau,
        warnings,
        noise,
        records,
        schedule: Vec::new(),
    })
}

/// Which cells failed (`[row][level]`): a failure there counts as 0 in a
/// weighted score, where a cell never measured leaves the row unscored.
fn failed(model: &Model) -> Vec<Vec<bool>> {
    (0..model.rows.len())
        .map(|r| {
            (0..model.levels.len())
                .map(|c| !model.failures_at(r, c).is_empty())
                .collect()
        })
        .collect()
}

/// Median, conservative score, spread and SLO verdict of every cell.
fn cell_stats(model: &Model, obs: &[Obs], opts: &Options, warnings: &mut Vec<String>) -> Grid {
    let better = opts.metric.better;
    let mut grid = Grid::new();
    for (r, row) in model.cells.iter().enumerate() {
        let mut out = Vec::new();
        for (c, cell) in row.iter().enumerate() {
            let (Some(median), Some(score)) = (
                stats::median(&cell.values),
                stats::conservative(&cell.values, better),
            ) else {
                out.push(None);
                continue;
            };
            // Repeats of a latency percentile pool their histograms.
            let (median, score) = pooled::cell(median, score, &cell.runs, obs, &opts.metric.path);
            let where_ = || format!("{} at {}", model.rows[r].label, model.levels[c].label());
            let mut slo_ok = true;
            for term in &opts.slo {
                let xs: Vec<f64> = cell
                    .runs
                    .iter()
                    .filter_map(|&i| match &obs[i].body {
                        crate::input::Body::Bench(v) => lookup(v, &term.path),
                        _ => None,
                    })
                    .collect();
                match stats::median(&xs) {
                    Some(x) => slo_ok &= term.op.holds(x, term.limit),
                    None => {
                        slo_ok = false;
                        warnings.push(format!(
                            "{}: no {} to check the SLO against; counted as missing it",
                            where_(),
                            term.path
                        ));
                    }
                }
            }
            if !cell.failures.is_empty() {
                warnings.push(format!(
                    "{}: {} of {} runs failed ({}); the pick uses the runs that finished",
                    where_(),
                    cell.failures.len(),
                    cell.failures.len() + cell.values.len(),
                    crate::wording::failure_label(&cell.failures[0])
                ));
            }
            out.push(Some(CellStat {
                median,
                score,
                spread: stats::range(&cell.values),
                n: cell.values.len(),
                slo_ok,
            }));
        }
        grid.push(out);
    }
    decide::moderate_noise(&mut grid, better);
    grid
}

/// The row changes are against: `--baseline`, else speculation off if it
/// was measured, else the first config that has results (a config that
/// failed at every level has no numbers to be against; issue 21).
fn baseline(model: &Model, grid: &Grid, opts: &Options) -> Result<(usize, String), AnalysisError> {
    if let Some((k, v)) = &opts.baseline {
        let hit = model
            .rows
            .iter()
            .position(|r| r.config.get(k).map(String::as_str) == Some(v.as_str()));
        return match hit {
            Some(i) => Ok((i, format!("--baseline {k}={v}"))),
            None => {
                let have: Vec<&str> = model
                    .rows
                    .iter()
                    .filter_map(|r| r.config.get(k).map(String::as_str))
                    .collect();
                Err(AnalysisError::NoSuchBaseline {
                    key: k.clone(),
                    value: v.clone(),
                    have: if have.is_empty() {
                        "none".to_string()
                    } else {
                        have.join(", ")
                    },
                })
            }
        };
    }
    // Failed at every level, with no number anywhere: nothing to be
    // against (a row of bench records without this metric still counts).
    let failed_everywhere = |r: usize| {
        let cells = &model.cells[r];
        grid[r].iter().all(Option::is_none)
            && cells
                .iter()
                .all(|c| c.values.is_empty() && c.asides.is_empty())
            && (!model.row_failures[r].is_empty() || cells.iter().all(|c| !c.failures.is_empty()))
    };
    let is_off_row = |r: usize| {
        model
            .varying
            .iter()
            .zip(&model.rows[r].key)
            .any(|(k, v)| is_spec_key(k) && is_off(v))
    };
    let rows = 0..model.rows.len();
    let off = rows.clone().find(|&r| is_off_row(r));
    if let Some(i) = off.filter(|&i| !failed_everywhere(i)) {
        return Ok((i, "speculation off".to_string()));
    }
    Ok(match (rows.clone().find(|&r| !failed_everywhere(r)), off) {
        (Some(i), Some(_)) => (
            i,
            "first config with results; speculation off has none".into(),
        ),
        (Some(0), None) => (0, "first config".to_string()),
        (Some(i), None) => (i, "first config with results".to_string()),
        (None, _) => (0, "first config; no config has results".to_string()),
    })
}

/// A weight as a person reads it: at most three decimals, no trailing
/// zeros (equal weights over three levels printed `c=1:0.3333333333333333`).
fn weight_label(w: f64) -> String {
    let s = format!("{w:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "0" && w > 0.0 {
        format!("{w:.1e}")
    } else {
        s.to_string()
    }
}

/// The weighted score's levels and weights: `--weights`, else equal
/// weights over the levels every config reached.
fn weight_columns(
    model: &Model,
    opts: &Options,
    grid: &Grid,
    failed: &[Vec<bool>],
) -> Result<Vec<(usize, f64)>, AnalysisError> {
    if opts.weights.is_empty() {
        // Equal weights over the levels every config reached (measured or
        // failed there): a level only some configs ran cannot rank them all.
        // A config with no figure at any level (its metric set aside as not
        // per-level, e.g. an SGLang gauge) takes no part in that choice, or
        // it would empty the weights and leave every config unranked.
        let reached =
            |r: usize| (0..model.levels.len()).any(|c| grid[r][c].is_some() || failed[r][c]);
        let cols: Vec<usize> = (0..model.levels.len())
            .filter(|&c| {
                (0..grid.len())
                    .filter(|&r| reached(r))
                    .all(|r| grid[r][c].is_some() || failed[r][c])
            })
            .collect();
        let w = 1.0 / cols.len().max(1) as f64;
        return Ok(cols.into_iter().map(|c| (c, w)).collect());
    }
    opts.weights
        .iter()
        .map(|(l, w)| {
            model
                .levels
                .iter()
                .position(|x| x == l)
                .map(|c| (c, *w))
                .ok_or_else(|| AnalysisError::NoSuchWeightLevel {
                    level: l.label(),
                    have: model.levels.iter().map(|l| l.label()).collect(),
                })
        })
        .collect()
}

fn noisy(
    model: &Model,
    grid: &Grid,
    win: (usize, usize),
    rival: Option<(usize, usize)>,
    warnings: &mut Vec<String>,
) {
    let Some(rival) = rival else { return };
    let (Some(a), Some(b)) = (&grid[win.0][win.1], &grid[rival.0][rival.1]) else {
        return;
    };
    if decide::too_noisy(a, b) {
        let lvl = |c: usize| model.levels[c].label();
        let msg = format!(
            "{} at {} vs {} at {}: medians differ by {} but repeats spread {}; \
             the pick is within noise: run more repeats",
            model.rows[win.0].label,
            lvl(win.1),
            model.rows[rival.0].label,
            lvl(rival.1),
            crate::wording::num((a.median - b.median).abs()),
            crate::wording::num(a.spread.max(b.spread))
        );
        if !warnings.contains(&msg) {
            warnings.push(msg);
        }
    }
}

fn overall_cell(model: &Model, grid: &Grid, opts: &Options, p: decide::CellPick) -> Overall {
    let (r, c) = p.winner;
    let s = grid[r][c].as_ref().expect("picked cell has stats");
    let mut text = format!(
        "{} at {}: {}",
        model.rows[r].label,
        model.levels[c].label(),
        describe(s, opts.objective)
    );
    if let Some((rr, rc)) = p.rival {
        let rs = grid[rr][rc].as_ref().expect("rival has stats");
        if opts.metric.better.beats(rs.score, s.score) {
            text += &format!(
                "; within {}% of {} at {} ({}), smaller value preferred",
                trim_float(opts.tolerance * 100.0),
                model.rows[rr].label,
                model.levels[rc].label(),
                score(opts.objective, Some(rs.score))
            );
        }
    }
    Overall {
        row: r,
        col: Some(c),
        score: s.score,
        text,
    }
}

fn describe(s: &CellStat, objective: Objective) -> String {
    if s.n > 1 {
        format!(
            "{} (median {} - 1.4826 x MAD over {} runs)",
            score(objective, Some(s.score)),
            crate::wording::num(s.median),
            s.n
        )
    } else {
        score(objective, Some(s.score))
    }
}

fn overall_weighted(
    model: &Model,
    scores: &[Option<f64>],
    weights: &[(usize, f64)],
    opts: &Options,
) -> Option<Overall> {
    let (r, s) = decide::weighted_pick(scores, opts.tolerance)?;
    let mix: Vec<String> = weights
        .iter()
        .map(|(c, w)| format!("{}:{}", model.levels[*c].label(), weight_label(*w)))
        .collect();
    Some(Overall {
        row: r,
        col: None,
        score: s,
        text: format!(
            "{}: weighted score {} of 1 ({})",
            model.rows[r].label,
            score(opts.objective, Some(s)),
            mix.join(", ")
        ),
    })
}

/// The parameter the plateau runs along: `--param`, else the one varying
/// key whose values are all numbers (unset speculative keys count as 0);
/// other varying keys may be text (`speculative-algorithm` set only when
/// steps > 0).
fn plateau_param(model: &Model, opts: &Options) -> Option<usize> {
    if let Some(p) = &opts.param {
        return model.varying.iter().position(|k| k == p);
    }
    let numeric: Vec<usize> = (0..model.varying.len())
        .filter(|&i| {
            model
                .rows
                .iter()
                .all(|r| param_x(&model.varying[i], &r.key[i]).is_some())
        })
        .collect();
    (numeric.len() == 1).then(|| numeric[0])
}

fn param_x(key: &str, v: &Option<String>) -> Option<f64> {
    match v {
        None if is_spec_key(key) => Some(0.0),
        None => None,
        Some(s) => s.trim().parse().ok(),
    }
}

fn plateau(
    model: &Model,
    grid: &Grid,
    opts: &Options,
    baseline: usize,
    warnings: &mut Vec<String>,
) -> Option<PlateauFinding> {
    let Some(pi) = plateau_param(model, opts) else {
        if let Some(p) = &opts.param {
            warnings.push(format!(
                "--param {p}: not a parameter that varies; no plateau"
            ));
        }
        return None;
    };
    let key = &model.varying[pi];
    // When a parameter value appears in several rows (another key varies
    // independently), hold the other keys at the baseline's values.
    let base = &model.rows[baseline].key;
    let mut seen = std::collections::BTreeSet::new();
    let unique = model.rows.iter().all(|r| seen.insert(r.key[pi].clone()));
    let mut rows: Vec<(f64, usize)> = (0..model.rows.len())
        .filter(|&r| {
            unique || (0..model.varying.len()).all(|j| j == pi || model.rows[r].key[j] == base[j])
        })
        .filter_map(|r| param_x(key, &model.rows[r].key[pi]).map(|x| (x, r)))
        .collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut per_level = Vec::new();
    for (c, _) in model.levels.iter().enumerate() {
        let pts: Vec<(f64, usize)> = rows
            .iter()
            .filter_map(|&(_, r)| grid[r][c].as_ref().map(|s| (s.score, r)))
            .collect();
        let scores: Vec<f64> = pts.iter().map(|p| p.0).collect();
        match decide::plateau(&scores, opts.metric.better, opts.plateau_threshold) {
            Plateau::At(k) => per_level.push((c, Some(pts[k].1))),
            Plateau::StillGaining => per_level.push((c, None)),
            Plateau::TooFew => {}
        }
    }
    if per_level.is_empty() {
        return None;
    }
    let pct = trim_float(opts.plateau_threshold * 100.0);
    // Group levels by where they level off, in first-seen order.
    let mut groups: Vec<(Option<usize>, Vec<String>)> = Vec::new();
    for (c, at) in &per_level {
        let lbl = model.levels[*c].label();
        match groups.iter_mut().find(|g| g.0 == *at) {
            Some(g) => g.1.push(lbl),
            None => groups.push((*at, vec![lbl])),
        }
    }
    let mut said = false;
    let parts: Vec<String> = groups
        .iter()
        .map(|(at, lv)| {
            let what = match at {
                Some(r) => {
                    let v = Model::value_text(&model.rows[*r].key[pi]);
                    if !std::mem::replace(&mut said, true) {
                        format!("below {pct}% gain beyond {key}={v}")
                    } else {
                        format!("beyond {key}={v}")
                    }
                }
                None => format!("still gaining {pct}% or more at the largest {key}"),
            };
            format!("{what} ({})", lv.join(", "))
        })
        .collect();
    Some(PlateauFinding {
        param: key.clone(),
        per_level,
        text: parts.join("; "),
    })
}

/// The analysis of the records `lines` by output tokens/s, weighted, with
/// the default tolerances: the unit tests' one set-up (export, schedule).
#[cfg(test)]
pub(crate) fn analysis_of_lines(lines: &[String]) -> Analysis {
    let mut inp = crate::input::Input::default();
    crate::input::read_source("t.jsonl", &lines.join("\n"), &mut inp).unwrap();
    let opts = Options {
        metric: crate::metric::metric("throughput.output_tok_per_s", None).unwrap(),
        objective: Objective::Weighted,
        slo: Vec::new(),
        weights: Vec::new(),
        baseline: None,
        param: None,
        tolerance: 0.01,
        plateau_threshold: 0.02,
    };
    let model = crate::analysis::group::build(&inp.obs, &opts.metric, &mut Vec::new());
    analyse(model, &inp.obs, opts).unwrap()
}

#[cfg(test)]
mod tests {
    use super::weight_label;

    #[test]
    fn weights_print_short() {
        assert_eq!(weight_label(1.0 / 3.0), "0.333");
        assert_eq!(weight_label(0.5), "0.5");
        assert_eq!(weight_label(1.0), "1");
        assert_eq!(weight_label(0.25), "0.25");
        assert_eq!(weight_label(0.0001), "1.0e-4");
    }
}
