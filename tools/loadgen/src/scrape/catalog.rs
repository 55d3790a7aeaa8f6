//! The server metrics loadgen reads, by the names each server publishes,
//! and one scrape's values (`Snapshot`). Every name is read from the
//! server's own source:
//!
//! - vLLM 0.32 `vllm/v1/metrics/loggers.py` `PrometheusStatLogger`:
//!   `vllm:kv_cache_usage_perc` (a gauge, "1 means 100 percent usage"),
//!   `vllm:num_requests_running`, `vllm:num_requests_waiting`, the counters
//!   `vllm:num_preemptions`, `vllm:prefix_cache_queries`,
//!   `vllm:prefix_cache_hits` (prometheus_client appends `_total`);
//!   `vllm/v1/spec_decode/metrics.py` `SpecDecodingProm`:
//!   `vllm:spec_decode_num_drafts`, `_num_draft_tokens`,
//!   `_num_accepted_tokens` (also `_total`).
//! - SGLang 0.5.23 `python/sglang/srt/observability/metrics_collector.py`
//!   (`srt/metrics/collector.py` before) `SchedulerMetricsCollector`:
//!   gauges `sglang:token_usage`, `sglang:num_running_reqs`,
//!   `sglang:num_queue_reqs`, `sglang:cache_hit_rate`,
//!   `sglang:spec_accept_length`, and the counter
//!   `sglang:num_retracted_requests_total` (a request retracted for KV is
//!   SGLang's preemption; a labelled counter appears only once it counted).
//! - llama.cpp `tools/server/server-task.cpp`
//!   `server_task_result_metrics::to_metrics` (in `server.cpp` before):
//!   gauges `llamacpp:requests_processing`, `llamacpp:requests_deferred`,
//!   counters `llamacpp:spec_decode_num_*_total`; older builds also
//!   published `llamacpp:kv_cache_usage_ratio` (its `server/bench/bench.py`
//!   still reads it), the build installed here does not.
//!
//! llm-sim serves the names of the personality it imitates (llama.cpp's
//! only with `--metrics`, as llama-server).

use std::time::Instant;

use sweepkit::prom;

use crate::speculative::SpecCounters;

/// One figure of the record's `server_metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    KvUsage,
    Running,
    Waiting,
    PrefixHitRate,
    SpecAcceptLength,
    Preemptions,
    PrefixQueried,
    PrefixHit,
    SpecDrafts,
    SpecDraftTokens,
    SpecAccepted,
}

/// Every figure, in the order `Snapshot.values` holds them.
pub const FIGURES: [Figure; 11] = [
    Figure::KvUsage,
    Figure::Running,
    Figure::Waiting,
    Figure::PrefixHitRate,
    Figure::SpecAcceptLength,
    Figure::Preemptions,
    Figure::PrefixQueried,
    Figure::PrefixHit,
    Figure::SpecDrafts,
    Figure::SpecDraftTokens,
    Figure::SpecAccepted,
];

impl Figure {
    fn index(self) -> usize {
        FIGURES.iter().position(|f| *f == self).unwrap_or(0)
    }

    /// A counter (increase over the level) rather than a gauge.
    pub fn is_counter(self) -> bool {
        self.index() >= Figure::Preemptions.index()
    }

    /// A ratio: label sets (engines, ranks) are averaged, not added.
    fn is_ratio(self) -> bool {
        matches!(
            self,
            Figure::KvUsage | Figure::PrefixHitRate | Figure::SpecAcceptLength
        )
    }
}

/// The names read, each with the figure it feeds (see the module doc for
/// where each is defined).
pub const NAMES: [(&str, Figure); 21] = [
    ("vllm:kv_cache_usage_perc", Figure::KvUsage),
    ("vllm:num_requests_running", Figure::Running),
    ("vllm:num_requests_waiting", Figure::Waiting),
    ("vllm:num_preemptions_total", Figure::Preemptions),
    ("vllm:prefix_cache_queries_total", Figure::PrefixQueried),
    ("vllm:prefix_cache_hits_total", Figure::PrefixHit),
    ("vllm:spec_decode_num_drafts_total", Figure::SpecDrafts),
    (
        "vllm:spec_decode_num_draft_tokens_total",
        Figure::SpecDraftTokens,
    ),
    (
        "vllm:spec_decode_num_accepted_tokens_total",
        Figure::SpecAccepted,
    ),
    ("sglang:token_usage", Figure::KvUsage),
    ("sglang:num_running_reqs", Figure::Running),
    ("sglang:num_queue_reqs", Figure::Waiting),
    ("sglang:cache_hit_rate", Figure::PrefixHitRate),
    ("sglang:spec_accept_length", Figure::SpecAcceptLength),
    ("sglang:num_retracted_requests_total", Figure::Preemptions),
    ("llamacpp:kv_cache_usage_ratio", Figure::KvUsage),
    ("llamacpp:requests_processing", Figure::Running),
    ("llamacpp:requests_deferred", Figure::Waiting),
    ("llamacpp:spec_decode_num_drafts_total", Figure::SpecDrafts),
    (
        "llamacpp:spec_decode_num_draft_tokens_total",
        Figure::SpecDraftTokens,
    ),
    (
        "llamacpp:spec_decode_num_accepted_tokens_total",
        Figure::SpecAccepted,
    ),
];

/// The figure `name` feeds, if loadgen reads it.
pub fn figure_of(name: &str) -> Option<Figure> {
    NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}

/// One value read: the figure's value (label sets combined) and the name
/// it was read from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Value {
    pub v: f64,
    pub source: &'static str,
}

/// One scrape: when it answered, each figure's value (None: not
/// published), and the speculative counters (speculative.rs reads them
/// whatever the prefix).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub at: Instant,
    pub values: [Option<Value>; FIGURES.len()],
    pub spec: SpecCounters,
}

impl Snapshot {
    /// Parse a `/metrics` text taken at `at`, in one pass.
    pub fn parse(text: &str, at: Instant) -> Snapshot {
        let mut sums = [(0.0f64, 0u32, ""); FIGURES.len()];
        let mut spec = crate::speculative::SpecParse::default();
        for s in prom::samples(text) {
            spec.add(&s);
            let Some((name, f)) = NAMES.iter().find(|(n, _)| *n == s.name) else {
                continue;
            };
            if !s.value.is_finite() {
                continue;
            }
            let slot = &mut sums[f.index()];
            slot.0 += s.value;
            slot.1 += 1;
            slot.2 = name;
        }
        let mut values = [None; FIGURES.len()];
        for (i, (sum, n, source)) in sums.into_iter().enumerate() {
            if n > 0 {
                let v = if FIGURES[i].is_ratio() {
                    sum / f64::from(n)
                } else {
                    sum
                };
                values[i] = Some(Value { v, source });
            }
        }
        Snapshot {
            at,
            values,
            spec: spec.finish(),
        }
    }

    /// The value of `f`, if this scrape had it.
    pub fn get(&self, f: Figure) -> Option<Value> {
        self.values[f.index()]
    }

    /// True when the scrape had any figure loadgen reads.
    pub fn any(&self) -> bool {
        self.values.iter().any(Option::is_some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engines_add_up_and_ratios_average() {
        let t = "vllm:num_requests_running{engine=\"0\"} 3\n\
                 vllm:num_requests_running{engine=\"1\"} 5\n\
                 vllm:kv_cache_usage_perc{engine=\"0\"} 0.5\n\
                 vllm:kv_cache_usage_perc{engine=\"1\"} 1.0\n\
                 vllm:num_preemptions_created{engine=\"0\"} 1.7e9\n";
        let s = Snapshot::parse(t, Instant::now());
        assert_eq!(s.get(Figure::Running).unwrap().v, 8.0);
        assert_eq!(s.get(Figure::KvUsage).unwrap().v, 0.75);
        assert_eq!(
            s.get(Figure::KvUsage).unwrap().source,
            "vllm:kv_cache_usage_perc"
        );
        // `_created` is not the counter: the counter stays absent.
        assert_eq!(s.get(Figure::Preemptions), None);
        assert!(s.any());
        assert!(!Snapshot::parse("other 1\n", Instant::now()).any());
    }

    #[test]
    fn counters_and_gauges_are_told_apart() {
        assert!(Figure::Preemptions.is_counter());
        assert!(Figure::SpecAccepted.is_counter());
        assert!(!Figure::Waiting.is_counter());
        assert!(!Figure::SpecAcceptLength.is_counter());
        assert_eq!(figure_of("sglang:token_usage"), Some(Figure::KvUsage));
        assert_eq!(figure_of("sglang:token_usage_total"), None);
    }
}
