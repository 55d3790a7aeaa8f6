//! Confidence intervals and the sample sizes percentiles need: pure
//! functions, unit-tested against reference values.
//!
//! Repeats of one cell: the two-sided 95% Student t interval of the mean,
//! mean +- t(0.975, n - 1) s / sqrt(n), s the sample standard deviation
//! (n - 1 in the denominator). This is NVIDIA AIPerf's confidence report
//! over profile runs (`src/aiperf/orchestrator/aggregation/confidence.py`,
//! `_compute_confidence_stats`: `stats.t.ppf(1 - alpha / 2, n - 1) * std /
//! sqrt(n)`); the quantile comes from `statrs`' Student t, not a table.
//!
//! Percentiles from few requests: loadgen's pX interpolates linearly
//! between closest ranks (numpy's default, `loadgen/src/stats.rs`). With
//! fewer than 100 / (100 - X) requests fewer than one of them is expected
//! above the pX, so the figure sits between the two slowest requests: a
//! p99 of 40 requests is nearly their maximum (guidellm issue 243 measured
//! p99 = max at n = 71 and a 23.5% run-to-run spread).

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of every interval summarize shows.
pub const LEVEL: f64 = 0.95;

/// A t interval of the mean of repeated measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TInterval {
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator).
    pub sd: f64,
    pub n: usize,
    /// The critical value t(1 - (1 - level) / 2, n - 1).
    pub t: f64,
    /// t x sd / sqrt(n).
    pub half_width: f64,
}

/// The two-sided Student t critical value for `level` with `df` degrees of
/// freedom (`None` for df < 1 or a level outside (0, 1)).
pub fn t_critical(df: f64, level: f64) -> Option<f64> {
    if df.is_nan() || df < 1.0 || level.is_nan() || level <= 0.0 || level >= 1.0 {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t.inverse_cdf(1.0 - (1.0 - level) / 2.0))
}

/// The `level` t interval of the mean of `xs`; `None` with fewer than two
/// finite values.
pub fn t_interval(xs: &[f64], level: f64) -> Option<TInterval> {
    let v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    let n = v.len();
    if n < 2 {
        return None;
    }
    let mean = v.iter().sum::<f64>() / n as f64;
    let ss: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
    let sd = (ss / (n - 1) as f64).sqrt();
    let t = t_critical((n - 1) as f64, level)?;
    Some(TInterval {
        mean,
        sd,
        n,
        t,
        half_width: t * sd / (n as f64).sqrt(),
    })
}

/// Do two intervals `(centre, half-width)` overlap? Then the difference
/// between them is within noise.
pub fn overlap(a: (f64, f64), b: (f64, f64)) -> bool {
    (a.0 - b.0).abs() <= a.1 + b.1
}

/// The percentile a metric path names (`ttft_ms.p99` -> 99), if any.
pub fn percentile_of(path: &str) -> Option<f64> {
    let last = path.rsplit('.').next()?;
    let p: f64 = last.strip_prefix('p')?.parse().ok()?;
    (p > 0.0 && p < 100.0).then_some(p)
}

/// The fewest requests for which a pX rests on at least one request above
/// it: ceil(100 / (100 - X)); p99 100, p95 20, p90 10, p50 2.
pub fn min_requests(p: f64) -> u64 {
    (100.0 / (100.0 - p) - 1e-9).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values: scipy.stats.t.ppf(0.975, df) (scipy 1.11), the
    /// two-sided 95% points of every t table.
    #[test]
    fn t_quantiles_match_the_reference() {
        let reference = [
            (1.0, 12.706204736174707),
            (2.0, 4.302652729911275),
            (4.0, 2.7764451051977987),
            (9.0, 2.2621571627409915),
            (29.0, 2.045229642132703),
        ];
        for (df, want) in reference {
            let got = t_critical(df, 0.95).unwrap();
            assert!((got - want).abs() < 1e-8, "df {df}: {got} vs {want}");
        }
        // 90%: t.ppf(0.95, 4) = 2.131846786326649.
        let got = t_critical(4.0, 0.90).unwrap();
        assert!((got - 2.131846786326649).abs() < 1e-8, "{got}");
        assert_eq!(t_critical(0.0, 0.95), None);
        assert_eq!(t_critical(3.0, 1.0), None);
    }

    /// A worked interval, computed by hand: 3150, 2950, 3200 ->
    /// mean 3100, deviations 50, -150, 100, s = sqrt(35000 / 2) =
    /// 132.2876, se = s / sqrt 3 = 76.3763, half-width = 4.3026527 x se =
    /// 328.6208 (scipy.stats.t.interval(0.95, 2, 3100, 76.3763) gives
    /// (2771.379, 3428.621)).
    #[test]
    fn interval_of_three_repeats() {
        let i = t_interval(&[3150.0, 2950.0, 3200.0], 0.95).unwrap();
        assert_eq!(i.n, 3);
        assert!((i.mean - 3100.0).abs() < 1e-9);
        assert!((i.sd - 17500f64.sqrt()).abs() < 1e-9);
        let want = 4.302652729911275 * 17500f64.sqrt() / 3f64.sqrt();
        assert!((i.half_width - want).abs() < 1e-6, "{}", i.half_width);
        assert!((i.mean - i.half_width - 2771.379).abs() < 1e-3);
        // Identical repeats: no width. One value: no interval.
        assert_eq!(t_interval(&[5.0, 5.0], 0.95).unwrap().half_width, 0.0);
        assert_eq!(t_interval(&[5.0], 0.95), None);
    }

    #[test]
    fn overlap_is_symmetric_and_inclusive() {
        assert!(overlap((100.0, 5.0), (108.0, 3.0)));
        assert!(!overlap((100.0, 5.0), (108.1, 3.0)));
        assert!(overlap((108.0, 3.0), (100.0, 5.0)));
    }

    #[test]
    fn percentiles_and_their_sample_sizes() {
        assert_eq!(percentile_of("ttft_ms.p99"), Some(99.0));
        assert_eq!(percentile_of("e2e_ms.p50"), Some(50.0));
        assert_eq!(percentile_of("ttft_ms.max"), None);
        assert_eq!(percentile_of("throughput.output_tok_per_s"), None);
        assert_eq!(min_requests(99.0), 100);
        assert_eq!(min_requests(95.0), 20);
        assert_eq!(min_requests(90.0), 10);
        assert_eq!(min_requests(50.0), 2);
        assert_eq!(min_requests(99.9), 1000);
    }
}
