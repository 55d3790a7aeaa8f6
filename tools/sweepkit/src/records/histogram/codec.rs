//! Building, encoding, merging and reading the latency histograms of
//! `Histograms` (the `histogram` feature: loadgen writes them, summarize
//! pools and tests them).
//!
//! Percentiles read back use the same rule as loadgen's `stats.rs` (numpy's
//! default linear interpolation between closest ranks, Hyndman & Fan 1996
//! definition 7) on each bucket's midpoint, so a percentile of merged
//! histograms equals the percentile of the concatenated samples within the
//! stated relative error: each sample lies within half a bucket of its
//! midpoint, and HdrHistogram's buckets at `d` significant digits are at
//! most 1 part in 10^d of their values wide (Gil Tene, HdrHistogram,
//! "value precision"; 1/1024 for d = 3).

use std::io::Cursor;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use super::{Histograms, HDR_ENCODING};

/// One distribution: counts of whole microseconds.
pub type Hist = Histogram<u64>;

/// The precision every histogram is written at.
pub const SIGNIFICANT_DIGITS: u8 = 3;
/// The bound the record states for `SIGNIFICANT_DIGITS` (10^-3).
pub const RELATIVE_ERROR: f64 = 0.001;

/// An empty histogram at the written precision (grows as values come).
pub fn new() -> Hist {
    Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits is a valid precision")
}

/// Count `ms` (rounded to whole microseconds) `count` times; a value that
/// is not finite or below zero is not a latency and is skipped.
pub fn record_ms(h: &mut Hist, ms: f64, count: u64) {
    if !ms.is_finite() || ms < 0.0 || count == 0 {
        return;
    }
    let us = (ms * 1000.0).round() as u64;
    // Auto-resizing histograms take any u64: the error cannot happen.
    let _ = h.record_n(us, count);
}

/// A histogram of unweighted samples (ms).
pub fn of_ms(samples: &[f64]) -> Hist {
    let mut h = new();
    for &x in samples {
        record_ms(&mut h, x, 1);
    }
    h
}

/// A histogram of `(value ms, weight)` samples, each weight rounded to
/// whole observations (a k-token chunk's per-token gap counts k times).
pub fn of_weighted_ms(samples: &[(f64, f64)]) -> Hist {
    let mut h = new();
    for &(x, w) in samples {
        if w.is_finite() && w > 0.0 {
            record_ms(&mut h, x, w.round() as u64);
        }
    }
    h
}

/// The encoded form (V2 compressed, base64); `None` for no samples.
pub fn encode(h: &Hist) -> Option<String> {
    if h.is_empty() {
        return None;
    }
    let mut buf = Vec::new();
    V2DeflateSerializer::new().serialize(h, &mut buf).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// Read an encoded histogram (V2, compressed or not, base64).
pub fn decode(s: &str) -> Result<Hist, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| format!("not base64: {e}"))?;
    Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .map_err(|e| format!("not an HdrHistogram V2 payload: {e:?}"))
}

/// The record block for a level's samples.
pub fn histograms(ttft: &[f64], tpot: &[f64], itl: &[(f64, f64)], e2e: &[f64]) -> Histograms {
    Histograms {
        encoding: HDR_ENCODING.to_string(),
        significant_digits: u32::from(SIGNIFICANT_DIGITS),
        relative_error: RELATIVE_ERROR,
        ttft_us: encode(&of_ms(ttft)),
        tpot_us: encode(&of_ms(tpot)),
        itl_us: encode(&of_weighted_ms(itl)),
        e2e_us: encode(&of_ms(e2e)),
    }
}

/// The sum of several histograms (starts, windows, repeats).
pub fn merge<'a>(hs: impl IntoIterator<Item = &'a Hist>) -> Hist {
    let mut out = new();
    for h in hs {
        // Both sides auto-resize: adding cannot fail.
        let _ = out.add(h);
    }
    out
}

/// Each non-empty bucket as (the middle of its values in ms, its count),
/// ascending.
pub fn buckets_ms(h: &Hist) -> Vec<(f64, u64)> {
    h.iter_recorded()
        .map(|v| {
            // Values are whole microseconds: a bucket of [lo, hi] holds
            // lo..=hi, whose middle is (lo + hi) / 2 (exact for width 1).
            let hi = v.value_iterated_to();
            let lo = h.lowest_equivalent(hi);
            ((lo + hi) as f64 / 2000.0, v.count_at_value())
        })
        .collect()
}

/// The `q`th percentile (0..=100) in ms, by linear interpolation between
/// closest ranks on bucket midpoints; `None` for an empty histogram.
pub fn percentile_ms(h: &Hist, q: f64) -> Option<f64> {
    percentile_of_buckets(&buckets_ms(h), q)
}

/// [`percentile_ms`] on (value, count) pairs in ascending order.
pub fn percentile_of_buckets(b: &[(f64, u64)], q: f64) -> Option<f64> {
    let n: u64 = b.iter().map(|(_, c)| c).sum();
    if n == 0 {
        return None;
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 100.0) / 100.0;
    let lo = h.floor() as u64;
    let a = value_at_rank(b, lo);
    let z = value_at_rank(b, (lo + 1).min(n - 1));
    Some(a + (h - lo as f64) * (z - a))
}

/// The value of the observation at 0-based rank `r`.
fn value_at_rank(b: &[(f64, u64)], r: u64) -> f64 {
    let mut cum = 0;
    for &(x, c) in b {
        cum += c;
        if r < cum {
            return x;
        }
    }
    b.last().map_or(0.0, |(x, _)| *x)
}

/// The mean in ms over bucket midpoints.
pub fn mean_ms(h: &Hist) -> Option<f64> {
    let b = buckets_ms(h);
    let n: u64 = b.iter().map(|(_, c)| c).sum();
    (n > 0).then(|| b.iter().map(|(x, c)| x * *c as f64).sum::<f64>() / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's linear percentile of sorted samples (loadgen's rule).
    fn exact(sorted: &[f64], q: f64) -> f64 {
        let h = (sorted.len() - 1) as f64 * q / 100.0;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(sorted.len() - 1);
        sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
    }

    #[test]
    fn encode_decode_round_trips_and_merges() {
        let a = of_ms(&[1.5, 20.25, 300.0, 4000.125]);
        let s = encode(&a).unwrap();
        assert!(s.starts_with("HISTF"), "{s}");
        let back = decode(&s).unwrap();
        assert_eq!(buckets_ms(&back), buckets_ms(&a));
        let m = merge([&back, &of_ms(&[7.0])]);
        assert_eq!(m.len(), 5);
        assert_eq!(encode(&new()), None);
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn merged_percentiles_match_the_samples_within_the_stated_error() {
        // Three "starts" with different spreads, concatenated.
        let mut all = Vec::new();
        let mut parts = Vec::new();
        for s in 0..3u32 {
            let xs: Vec<f64> = (0..400u32)
                .map(|i| {
                    let u = f64::from((i * 7919 + s * 104729) % 1000) / 1000.0;
                    0.3 + 50.0 * f64::from(s + 1) * u * u * u
                })
                .collect();
            all.extend_from_slice(&xs);
            parts.push(of_ms(&xs));
        }
        all.sort_by(f64::total_cmp);
        let m = merge(&parts);
        for q in [50.0, 90.0, 95.0, 99.0, 99.9] {
            let got = percentile_ms(&m, q).unwrap();
            let want = exact(&all, q);
            let bound = RELATIVE_ERROR * want + 0.0005;
            assert!((got - want).abs() <= bound, "p{q}: {got} vs {want}");
        }
        let mean = all.iter().sum::<f64>() / all.len() as f64;
        assert!((mean_ms(&m).unwrap() - mean).abs() <= RELATIVE_ERROR * mean + 0.0005);
    }

    #[test]
    fn weighted_itl_counts_each_token() {
        let h = of_weighted_ms(&[(10.0, 3.0), (2.0, 1.0), (5.0, 0.2)]);
        assert_eq!(h.len(), 4, "0.2 of a token rounds to none");
        let p50 = percentile_ms(&h, 50.0).unwrap();
        assert!((p50 - 10.0).abs() <= 10.0 * RELATIVE_ERROR, "{p50}");
        let rec = histograms(&[1.0], &[], &[(1.0, 1.0)], &[2.0]);
        assert!(rec.ttft_us.is_some() && rec.tpot_us.is_none());
        assert_eq!(rec.encoding, HDR_ENCODING);
    }
}
