//! The latency distributions a bench record carries (`histograms`): which
//! statistic of which block a metric path names, a record's decoded
//! histogram, and the pooled value of several records' merged histograms
//! (a p99 cannot be had from p99s). Read by the table's cells and by
//! `--compare`.

use serde_json::Value;
use sweepkit::records::histogram::codec::{self, percentile_of_buckets, Hist};
use sweepkit::records::Histograms;

/// What a bootstrap computes on one resample: a percentile (0..=100) or
/// the mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Statistic {
    Percentile(f64),
    Mean,
}

impl Statistic {
    /// The statistic of (value, count) buckets in ascending order.
    pub(crate) fn of(self, b: &[(f64, u64)]) -> Option<f64> {
        match self {
            Statistic::Percentile(q) => percentile_of_buckets(b, q),
            Statistic::Mean => {
                let n: u64 = b.iter().map(|(_, c)| c).sum();
                (n > 0).then(|| b.iter().map(|(x, c)| x * *c as f64).sum::<f64>() / n as f64)
            }
        }
    }
}

/// The distributions a latency metric can be read from: its block
/// (`ttft_ms`) and statistic (`p99`).
pub(crate) fn latency_stat(path: &str) -> Option<(&str, Statistic)> {
    let (block, field) = path.split_once('.')?;
    Histograms::BLOCKS.iter().find(|(b, _)| *b == block)?;
    let stat = match field {
        "mean" => Statistic::Mean,
        p => Statistic::Percentile(p.strip_prefix('p')?.parse::<f64>().ok()?),
    };
    Some((block, stat))
}

/// A record's histogram of `block`, when it has one that reads.
pub(crate) fn hist_of(rec: &Value, block: &str) -> Option<Hist> {
    let h: Histograms = serde_json::from_value(rec.get("histograms")?.clone()).ok()?;
    codec::decode(h.of_block(block)?).ok()
}

/// The pooled value of `path` (`ttft_ms.p99`, `e2e_ms.mean`) over `recs`;
/// `None` when the metric has no distribution or a record lacks one.
pub(crate) fn pooled(recs: &[&Value], path: &str) -> Option<f64> {
    let (block, stat) = latency_stat(path)?;
    let hs: Option<Vec<codec::Hist>> = recs.iter().map(|r| hist_of(r, block)).collect();
    let merged = codec::merge(&hs?);
    stat.of(&codec::buckets_ms(&merged))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sweepkit::records::histogram::codec::histograms;

    fn rec(ttft: &[f64]) -> Value {
        serde_json::json!({ "histograms": histograms(ttft, &[], &[], &[]) })
    }

    #[test]
    fn pools_every_record_or_none() {
        let a = rec(&[1.0, 2.0, 3.0]);
        let b = rec(&[4.0, 5.0, 6.0, 7.0]);
        // Seven samples 1..7: the median is 4, not the median of 2 and 5.5.
        let near = |x: Option<f64>| (x.unwrap() - 4.0).abs() <= 4.0 * 0.001;
        assert!(near(pooled(&[&a, &b], "ttft_ms.p50")));
        assert!(near(pooled(&[&a, &b], "ttft_ms.mean")));
        let old = serde_json::json!({ "ttft_ms": { "p50": 9.0 } });
        assert_eq!(pooled(&[&a, &old], "ttft_ms.p50"), None);
        assert_eq!(pooled(&[&a], "tpot_ms.p50"), None, "no tpot samples");
        assert_eq!(pooled(&[&a], "throughput.output_tok_per_s"), None);
    }
}
