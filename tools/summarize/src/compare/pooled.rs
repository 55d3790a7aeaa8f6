//! Pooled latency percentiles for summarize's table: a cell measured
//! several times (starts, `--repeat` runs, windows) gets the percentile of
//! its records' merged histograms, where every record carries one, not
//! the median of their percentiles (a p99 cannot be had from p99s).

use serde_json::Value;
use sweepkit::records::histogram::codec;

use super::verdict::{hist_of, latency_stat};
use crate::analysis::Analysis;
use crate::input::{Body, Obs};

/// The pooled value of `path` (`ttft_ms.p99`, `e2e_ms.mean`) over `recs`;
/// `None` when the metric has no distribution or a record lacks one.
pub fn value(recs: &[&Value], path: &str) -> Option<f64> {
    let (block, stat) = latency_stat(path)?;
    let hs: Option<Vec<codec::Hist>> = recs.iter().map(|r| hist_of(r, block)).collect();
    let merged = codec::merge(&hs?);
    stat.of(&codec::buckets_ms(&merged))
}

/// A cell's median and conservative score, with the median replaced by the
/// pooled value where the cell has several runs that all carry the
/// distribution (the score keeps its distance from the median).
pub fn cell(median: f64, score: f64, runs: &[usize], obs: &[Obs], path: &str) -> (f64, f64) {
    if runs.len() < 2 {
        return (median, score);
    }
    let recs: Vec<&Value> = runs
        .iter()
        .filter_map(|&i| match &obs[i].body {
            Body::Bench(v) => Some(v),
            Body::Failure(_) => None,
        })
        .collect();
    match value(&recs, path) {
        Some(p) => (p, score - median + p),
        None => (median, score),
    }
}

/// The table's header line saying how repeats of a latency metric were
/// pooled, when some cell has several runs.
pub fn header(a: &Analysis) -> Option<(&'static str, String)> {
    let path = &a.opts.metric.path;
    latency_stat(path)?;
    let multi: Vec<Vec<&Value>> = a
        .records
        .iter()
        .flatten()
        .filter(|recs| recs.len() > 1)
        .map(|recs| recs.iter().collect())
        .collect();
    if multi.is_empty() {
        return None;
    }
    let pooled = multi.iter().filter(|r| value(r, path).is_some()).count();
    let text = if pooled == multi.len() {
        format!("{path} of repeated runs from their merged histograms")
    } else if pooled == 0 {
        format!("median of the runs' {path} (records without histograms)")
    } else {
        format!(
            "{path} of repeated runs from their merged histograms in {pooled} of {}              cells, else the median of the runs' (records without histograms)",
            multi.len()
        )
    };
    Some(("pooled", text))
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
        assert!(near(value(&[&a, &b], "ttft_ms.p50")));
        assert!(near(value(&[&a, &b], "ttft_ms.mean")));
        let old = serde_json::json!({ "ttft_ms": { "p50": 9.0 } });
        assert_eq!(value(&[&a, &old], "ttft_ms.p50"), None);
        assert_eq!(value(&[&a], "tpot_ms.p50"), None, "no tpot samples");
        assert_eq!(value(&[&a], "throughput.output_tok_per_s"), None);
    }
}
