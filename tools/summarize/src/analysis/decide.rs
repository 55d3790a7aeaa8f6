//! The decisions, as pure functions over a grid of per-cell statistics
//! (rows = configs in ascending parameter order, columns = load levels):
//! best config per level, best overall under an objective, the plateau
//! along an ordered parameter, and when repeats are too noisy to decide.
//!
//! Every pick ranks by the conservative score
//! (`sweepkit::stats::conservative`, median - 1.4826 x MAD, moderated
//! towards the level's pooled noise by `moderate_noise`) and then applies
//! the tolerance rule of vLLM's unmerged `tune_speculative_k`: among
//! candidates whose score is within `tol` of the best score, the one with
//! the smallest parameter value (the earliest row) wins, because a smaller
//! value costs less memory and is less likely to fall over at higher load.

use crate::metric::Better;
/// The pick rule, shared with sweep-plan's adaptive search.
pub use sweepkit::pick::{pick, Pick};

/// Statistics of one measured cell.
#[derive(Debug, Clone, PartialEq)]
pub struct CellStat {
    pub median: f64,
    /// Conservative score (the median alone for a single run).
    pub score: f64,
    /// max - min between repeats (0 for one run).
    pub spread: f64,
    pub n: usize,
    /// Every SLO term holds (true when no SLO was given).
    pub slo_ok: bool,
}

/// `grid[row][level]`: `None` where nothing was measured.
pub type Grid = Vec<Vec<Option<CellStat>>>;

/// The best row at level `col` (only cells meeting the SLO when `slo`).
/// Returns row indexes.
pub fn best_in_level(grid: &Grid, col: usize, better: Better, tol: f64, slo: bool) -> Option<Pick> {
    let rows: Vec<usize> = (0..grid.len())
        .filter(|&r| matches!(&grid[r][col], Some(c) if !slo || c.slo_ok))
        .collect();
    let cands: Vec<(usize, f64)> = rows
        .iter()
        .map(|&r| (r, grid[r][col].as_ref().map_or(0.0, |c| c.score)))
        .collect();
    let p = pick(&cands, better, tol)?;
    Some(Pick {
        winner: rows[p.winner],
        rival: p.rival.map(|i| rows[i]),
    })
}

/// Objective `max` (and `slo` with `slo = true`): the best single cell
/// anywhere, like vLLM's auto_tune (highest throughput, optionally with
/// P99 E2E under a limit). Returns `((row, level), rival cell)`.
pub fn best_cell(grid: &Grid, better: Better, tol: f64, slo: bool) -> Option<CellPick> {
    let cells: Vec<(usize, usize)> = (0..grid.len())
        .flat_map(|r| (0..grid[r].len()).map(move |c| (r, c)))
        .filter(|&(r, c)| matches!(&grid[r][c], Some(s) if !slo || s.slo_ok))
        .collect();
    let cands: Vec<(usize, f64)> = cells
        .iter()
        .map(|&(r, c)| (r, grid[r][c].as_ref().map_or(0.0, |s| s.score)))
        .collect();
    let p = pick(&cands, better, tol)?;
    Some(CellPick {
        winner: cells[p.winner],
        rival: p.rival.map(|i| cells[i]),
    })
}

/// A picked cell `(row, level)` and its rival cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CellPick {
    pub winner: (usize, usize),
    pub rival: Option<(usize, usize)>,
}

/// Objective `weighted`: each row's score is
///   S(row) = sum_l w_l * q(row, l) / sum_l w_l,
/// with q = score / best score at that level (higher is better) or best /
/// score (lower is better), so every level counts on the same 0..1 scale
/// however large its raw numbers. A failed cell, or one that misses the
/// SLO when `slo`, counts as q = 0; a row with a weighted level never
/// measured and never failed is left out (`None`). A row that failed
/// everywhere scores 0: shown, never picked ([`weighted_pick`]).
/// `weights` are `(level column, weight)`; `failed[row][level]` marks failures.
pub fn weighted_scores(
    grid: &Grid,
    failed: &[Vec<bool>],
    weights: &[(usize, f64)],
    better: Better,
    slo: bool,
) -> Vec<Option<f64>> {
    weighted_scores_against(grid, failed, weights, better, slo, grid.len())
}

/// [`weighted_scores`] with each level's best taken over the first
/// `rows` rows only: a schedule scored beside the static rows is measured
/// against the static best, so adding it changes no static score (the
/// pick's score is one figure wherever it is shown) and it may score
/// above 1 where it beats every static value.
pub fn weighted_scores_against(
    grid: &Grid,
    failed: &[Vec<bool>],
    weights: &[(usize, f64)],
    better: Better,
    slo: bool,
    rows: usize,
) -> Vec<Option<f64>> {
    let total: f64 = weights.iter().map(|(_, w)| w).sum();
    let best: Vec<Option<f64>> = weights
        .iter()
        .map(|&(col, _)| {
            (0..rows.min(grid.len()))
                .filter_map(|r| grid[r][col].as_ref())
                .filter(|s| !slo || s.slo_ok)
                .map(|s| s.score)
                .reduce(|a, b| if better.beats(b, a) { b } else { a })
        })
        .collect();
    (0..grid.len())
        .map(|r| {
            let mut sum = 0.0;
            if total <= 0.0 {
                return None;
            }
            for (i, &(col, w)) in weights.iter().enumerate() {
                let q = match (&grid[r][col], best[i]) {
                    (Some(s), Some(b)) if !slo || s.slo_ok => quality(s.score, b, better),
                    (Some(_), _) => 0.0,
                    (None, _) if failed[r][col] => 0.0,
                    (None, _) if w == 0.0 => 0.0,
                    (None, _) => return None,
                };
                sum += w * q;
            }
            Some(sum / total)
        })
        .collect()
}

/// The weighted pick: the pick rule over the rows' weighted scores
/// (already higher is better, a fraction of the best), among the rows
/// that scored above 0 (0 is failed or unmeasured at every weighted
/// level: no pick). The winning row and its score.
pub fn weighted_pick(scores: &[Option<f64>], tol: f64) -> Option<(usize, f64)> {
    let cands: Vec<(usize, f64)> = scores
        .iter()
        .enumerate()
        .filter_map(|(r, s)| s.map(|s| (r, s)))
        .filter(|&(_, s)| s > 0.0)
        .collect();
    pick(&cands, Better::Higher, tol).map(|p| cands[p.winner])
}

fn quality(score: f64, best: f64, better: Better) -> f64 {
    match better {
        Better::Higher if best > 0.0 => (score / best).max(0.0),
        Better::Lower if score > 0.0 => best / score,
        _ => 0.0,
    }
}

/// Where gains along an ordered parameter stop.
#[derive(Debug, Clone, PartialEq)]
pub enum Plateau {
    /// No later value improves on the value at this index by `threshold`
    /// or more: "below 2% gain beyond x".
    At(usize),
    /// The last value still gained `threshold` or more over every earlier
    /// one: no plateau inside the tested range.
    StillGaining,
    /// Fewer than two points.
    TooFew,
}

/// Plateau along `scores`, ordered by ascending parameter value: the first
/// index k such that for every j > k the relative gain
///   g(j, k) = (s_j - s_k) / |s_k|   (higher is better; sign flipped for lower)
/// is below `threshold`. k = last index means no plateau was reached.
pub fn plateau(scores: &[f64], better: Better, threshold: f64) -> Plateau {
    if scores.len() < 2 {
        return Plateau::TooFew;
    }
    let gain = |j: f64, k: f64| {
        let g = (j - k) / k.abs();
        match better {
            Better::Higher => g,
            Better::Lower => -g,
        }
    };
    let last = scores.len() - 1;
    for k in 0..last {
        if scores[k + 1..]
            .iter()
            .all(|&j| scores[k] != 0.0 && gain(j, scores[k]) < threshold)
        {
            return Plateau::At(k);
        }
    }
    Plateau::StillGaining
}

/// True when the repeats of the two cells spread wider than the difference
/// between their medians: the decision between them is within noise.
pub fn too_noisy(a: &CellStat, b: &CellStat) -> bool {
    let spread = a.spread.max(b.spread);
    spread > 0.0 && spread > (a.median - b.median).abs()
}

/// Prior weight, in degrees of freedom, of a level's pooled noise in each
/// cell's moderated noise (`moderate_noise`).
const POOLED_DF: f64 = 4.0;

/// The conservative score moves a cell's median against the user by its
/// noise; but the spread of two or three runs is itself mostly chance, and
/// a cell measured once has none, so after an adaptive sweep repeated only
/// the close calls, a value measured once would win by not being repeated
/// and a repeated one would win or lose on the luck of its spread. Each
/// cell's relative noise is therefore moderated towards its level's pooled
/// noise (the median relative 1.4826 x MAD over the cells measured at
/// least twice), weighted by degrees of freedom: s^2 = ((n - 1) s_own^2 +
/// d0 s_pool^2) / (n - 1 + d0), d0 = 4, the empirical-Bayes variance
/// moderation of Smyth (2004, "Linear models and empirical Bayes methods
/// for assessing differential expression", limma). A cell repeated many
/// times keeps mostly its own noise, so a config that is fast only
/// sometimes still loses to one that is fast every time. With no repeats
/// at a level, nothing changes (every score is its median).
pub fn moderate_noise(grid: &mut Grid, better: Better) {
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    let rel = |s: &CellStat| ((s.median - s.score) / s.median).abs();
    for c in 0..cols {
        let own: Vec<f64> = grid
            .iter()
            .filter_map(|row| row.get(c).and_then(Option::as_ref))
            .filter(|s| s.n >= 2 && s.median != 0.0)
            .map(rel)
            .collect();
        let Some(pool) = sweepkit::stats::median(&own) else {
            continue;
        };
        for s in grid.iter_mut().filter_map(|row| row.get_mut(c)).flatten() {
            if s.median == 0.0 {
                continue;
            }
            let df = (s.n - 1) as f64;
            let own = if s.n >= 2 { rel(s) } else { 0.0 };
            let sigma = ((df * own * own + POOLED_DF * pool * pool) / (df + POOLED_DF)).sqrt();
            s.score = match better {
                Better::Higher => s.median * (1.0 - sigma),
                Better::Lower => s.median * (1.0 + sigma),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(median: f64) -> Option<CellStat> {
        Some(CellStat {
            median,
            score: median,
            spread: 0.0,
            n: 1,
            slo_ok: true,
        })
    }

    #[test]
    fn plateau_of_the_reference_campaign() {
        // steps 1..5 at c=1: 123, 186, 234, 277, 282 tok/s. 282/277 = +1.8%.
        let c1 = [123.0, 186.0, 234.0, 277.0, 282.0];
        assert_eq!(plateau(&c1, Better::Higher, 0.02), Plateau::At(3));
        // With a 1% threshold the +1.8% still counts: no plateau in range.
        assert_eq!(plateau(&c1, Better::Higher, 0.01), Plateau::StillGaining);
        // Falling after a peak: the peak is the plateau.
        assert_eq!(
            plateau(&[1.0, 2.0, 3.0, 2.5, 1.0], Better::Higher, 0.02),
            Plateau::At(2)
        );
        // Latency: lower is better; 100 -> 99.5 is a 0.5% gain.
        assert_eq!(
            plateau(&[200.0, 100.0, 99.5], Better::Lower, 0.02),
            Plateau::At(1)
        );
        assert_eq!(plateau(&[1.0], Better::Higher, 0.02), Plateau::TooFew);
    }

    #[test]
    fn best_pick_prefers_smaller_value_within_tolerance() {
        // order = parameter rank. 277 vs 282: 1.8% apart, outside 1%.
        let c = [(0, 234.0), (1, 277.0), (2, 282.0)];
        assert_eq!(
            pick(&c, Better::Higher, 0.01),
            Some(Pick {
                winner: 2,
                rival: Some(1)
            })
        );
        // Within 2%, the smaller value (order 1) wins against the top.
        assert_eq!(
            pick(&c, Better::Higher, 0.02),
            Some(Pick {
                winner: 1,
                rival: Some(2)
            })
        );
        // Lower is better.
        let l = [(0, 10.0), (1, 9.0)];
        assert_eq!(pick(&l, Better::Lower, 0.0).unwrap().winner, 1);
        assert_eq!(pick(&[], Better::Higher, 0.01), None);
    }

    #[test]
    fn best_in_level_at_c16() {
        // steps=4 1596 vs steps=5 1119 tok/s at c=16.
        let grid: Grid = vec![
            vec![cell(1480.0)],
            vec![cell(1596.0)],
            vec![cell(1119.0)],
            vec![None],
        ];
        let p = best_in_level(&grid, 0, Better::Higher, 0.01, false).unwrap();
        assert_eq!(
            p,
            Pick {
                winner: 1,
                rival: Some(0)
            }
        );
    }

    #[test]
    fn slo_filters_cells() {
        let mut grid: Grid = vec![
            vec![cell(100.0), cell(400.0)],
            vec![cell(120.0), cell(500.0)],
        ];
        // The fastest cell misses its latency SLO.
        grid[1][1].as_mut().unwrap().slo_ok = false;
        let max = best_cell(&grid, Better::Higher, 0.0, false).unwrap();
        assert_eq!(max.winner, (1, 1));
        let slo = best_cell(&grid, Better::Higher, 0.0, true).unwrap();
        assert_eq!(slo.winner, (0, 1));
        assert_eq!(slo.rival, Some((1, 0)));
        for cell in grid.iter_mut().flatten().flatten() {
            cell.slo_ok = false;
        }
        assert_eq!(best_cell(&grid, Better::Higher, 0.0, true), None);
    }

    #[test]
    fn the_weighted_pick_skips_zero_and_prefers_the_earlier_row_within_tolerance() {
        let scores = [Some(0.0), None, Some(0.995), Some(1.0)];
        assert_eq!(weighted_pick(&scores, 0.01), Some((2, 0.995)));
        assert_eq!(weighted_pick(&scores, 0.0), Some((3, 1.0)));
        assert_eq!(weighted_pick(&[Some(0.0), None], 0.01), None);
    }

    #[test]
    fn weighted_normalizes_each_level() {
        // c=1: 277 vs 282; c=16: 1596 vs 1119 -> steps=4 wins the 50/50 mix:
        // S4 = 0.5*277/282 + 0.5*1 = 0.9911; S5 = 0.5*1 + 0.5*1119/1596 = 0.8506.
        let grid: Grid = vec![
            vec![cell(277.0), cell(1596.0)],
            vec![cell(282.0), cell(1119.0)],
        ];
        let failed = vec![vec![false; 2]; 2];
        let s = weighted_scores(&grid, &failed, &[(0, 0.5), (1, 0.5)], Better::Higher, false);
        assert!((s[0].unwrap() - (0.5 * 277.0 / 282.0 + 0.5)).abs() < 1e-12);
        assert!((s[1].unwrap() - (0.5 + 0.5 * 1119.0 / 1596.0)).abs() < 1e-12);
        // A failed cell counts zero; a never-measured one leaves the row out.
        let grid2: Grid = vec![vec![cell(277.0), None], vec![cell(282.0), None]];
        let failed2 = vec![vec![false, true], vec![false, false]];
        let s2 = weighted_scores(
            &grid2,
            &failed2,
            &[(0, 0.5), (1, 0.5)],
            Better::Higher,
            false,
        );
        assert!((s2[0].unwrap() - 0.5 * 277.0 / 282.0).abs() < 1e-12);
        assert_eq!(s2[1], None);
    }

    #[test]
    fn a_single_run_does_not_win_for_not_being_repeated() {
        // Two configs with the same median at one level: the one measured
        // three times (spread +-2%) used to lose to the one measured once
        // by its own MAD; moderated, both carry the level's noise.
        let rep = |m: f64, xs: &[f64]| CellStat {
            median: m,
            score: sweepkit::stats::conservative(xs, Better::Higher).unwrap(),
            spread: sweepkit::stats::range(xs),
            n: xs.len(),
            slo_ok: true,
        };
        let mut grid: Grid = vec![
            vec![Some(rep(100.0, &[98.0, 100.0, 102.0]))],
            vec![Some(rep(100.0, &[100.0]))],
        ];
        moderate_noise(&mut grid, Better::Higher);
        let (a, b) = (grid[0][0].clone().unwrap(), grid[1][0].clone().unwrap());
        assert!(
            (a.score - b.score).abs() < 1e-9,
            "{} vs {}",
            a.score,
            b.score
        );
        assert!(
            b.score < 100.0,
            "the single run is moved by the pooled noise"
        );
        // Many repeats keep mostly their own (larger) noise.
        let wide: Vec<f64> = (0..21)
            .map(|i| if i % 2 == 0 { 90.0 } else { 110.0 })
            .collect();
        let mut grid: Grid = vec![
            vec![Some(rep(100.0, &[99.0, 100.0, 101.0]))],
            vec![Some(rep(110.0, &wide))],
        ];
        let own = grid[1][0].clone().unwrap().score;
        moderate_noise(&mut grid, Better::Higher);
        let moderated = grid[1][0].clone().unwrap().score;
        assert!(
            moderated < 100.0 && (moderated - own).abs() < 4.0,
            "{own} -> {moderated}"
        );
        // No repeats at a level: scores stay the values.
        let mut grid: Grid = vec![vec![Some(rep(5.0, &[5.0]))], vec![Some(rep(7.0, &[7.0]))]];
        moderate_noise(&mut grid, Better::Higher);
        assert_eq!(grid[0][0].as_ref().unwrap().score, 5.0);
    }

    #[test]
    fn noisy_repeats_are_flagged() {
        let a = CellStat {
            median: 3150.0,
            score: 3075.9,
            spread: 250.0,
            n: 3,
            slo_ok: true,
        };
        let b = CellStat {
            median: 3100.0,
            score: 3085.2,
            spread: 20.0,
            n: 3,
            slo_ok: true,
        };
        assert!(too_noisy(&a, &b));
        let c = CellStat {
            median: 2000.0,
            ..b.clone()
        };
        assert!(!too_noisy(&a, &c));
        // Single runs have no spread to judge by.
        assert!(!too_noisy(&cell(1.0).unwrap(), &cell(1.1).unwrap()));
    }
}
