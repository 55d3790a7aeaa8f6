//! Unit tests of the adaptive decision on synthetic curves: a plateau, a
//! late peak, a monotone rise, a noisy flat line, and repeats of close calls.

use super::*;

use sweepkit::stats;

const LEVELS: usize = 3;

fn knobs() -> Knobs {
    Knobs {
        patience: 2,
        threshold: 0.02,
        margin: 0.05,
        repeat_budget: 4,
        tolerance: 0.01,
        better: Better::Higher,
    }
}

/// Rows from measured runs (`runs[value]` = per-run, per-level figures),
/// scored as `--next` scores them: cell medians, each level normalized by
/// its best, equal weights.
fn rows_of(runs: &[Vec<Vec<f64>>]) -> Vec<RowData> {
    let cell = |i: usize, l: usize| -> Vec<f64> { runs[i].iter().map(|r| r[l]).collect() };
    let score = |i: usize, l: usize| stats::median(&cell(i, l));
    let best: Vec<f64> = (0..LEVELS)
        .map(|l| {
            (0..runs.len())
                .filter_map(|i| score(i, l))
                .fold(f64::MIN, f64::max)
        })
        .collect();
    (0..runs.len())
        .map(|i| {
            if runs[i].is_empty() {
                return RowData::default();
            }
            let q: f64 = (0..LEVELS).map(|l| score(i, l).unwrap() / best[l]).sum();
            let mut rel: Vec<f64> = (0..LEVELS)
                .map(|l| {
                    stats::MAD_TO_SIGMA * stats::mad(&cell(i, l)).unwrap()
                        / stats::median(&cell(i, l)).unwrap()
                })
                .collect();
            rel.sort_by(f64::total_cmp);
            RowData {
                done: true,
                failed: false,
                runs: runs[i].len(),
                medians: (0..LEVELS).map(|l| stats::median(&cell(i, l))).collect(),
                weighted: Some(q / LEVELS as f64),
                sigma_rel: (runs[i].len() >= 2).then(|| rel[LEVELS / 2]),
            }
        })
        .collect()
}

/// Run the loop as sweep --adaptive does: measure what `decide` asks
/// (`truth(value, level, run)`), until it is done. Returns the decision and
/// the runs each value got.
fn search(n: usize, truth: &dyn Fn(usize, usize, usize) -> f64) -> (Decision, Vec<usize>) {
    let mut runs: Vec<Vec<Vec<f64>>> = vec![Vec::new(); n];
    for _ in 0..100 {
        let d = decide(&rows_of(&runs), &knobs(), &|i| format!("k={}", i + 1));
        match d {
            Decision::Measure { rows, .. } => {
                for i in rows {
                    let run = runs[i].len();
                    runs[i].push((0..LEVELS).map(|l| truth(i, l, run)).collect());
                }
            }
            done => return (done, runs.iter().map(Vec::len).collect()),
        }
    }
    panic!("the search never ended");
}

fn done(d: &Decision) -> (Option<usize>, &[usize], Rule) {
    match d {
        Decision::Done {
            best, skip, rule, ..
        } => (*best, skip, *rule),
        other => panic!("not done: {other:?}"),
    }
}

#[test]
fn plateau_stops_two_values_past_the_best() {
    // Gains level off after value 4 (index 3), then lose a little.
    let curve = [
        100.0, 150.0, 190.0, 200.0, 199.0, 198.0, 197.0, 196.0, 195.0, 194.0,
    ];
    let (d, runs) = search(10, &|i, l, _| curve[i] * (l + 1) as f64);
    let (best, skip, rule) = done(&d);
    assert_eq!((best, rule), (Some(3), Rule::Plateau), "{d:?}");
    assert_eq!(skip, &[6, 7, 8, 9]);
    assert_eq!(
        &runs[..6],
        &[1, 1, 1, 2, 2, 2],
        "close calls 4, 5, 6 repeated once"
    );
}

#[test]
fn late_peak_is_found() {
    // Rising slowly to value 8, then falling.
    let curve = [
        100.0, 110.0, 120.0, 130.0, 140.0, 150.0, 160.0, 170.0, 150.0, 140.0,
    ];
    let (d, runs) = search(10, &|i, _, _| curve[i]);
    let (best, skip, rule) = done(&d);
    assert_eq!(best, Some(7), "{d:?}");
    assert_eq!(rule, Rule::Peaked);
    assert_eq!(skip, &[9]);
    assert_eq!(
        runs[..9].iter().filter(|&&n| n > 1).count(),
        0,
        "no close call"
    );
}

#[test]
fn monotone_rise_measures_every_value() {
    let (d, runs) = search(10, &|i, l, _| 100.0 + 10.0 * i as f64 + l as f64);
    let (best, skip, rule) = done(&d);
    assert_eq!((best, rule), (Some(9), Rule::Exhausted));
    assert!(skip.is_empty());
    assert_eq!(runs, vec![1; 10]);
}

#[test]
fn noisy_flat_line_stops_early_and_spends_at_most_the_budget() {
    // +-0.9% of deterministic noise around a flat 100: under the 2%
    // threshold, so every value past the best "gained less than 2%".
    let noise =
        |i: usize, l: usize, r: usize| ((i * 3 + l * 5 + r * 2) % 7) as f64 / 6.0 * 0.018 - 0.009;
    let (d, runs) = search(10, &|i, l, r| 100.0 * (1.0 + noise(i, l, r)));
    let (best, skip, rule) = done(&d);
    assert_eq!(rule, Rule::Plateau, "{d:?}");
    assert!(!skip.is_empty() && best.is_some(), "{d:?} {runs:?}");
    let measured = runs.iter().filter(|&&n| n > 0).count();
    assert!(measured < 10, "{runs:?}");
    let repeats: usize = runs.iter().map(|n| n.saturating_sub(1)).sum();
    assert!(repeats <= knobs().repeat_budget, "{runs:?}");
}

#[test]
fn only_close_candidates_are_repeated_interleaved() {
    // Measured once each: 4 and 5 within 2% of each other, 1-3 clearly
    // behind, 6 failed at load.
    let mut runs: Vec<Vec<Vec<f64>>> = [50.0, 70.0, 80.0, 100.0, 98.5]
        .iter()
        .map(|&x| vec![vec![x; LEVELS]])
        .collect();
    runs.push(Vec::new());
    let mut rows = rows_of(&runs);
    rows[5] = RowData {
        done: true,
        failed: true,
        ..RowData::default()
    };
    let label = |i: usize| format!("k={}", i + 1);
    match decide(&rows, &knobs(), &label) {
        Decision::Measure { rows: m, why } => {
            assert_eq!(m, vec![3, 4], "{why}");
            assert!(why.contains("close call"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    // The round half done (k=4 repeated): the laggard k=5 comes next.
    runs[3].push(vec![101.0; LEVELS]);
    let mut rows = rows_of(&runs);
    rows[5] = RowData {
        done: true,
        failed: true,
        ..RowData::default()
    };
    assert!(matches!(decide(&rows, &knobs(), &label),
        Decision::Measure { rows: m, .. } if m == vec![4]));
    // Both repeated, the noise is small against the gap: clear.
    runs[4].push(vec![97.0; LEVELS]);
    let mut rows = rows_of(&runs);
    rows[5] = RowData {
        done: true,
        failed: true,
        ..RowData::default()
    };
    let d = decide(&rows, &knobs(), &label);
    let (best, skip, rule) = done(&d);
    // 5 gained nothing and lost, 6 failed: the plateau.
    assert_eq!((best, rule), (Some(3), Rule::Plateau), "{d:?}");
    assert!(skip.is_empty());
}

#[test]
fn the_budget_ends_repeats_of_an_unbreakable_tie() {
    let (d, runs) = search(4, &|i, _, r| {
        if i >= 2 {
            100.0 + (r % 2) as f64 * 3.0
        } else {
            50.0
        }
    });
    let Decision::Done { repeat_why, .. } = &d else {
        panic!("{d:?}")
    };
    assert!(repeat_why.contains("budget"), "{repeat_why}");
    let repeats: usize = runs.iter().map(|n| n.saturating_sub(1)).sum();
    assert_eq!(repeats, 4, "{runs:?}");
    assert_eq!(runs[0], 1);
}

/// bench/adaptive.sh's curve (output tok/s at c=1, 16, 64 of steps 1..10,
/// one noise-free grid pass of the release build, 2026-11-30): the
/// campaign's rise to steps=4, then the KV capacity cuts the batch.
const CAMPAIGN: [[f64; LEVELS]; 10] = [
    [547.0, 5994.0, 9349.0],
    [701.0, 7307.0, 11449.0],
    [797.0, 8530.0, 12698.0],
    [911.0, 8589.0, 13239.0],
    [870.0, 8453.0, 11160.0],
    [817.0, 8010.0, 10388.0],
    [771.0, 7745.0, 8931.0],
    [753.0, 7633.0, 7747.0],
    [721.0, 7018.0, 7293.0],
    [697.0, 6575.0, 6410.0],
];

#[test]
fn campaign_curve_stops_after_the_peak_without_repeats() {
    // Steps 5 scores ~7% below steps 4, steps 3 ~6%: both beyond the 5%
    // margin, so the walk ends at steps 5 (half the grid's restarts) and
    // spends nothing on repeats.
    let (d, runs) = search(10, &|i, l, _| CAMPAIGN[i][l]);
    let (best, skip, rule) = done(&d);
    assert_eq!((best, rule), (Some(3), Rule::Peaked), "{d:?}");
    assert_eq!(skip, &[5, 6, 7, 8, 9]);
    assert_eq!(runs, vec![1, 1, 1, 1, 1, 0, 0, 0, 0, 0]);
}

#[test]
fn campaign_curve_with_start_noise_picks_the_peak() {
    // llm-sim --noise 5%: one uniform speed factor in [0.95, 1.05] per
    // config start, the same at every level. A fixed LCG keeps it
    // reproducible; 20 seeds, as bench/adaptive.sh runs.
    let factor = |seed: usize, i: usize, run: usize| {
        let mut x = (seed * 1_000_003 + i * 7919 + run * 104_729) as u64;
        for _ in 0..3 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        }
        1.0 + ((x >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * 0.05
    };
    let right = (1..=20)
        .filter(|&s| {
            let (d, _) = search(10, &|i, l, r| CAMPAIGN[i][l] * factor(s, i, r));
            done(&d).0 == Some(3)
        })
        .count();
    assert!(right >= 19, "{right} of 20 seeds picked steps=4");
}
