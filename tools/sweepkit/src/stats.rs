//! Robust statistics over repeated runs of one config at one level: the
//! median, the median absolute deviation, and the conservative score
//! decisions are made on. Pure functions, unit-tested here; the one copy
//! the tools share (summarize ranks by it, sweep-plan's adaptive search
//! must agree with summarize's pick).

use crate::pick::Better;

/// Consistency constant that makes the MAD an estimator of the standard
/// deviation for normally distributed data: 1 / Φ⁻¹(3/4) ≈ 1.4826.
/// Source: Rousseeuw, P. J. & Croux, C. (1993), "Alternatives to the Median
/// Absolute Deviation", JASA 88(424), 1273-1283, eq. (1.1); the same constant
/// scales the modified z-scores in hyperfine's `outlier_detection.rs`
/// (Iglewicz & Hoaglin 1993) and the score of vLLM's unmerged
/// `tune_speculative_k` (median - 1.4826 x MAD).
pub const MAD_TO_SIGMA: f64 = 1.4826;

/// The median of `xs` (mean of the two middle values for an even count:
/// `numpy.median`, and Hyndman & Fan (1996) definition 7 at p = 0.5, the
/// rule loadgen's percentiles follow). `None` for an empty slice.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Median absolute deviation: median(|x_i - median(x)|), unscaled.
pub fn mad(xs: &[f64]) -> Option<f64> {
    let m = median(xs)?;
    let dev: Vec<f64> = xs.iter().map(|x| (x - m).abs()).collect();
    median(&dev)
}

/// The conservative score of repeated measurements: the median moved
/// against the user by one robust standard deviation (1.4826 x MAD), so a
/// config that is fast only sometimes does not win over one that is fast
/// every time. Higher-is-better metrics: median - 1.4826 x MAD; lower-is-
/// better metrics (latencies): median + 1.4826 x MAD. One run: the value.
pub fn conservative(xs: &[f64], better: Better) -> Option<f64> {
    let m = median(xs)?;
    let s = MAD_TO_SIGMA * mad(xs)?;
    Some(match better {
        Better::Higher => m - s,
        Better::Lower => m + s,
    })
}

/// The spread between repeats: max - min (0 for a single run).
pub fn range(xs: &[f64]) -> f64 {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        0.0
    } else {
        hi - lo
    }
}

/// Relative change of `x` against `base` in percent: 100 x (x - base) / base.
/// `None` when the base is zero (no meaningful ratio).
pub fn change_pct(x: f64, base: f64) -> Option<f64> {
    if base == 0.0 || !base.is_finite() || !x.is_finite() {
        return None;
    }
    Some(100.0 * (x - base) / base.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_odd_even_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn mad_of_known_sample() {
        // |x - 3| = 2,1,0,1,6 -> sorted 0,1,1,2,6 -> median 1.
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 9.0]), Some(1.0));
        assert_eq!(mad(&[5.0]), Some(0.0));
        // Even count: median 2.5, |x - 2.5| = 1.5, 0.5, 0.5, 1.5 -> 1.0.
        assert_eq!(mad(&[4.0, 1.0, 3.0, 2.0]), Some(1.0));
        assert_eq!(mad(&[]), None);
    }

    #[test]
    fn conservative_moves_against_the_user() {
        // median 3150, |dev| = 0, 200, 50 -> MAD 50 -> 3150 - 74.13.
        let xs = [3150.0, 2950.0, 3200.0];
        let hi = conservative(&xs, Better::Higher).unwrap();
        assert!((hi - (3150.0 - 1.4826 * 50.0)).abs() < 1e-9, "{hi}");
        let lo = conservative(&xs, Better::Lower).unwrap();
        assert!((lo - (3150.0 + 1.4826 * 50.0)).abs() < 1e-9, "{lo}");
        assert_eq!(conservative(&[42.0], Better::Higher), Some(42.0));
        assert_eq!(conservative(&[], Better::Lower), None);
    }

    #[test]
    fn range_and_change() {
        assert_eq!(range(&[3.0, 9.0, 5.0]), 6.0);
        assert_eq!(range(&[3.0]), 0.0);
        assert_eq!(change_pct(150.0, 100.0), Some(50.0));
        assert_eq!(change_pct(1.0, 0.0), None);
    }
}
