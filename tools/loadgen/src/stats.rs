//! Summary statistics (mean, percentiles, max) of latency samples: a pure
//! module so the formulas can be unit-tested and cited.
//!
//! Percentiles use linear interpolation between closest ranks, the
//! definition of numpy's default `np.percentile(a, q)` (method "linear",
//! Hyndman & Fan 1996 definition 7, also Excel's PERCENTILE.INC): for sorted
//! samples x[0..n), rank h = (n - 1) * q / 100, result
//! x[floor h] + (h - floor h) * (x[floor h + 1] - x[floor h]).
//! vLLM's `bench serve` calls `np.percentile`, so our p50/p99 are directly
//! comparable with its output.

use sweepkit::records::Stats;

/// Linear-interpolation percentile (numpy default) of already sorted data.
/// `q` is in percent (0..=100). Returns 0 for no samples.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        n => {
            let h = (n - 1) as f64 * q.clamp(0.0, 100.0) / 100.0;
            let lo = h.floor() as usize;
            let hi = (lo + 1).min(n - 1);
            sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
        }
    }
}

/// Arithmetic mean; 0 for no samples.
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Summary of samples (any order; NaN samples are dropped). Unweighted.
pub fn summarize(samples: &[f64]) -> Stats {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(|a, b| a.total_cmp(b));
    Stats {
        count: v.len() as u64,
        mean: round3(mean(&v)),
        p50: round3(percentile_sorted(&v, 50.0)),
        p90: round3(percentile_sorted(&v, 90.0)),
        p95: round3(percentile_sorted(&v, 95.0)),
        p99: round3(percentile_sorted(&v, 99.0)),
        max: round3(v.last().copied().unwrap_or(0.0)),
    }
}

/// Summary of `(value, weight)` samples: each value stands for `weight`
/// observations (a k-token chunk's per-token gap stands for k tokens, and
/// k need not be whole when tokens are apportioned). Percentiles follow the
/// same linear-interpolation rule on the cumulative weight: the rank
/// h = (W - 1) * q / 100 in observation units, W the total weight. With
/// integer weights this equals `summarize` on the expanded samples.
pub fn summarize_weighted(samples: &[(f64, f64)]) -> Stats {
    let mut v: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(x, w)| x.is_finite() && *w > 0.0)
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = v.iter().map(|(_, w)| w).sum();
    if v.is_empty() {
        return Stats::default();
    }
    let mean = v.iter().map(|(x, w)| x * w).sum::<f64>() / total;
    let pct = |q: f64| weighted_percentile(&v, total, q);
    Stats {
        count: total.round() as u64,
        mean: round3(mean),
        p50: round3(pct(50.0)),
        p90: round3(pct(90.0)),
        p95: round3(pct(95.0)),
        p99: round3(pct(99.0)),
        max: round3(v.last().map(|(x, _)| *x).unwrap_or(0.0)),
    }
}

/// The value at 0-based observation rank `r` (fractional) of sorted
/// weighted samples: observation i (0-based) of the expanded sequence lies
/// in the sample whose cumulative weight first exceeds i.
fn value_at_rank(v: &[(f64, f64)], r: f64) -> f64 {
    let mut cum = 0.0;
    for (x, w) in v {
        cum += w;
        if r < cum - 1e-9 {
            return *x;
        }
    }
    v.last().map(|(x, _)| *x).unwrap_or(0.0)
}

fn weighted_percentile(v: &[(f64, f64)], total: f64, q: f64) -> f64 {
    let h = ((total - 1.0).max(0.0)) * q.clamp(0.0, 100.0) / 100.0;
    let lo = h.floor();
    let a = value_at_rank(v, lo);
    let b = value_at_rank(v, (lo + 1.0).min((total - 1.0).max(0.0)));
    a + (h - lo) * (b - a)
}

/// Round to 3 decimals (microseconds when the unit is ms): more digits
/// than the clock resolution only add noise to records.
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_matches_numpy_linear() {
        // np.percentile([1,2,3,4], [50, 90, 99]) == [2.5, 3.7, 3.97]
        let v = [1.0, 2.0, 3.0, 4.0];
        assert!((percentile_sorted(&v, 50.0) - 2.5).abs() < 1e-12);
        assert!((percentile_sorted(&v, 90.0) - 3.7).abs() < 1e-12);
        assert!((percentile_sorted(&v, 99.0) - 3.97).abs() < 1e-12);
        assert_eq!(percentile_sorted(&v, 0.0), 1.0);
        assert_eq!(percentile_sorted(&v, 100.0), 4.0);
        // np.percentile(range(1, 101), 99) == 99.01
        let r: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!((percentile_sorted(&r, 99.0) - 99.01).abs() < 1e-9);
    }

    #[test]
    fn summarize_sorts_and_ignores_nan() {
        let s = summarize(&[3.0, f64::NAN, 1.0, 2.0]);
        assert_eq!(s.count, 3);
        assert_eq!(s.mean, 2.0);
        assert_eq!(s.p50, 2.0);
        assert_eq!(s.max, 3.0);
        assert_eq!(summarize(&[]), Stats::default());
    }

    #[test]
    fn weighted_equals_expanded_for_integer_weights() {
        let w = [(10.0, 3.0), (1.0, 1.0), (5.0, 2.0)];
        let expanded = [10.0, 10.0, 10.0, 1.0, 5.0, 5.0];
        let a = summarize_weighted(&w);
        let b = summarize(&expanded);
        assert_eq!(a, b);
    }

    #[test]
    fn weighted_mean_counts_each_token() {
        // One 4-token chunk after a 40 ms gap (10 ms per token) and one
        // 1-token chunk after 10 ms: per-token ITL is 10 ms everywhere,
        // where a per-chunk view would say 25 ms mean.
        let s = summarize_weighted(&[(10.0, 4.0), (10.0, 1.0)]);
        assert_eq!(s.count, 5);
        assert_eq!(s.mean, 10.0);
        assert_eq!(s.p99, 10.0);
    }
}
