//! What the server itself measured during a level (loadgen samples its
//! `/metrics` at the level's start and end and every `--scrape-interval`
//! between), what the GPUs drew (`--gpu-metrics`), and the capacity the
//! server started with (read once when loadgen connects). A figure the
//! server does not publish is absent, never zero.

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// A gauge sampled during a level: mean and peak over the scrapes in the
/// window (`ServerMetrics.gauge_window`; for GPU telemetry, every sample
/// of the level), and the metric it was read from.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GaugeFigure {
    /// The mean of the samples.
    pub mean: f64,
    /// The highest sample.
    pub peak: f64,
    /// Scrapes (or GPU samples) that carried it.
    pub samples: u64,
    /// The metric read, as the server names it (`vllm:kv_cache_usage_perc`,
    /// `sglang:token_usage`, `DCGM_FI_DEV_POWER_USAGE`, nvidia-smi's
    /// `power.draw`); several label sets (engines, ranks, GPUs) add up,
    /// except ratios, which are averaged.
    pub source: String,
}

impl GaugeFigure {
    /// The numeric fields (metrics such as `server_metrics.kv_cache_usage_ratio.peak`).
    pub const NUMBERS: [&'static str; 3] = ["mean", "peak", "samples"];
}

/// A counter over a level: its increase from the level's first scrape to
/// its last, reset-aware (a drop between two scrapes is a restart of the
/// counter, and the value after it counts as increase, as Prometheus's
/// `increase()` does).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CounterFigure {
    /// How much it grew from the level's first scrape to its last.
    pub increase: f64,
    /// Drops seen between two scrapes (a server restart).
    #[serde(default)]
    pub resets: u64,
    /// The metric read, as the server names it (`vllm:num_preemptions_total`).
    pub source: String,
}

impl CounterFigure {
    /// The numeric fields.
    pub const NUMBERS: [&'static str; 2] = ["increase", "resets"];
}

/// Over which scrapes a level's gauges are averaged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MetricsWindow {
    /// The closed loop's steady window (ramp-up and drain left out), when
    /// a scrape fell in it.
    Steady,
    /// The scrapes between the level's first and last: those two are
    /// taken before its first request and after its last, on an idle
    /// server, and never count for a gauge. A level shorter than the
    /// interval has none, and its gauges are absent.
    #[default]
    Level,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// The server's own figures over one level, from its Prometheus `/metrics`
/// (vLLM always; SGLang with `--enable-metrics`; llama.cpp with
/// `--metrics`). Absent when the server serves no `/metrics`, or with
/// `loadgen --no-scrape`; each figure is absent when the server does not
/// publish its metric. loadgen(1) SERVER METRICS names every source.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ServerMetrics {
    /// Scrapes that answered during the level, its start and end included.
    pub scrapes: u64,
    /// Scrapes that failed (timeout, HTTP error); not in `scrapes`.
    #[serde(default)]
    pub scrape_errors: u64,
    /// `--scrape-interval`, seconds.
    pub interval_s: f64,
    /// Which scrapes the gauges cover: `steady` or `level`.
    #[serde(default)]
    pub gauge_window: MetricsWindow,
    /// KV cache in use, 0 to 1 (vLLM `vllm:kv_cache_usage_perc`, SGLang
    /// `sglang:token_usage`, llama.cpp `llamacpp:kv_cache_usage_ratio`
    /// where the build has it).
    pub kv_cache_usage_ratio: Option<GaugeFigure>,
    /// Requests the server runs (vLLM `vllm:num_requests_running`, SGLang
    /// `sglang:num_running_reqs`, llama.cpp `llamacpp:requests_processing`).
    pub running_requests: Option<GaugeFigure>,
    /// Requests waiting in the server's queue (vLLM
    /// `vllm:num_requests_waiting`, SGLang `sglang:num_queue_reqs`,
    /// llama.cpp `llamacpp:requests_deferred`).
    pub waiting_requests: Option<GaugeFigure>,
    /// SGLang's `sglang:cache_hit_rate` (prefix cache, recent batches).
    pub prefix_cache_hit_rate: Option<GaugeFigure>,
    /// SGLang's `sglang:spec_accept_length` (its last logging window).
    pub spec_accept_length: Option<GaugeFigure>,
    /// Requests preempted for KV (vLLM `vllm:num_preemptions_total`; SGLang
    /// retractions, `sglang:num_retracted_requests_total`).
    pub preemptions: Option<CounterFigure>,
    /// Prompt tokens looked up in the prefix cache (vLLM
    /// `vllm:prefix_cache_queries_total`).
    pub prefix_cache_queried_tokens: Option<CounterFigure>,
    /// Prompt tokens found in the prefix cache (vLLM
    /// `vllm:prefix_cache_hits_total`).
    pub prefix_cache_hit_tokens: Option<CounterFigure>,
    /// Speculative verify steps (vLLM `vllm:spec_decode_num_drafts_total`,
    /// llama.cpp the same name under `llamacpp:`).
    pub spec_drafts: Option<CounterFigure>,
    /// Draft tokens proposed (`..._spec_decode_num_draft_tokens_total`).
    pub spec_draft_tokens: Option<CounterFigure>,
    /// Draft tokens accepted (`..._spec_decode_num_accepted_tokens_total`).
    pub spec_accepted_tokens: Option<CounterFigure>,
}

impl ServerMetrics {
    /// The numbers at the block's top level.
    pub const NUMBERS: [&'static str; 3] = ["scrapes", "scrape_errors", "interval_s"];
    /// The gauge fields (each a [`GaugeFigure`]).
    pub const GAUGES: [&'static str; 5] = [
        "kv_cache_usage_ratio",
        "running_requests",
        "waiting_requests",
        "prefix_cache_hit_rate",
        "spec_accept_length",
    ];
    /// The counter fields (each a [`CounterFigure`]).
    pub const COUNTERS: [&'static str; 6] = [
        "preemptions",
        "prefix_cache_queried_tokens",
        "prefix_cache_hit_tokens",
        "spec_drafts",
        "spec_draft_tokens",
        "spec_accepted_tokens",
    ];

    /// True when no figure was read (a `/metrics` that names none of ours).
    pub fn is_empty(&self) -> bool {
        let g = [
            &self.kv_cache_usage_ratio,
            &self.running_requests,
            &self.waiting_requests,
            &self.prefix_cache_hit_rate,
            &self.spec_accept_length,
        ];
        let c = [
            &self.preemptions,
            &self.prefix_cache_queried_tokens,
            &self.prefix_cache_hit_tokens,
            &self.spec_drafts,
            &self.spec_draft_tokens,
            &self.spec_accepted_tokens,
        ];
        g.iter().all(|x| x.is_none()) && c.iter().all(|x| x.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::super::gpu::GpuTelemetry;
    use super::*;
    use serde_json::Value;

    fn keys(v: &Value) -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    fn sorted(xs: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = xs.iter().map(|s| s.to_string()).collect();
        v.sort();
        v
    }

    /// The field lists summarize's metric catalog is built from match the
    /// structs.
    #[test]
    fn lists_match_the_structs() {
        let g = GaugeFigure::default();
        let mut gk = sorted(&GaugeFigure::NUMBERS);
        gk.push("source".into());
        gk.sort();
        assert_eq!(keys(&serde_json::to_value(&g).unwrap()), gk);
        let c = CounterFigure::default();
        let mut ck = sorted(&CounterFigure::NUMBERS);
        ck.push("source".into());
        ck.sort();
        assert_eq!(keys(&serde_json::to_value(&c).unwrap()), ck);
        let m = ServerMetrics {
            kv_cache_usage_ratio: Some(g.clone()),
            running_requests: Some(g.clone()),
            waiting_requests: Some(g.clone()),
            prefix_cache_hit_rate: Some(g.clone()),
            spec_accept_length: Some(g.clone()),
            preemptions: Some(c.clone()),
            prefix_cache_queried_tokens: Some(c.clone()),
            prefix_cache_hit_tokens: Some(c.clone()),
            spec_drafts: Some(c.clone()),
            spec_draft_tokens: Some(c.clone()),
            spec_accepted_tokens: Some(c),
            ..ServerMetrics::default()
        };
        assert!(!m.is_empty());
        assert!(ServerMetrics::default().is_empty());
        let mut all: Vec<&str> = ServerMetrics::NUMBERS.to_vec();
        all.extend(ServerMetrics::GAUGES);
        all.extend(ServerMetrics::COUNTERS);
        all.push("gauge_window");
        assert_eq!(keys(&serde_json::to_value(&m).unwrap()), sorted(&all));
        let t = GpuTelemetry {
            power_w: Some(g.clone()),
            energy_j: Some(1.0),
            energy_method: Some(super::super::gpu::EnergyMethod::Counter),
            memory_used_mib: Some(g.clone()),
            utilization_pct: Some(g),
            energy_per_output_token_j: Some(1.0),
            output_tok_per_s_per_w: Some(1.0),
            ..GpuTelemetry::default()
        };
        let mut all: Vec<&str> = GpuTelemetry::NUMBERS.to_vec();
        all.extend(GpuTelemetry::GAUGES);
        all.extend(["source", "origin", "energy_method"]);
        assert_eq!(keys(&serde_json::to_value(&t).unwrap()), sorted(&all));
    }
}
