//! The table's header line saying how repeats of a latency metric were
//! pooled.

use serde_json::Value;

use crate::analysis::Analysis;
use crate::input::histogram::{latency_stat, pooled as value};

/// The table's header line saying how repeats of a latency metric were
/// pooled, when some cell has several runs.
pub(crate) fn header(a: &Analysis) -> Option<(&'static str, String)> {
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
            "{path} of repeated runs from their merged histograms in {pooled} of {} cells, else the median of the runs' (records without histograms)",
            multi.len()
        )
    };
    Some(("pooled", text))
}
