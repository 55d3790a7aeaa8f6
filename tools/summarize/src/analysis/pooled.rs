//! A table cell measured several times (starts, `--repeat` runs,
//! windows) takes the percentile of its records' merged histograms, where
//! every record carries one, not the median of their percentiles.

use serde_json::Value;

use crate::input::histogram;
use crate::input::{Body, Obs};

/// A cell's median and conservative score, with the median replaced by the
/// pooled value where the cell has several runs that all carry the
/// distribution (the score keeps its distance from the median).
pub(crate) fn cell(median: f64, score: f64, runs: &[usize], obs: &[Obs], path: &str) -> (f64, f64) {
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
    match histogram::pooled(&recs, path) {
        Some(p) => (p, score - median + p),
        None => (median, score),
    }
}
