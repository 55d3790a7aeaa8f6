//! Metric names: dotted paths into a bench record (`ttft_ms.p99`), the
//! friendly aliases people type (`p99_ttft_ms`, `output_tok_per_s`), which
//! direction is better, and reading a metric out of a record.

use serde_json::Value;
use sweepkit::records::{
    BenchRecord, CounterFigure, Counts, GaugeFigure, GpuTelemetry, ServerMetrics, SpecStats, Stats,
    Throughput,
};

/// Which way a metric improves (shared with sweep-plan).
pub use sweepkit::pick::Better;

/// Why a name is no metric (`--metric`, an `--slo` term).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricError {
    #[error("empty metric name")]
    Empty,
    #[error(
        "unknown metric \"{0}\": give a dotted path (ttft_ms.p99, \
         throughput.output_tok_per_s) or an alias (output_tok_per_s, p99_ttft_ms)"
    )]
    Unknown(String),
}

/// A resolved metric: its dotted path and direction.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    pub path: String,
    pub better: Better,
}

/// Every number of a bench record that can be a metric, as a dotted path.
/// Derived from the field lists next to the types in records/ (which a
/// test there checks against the structs), so a new field is not forgotten
/// here. The load shape and server description are labels, not metrics.
pub fn catalog() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for block in BenchRecord::THROUGHPUT_BLOCKS {
        out.extend(Throughput::FIELDS.iter().map(|f| format!("{block}.{f}")));
    }
    for block in BenchRecord::STATS_BLOCKS {
        out.extend(Stats::FIELDS.iter().map(|f| format!("{block}.{f}")));
    }
    out.extend(Counts::FIELDS.iter().map(|f| format!("counts.{f}")));
    out.extend(SpecStats::NUMBERS.iter().map(|f| format!("spec.{f}")));
    out.extend(BenchRecord::NUMBERS.iter().map(|f| f.to_string()));
    // What the server and GPUs measured (explain/).
    let sm = "server_metrics";
    out.extend(ServerMetrics::NUMBERS.iter().map(|f| format!("{sm}.{f}")));
    for g in ServerMetrics::GAUGES {
        out.extend(GaugeFigure::NUMBERS.iter().map(|f| format!("{sm}.{g}.{f}")));
    }
    for c in ServerMetrics::COUNTERS {
        out.extend(
            CounterFigure::NUMBERS
                .iter()
                .map(|f| format!("{sm}.{c}.{f}")),
        );
    }
    out.extend(GpuTelemetry::NUMBERS.iter().map(|f| format!("gpu.{f}")));
    for g in GpuTelemetry::GAUGES {
        out.extend(GaugeFigure::NUMBERS.iter().map(|f| format!("gpu.{g}.{f}")));
    }
    out
}

/// The efficiency figures a pick may name without their block.
const GPU_ALIASES: [&str; 3] = [
    "energy_per_output_token_j",
    "output_tok_per_s_per_w",
    "energy_j",
];

/// Resolve a metric name to a dotted path: a dotted path is kept as is;
/// `output_tok_per_s` -> `throughput.output_tok_per_s`; `p99_ttft_ms` and
/// `ttft_ms_p99` -> `ttft_ms.p99`; `acceptance_rate` -> `spec.acceptance_rate`; a top-level number
/// (`tokens_per_chunk`) is its own path.
pub fn resolve(name: &str) -> Result<String, MetricError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(MetricError::Empty);
    }
    if name.contains('.') || BenchRecord::NUMBERS.contains(&name) {
        return Ok(name.to_string());
    }
    if Throughput::FIELDS.contains(&name) {
        return Ok(format!("throughput.{name}"));
    }
    if SpecStats::NUMBERS.contains(&name) {
        return Ok(format!("spec.{name}"));
    }
    if GPU_ALIASES.contains(&name) {
        return Ok(format!("gpu.{name}"));
    }
    for block in BenchRecord::STATS_BLOCKS {
        for field in Stats::FIELDS {
            if name == format!("{field}_{block}") || name == format!("{block}_{field}") {
                return Ok(format!("{block}.{field}"));
            }
        }
    }
    Err(MetricError::Unknown(name.to_string()))
}

/// Direction from the unit in the name: times (`_ms`, `_s` but not
/// `_per_s`), energy (`_j`) and power (`_w` but not `_per_w`) are better
/// lower; rates, counts and ratios are better higher.
pub fn direction(path: &str) -> Better {
    let is_cost = path.split('.').any(|seg| {
        ((seg.ends_with("_ms") || seg.ends_with("_s")) && !seg.ends_with("per_s"))
            || seg.ends_with("_j")
            || (seg.ends_with("_w") && !seg.ends_with("per_w"))
    });
    if is_cost {
        Better::Lower
    } else {
        Better::Higher
    }
}

/// Resolve `name` into a metric, with direction from its unit unless given.
pub fn metric(name: &str, better: Option<Better>) -> Result<Metric, MetricError> {
    let path = resolve(name)?;
    let better = better.unwrap_or_else(|| direction(&path));
    Ok(Metric { path, better })
}

/// The number at dotted `path` in `record`, if it is there and finite.
/// Numbers written as strings (CSV cells) are accepted.
pub fn lookup(record: &Value, path: &str) -> Option<f64> {
    let mut v = record;
    for seg in path.split('.') {
        v = v.get(seg)?;
    }
    let x = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn aliases_resolve() {
        assert_eq!(
            resolve("output_tok_per_s").unwrap(),
            "throughput.output_tok_per_s"
        );
        assert_eq!(resolve("p99_ttft_ms").unwrap(), "ttft_ms.p99");
        assert_eq!(resolve("e2e_ms_p50").unwrap(), "e2e_ms.p50");
        assert_eq!(resolve("ttft_ms.p99").unwrap(), "ttft_ms.p99");
        assert_eq!(resolve("acceptance_rate").unwrap(), "spec.acceptance_rate");
        assert_eq!(
            resolve("slo_attainment").unwrap(),
            "throughput.slo_attainment"
        );
        assert_eq!(
            resolve("p99_e2e_incl_queue_ms").unwrap(),
            "e2e_incl_queue_ms.p99"
        );
        assert_eq!(resolve("client_cpu_s").unwrap(), "client_cpu_s");
        assert!(resolve("bogus").is_err());
    }

    #[test]
    fn direction_follows_unit() {
        assert_eq!(direction("ttft_ms.p99"), Better::Lower);
        assert_eq!(direction("throughput.elapsed_s"), Better::Lower);
        assert_eq!(direction("throughput.output_tok_per_s"), Better::Higher);
        assert_eq!(direction("spec.acceptance_rate"), Better::Higher);
        assert_eq!(direction("gpu.energy_per_output_token_j"), Better::Lower);
        assert_eq!(direction("gpu.power_w.mean"), Better::Lower);
        assert_eq!(direction("gpu.output_tok_per_s_per_w"), Better::Higher);
        assert_eq!(
            resolve("energy_per_output_token_j").unwrap(),
            "gpu.energy_per_output_token_j"
        );
    }

    #[test]
    fn lookup_reads_numbers_and_numeric_strings() {
        let r = json!({"ttft_ms": {"p99": 12.5}, "x": {"y": "3"}, "z": "no"});
        assert_eq!(lookup(&r, "ttft_ms.p99"), Some(12.5));
        assert_eq!(lookup(&r, "x.y"), Some(3.0));
        assert_eq!(lookup(&r, "z"), None);
        assert_eq!(lookup(&r, "ttft_ms.p50"), None);
    }

    #[test]
    fn tolerance_in_both_directions() {
        assert!(Better::Higher.within(99.5, 100.0, 0.01));
        assert!(!Better::Higher.within(98.9, 100.0, 0.01));
        assert!(Better::Lower.within(100.5, 100.0, 0.01));
        assert!(!Better::Lower.within(101.5, 100.0, 0.01));
    }
}
