//! Speculative decoding, the same fields whatever the server, and where
//! each figure came from (`SpecStats.source`, `origin`):
//! - `metrics`: Prometheus counter deltas scraped before and after the
//!   level (vLLM `vllm:spec_decode_num_*_total`, llama.cpp, llm-sim): the
//!   level's own figure (any other traffic on the server counts too).
//! - `per_request`: per-request fields summed over the level's requests:
//!   llama.cpp/llm-sim `timings.draft_n`/`draft_n_accepted`, SGLang
//!   `/generate` `meta_info.spec_verify_ct` (the level's own figure).
//! - `gauge`: SGLang's `/metrics` gauge `sglang:spec_accept_length` read
//!   after the level (python/sglang/srt/metrics/collector.py
//!   `SchedulerMetricsCollector`, a Gauge set by the scheduler's decode log
//!   from the steps since its last log line): a recent window, not the
//!   level's own.
//! - `lifetime_average`: SGLang's `/server_info`
//!   `internal_states[].avg_spec_accept_length` (http_server.py
//!   `get_server_info`): an average since the server started, warm-up and
//!   earlier levels included.

use serde_json::Value;
use sweepkit::records::{SpecSource, SpecStats};

use crate::stats::round3;

/// The three counters, summed over label sets (vLLM labels by engine and
/// model; one server has one model, several engines add up).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpecCounters {
    pub draft_tokens: f64,
    pub accepted_tokens: f64,
    pub drafts: f64,
    /// True when any of the counters was present.
    pub present: bool,
    /// SGLang's gauge `sglang:spec_accept_length` (mean over label sets).
    pub accept_length_gauge: Option<f64>,
}

/// Parse Prometheus text exposition for the spec-decode counters, whatever
/// the prefix (`vllm:`, `llamacpp:`, `sglang:`, none).
pub fn parse_metrics(text: &str) -> SpecCounters {
    let mut p = SpecParse::default();
    for s in sweepkit::prom::samples(text) {
        p.add(&s);
    }
    p.finish()
}

/// The spec counters read sample by sample (scrape/catalog.rs reads the
/// other figures in the same pass).
#[derive(Debug, Default)]
pub struct SpecParse {
    c: SpecCounters,
    gauge_sum: f64,
    gauges: u32,
}

impl SpecParse {
    pub fn add(&mut self, s: &sweepkit::prom::Sample) {
        let base = s.name.rsplit(':').next().unwrap_or(s.name);
        let slot = match base {
            "spec_decode_num_draft_tokens_total" => &mut self.c.draft_tokens,
            "spec_decode_num_accepted_tokens_total" => &mut self.c.accepted_tokens,
            "spec_decode_num_drafts_total" => &mut self.c.drafts,
            "spec_accept_length" if s.name.starts_with("sglang:") => {
                self.gauge_sum += s.value;
                self.gauges += 1;
                return;
            }
            _ => return,
        };
        *slot += s.value;
        self.c.present = true;
    }

    pub fn finish(self) -> SpecCounters {
        let mut c = self.c;
        c.accept_length_gauge =
            (self.gauges > 0).then(|| round3(self.gauge_sum / f64::from(self.gauges)));
        c
    }
}

/// Spec figures from counter deltas; None when no draft tokens were made.
pub fn from_deltas(before: SpecCounters, after: SpecCounters) -> Option<SpecStats> {
    if !after.present {
        return None;
    }
    let draft = (after.draft_tokens - before.draft_tokens).max(0.0);
    let acc = (after.accepted_tokens - before.accepted_tokens).max(0.0);
    let drafts = (after.drafts - before.drafts).max(0.0);
    if draft <= 0.0 {
        return None;
    }
    Some(SpecStats {
        source: SpecSource::Metrics,
        origin: Some("/metrics spec_decode_num_*_total counter deltas over the level".into()),
        draft_tokens: Some(draft as u64),
        accepted_tokens: Some(acc as u64),
        acceptance_rate: Some(round3(acc / draft)),
        // vLLM's definition: 1 + accepted per draft (verification step).
        accept_length: (drafts > 0.0).then(|| round3(1.0 + acc / drafts)),
        drafts: (drafts > 0.0).then_some(drafts as u64),
    })
}

/// Spec figures from per-request `timings` sums (llama.cpp, llm-sim).
/// Accept length needs the number of steps, which timings lack.
pub fn from_timings(draft_n: u64, accepted: u64) -> Option<SpecStats> {
    (draft_n > 0).then(|| SpecStats {
        source: SpecSource::PerRequest,
        origin: Some("timings.draft_n, timings.draft_n_accepted".into()),
        draft_tokens: Some(draft_n),
        accepted_tokens: Some(accepted),
        acceptance_rate: Some(round3(accepted as f64 / draft_n as f64)),
        accept_length: None,
        drafts: None,
    })
}

/// Level sums of SGLang's per-request `meta_info` (native `/generate`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SglangSums {
    pub verify_ct: u64,
    pub completion_tokens: u64,
    /// Accepted and proposed draft tokens, when every request had them.
    pub accepted: Option<u64>,
    pub drafted: Option<u64>,
}

/// Spec figures from SGLang per-request `meta_info`: accept length =
/// completion tokens / verify steps, SGLang's own formula
/// (tokenizer_manager.py `_calculate_spec_decoding_metrics`:
/// `spec_accept_length = completion_tokens / spec_verify_ct`), over the
/// level's sums; acceptance rate = accepted / proposed draft tokens
/// (`spec_accept_rate` there).
pub fn from_sglang(s: SglangSums) -> Option<SpecStats> {
    (s.verify_ct > 0).then(|| SpecStats {
        source: SpecSource::PerRequest,
        origin: Some("/generate meta_info.spec_verify_ct, completion_tokens".into()),
        accept_length: Some(round3(s.completion_tokens as f64 / s.verify_ct as f64)),
        drafts: Some(s.verify_ct),
        draft_tokens: s.drafted,
        accepted_tokens: s.accepted,
        acceptance_rate: s
            .drafted
            .filter(|&d| d > 0)
            .zip(s.accepted)
            .map(|(d, a)| round3(a as f64 / d as f64)),
    })
}

/// SGLang's `/metrics` gauge read after the level: a recent window.
pub fn from_gauge(c: SpecCounters) -> Option<SpecStats> {
    c.accept_length_gauge.map(|len| SpecStats {
        source: SpecSource::Gauge,
        origin: Some("/metrics sglang:spec_accept_length after the level".into()),
        accept_length: Some(len),
        ..SpecStats::default()
    })
}

/// SGLang's lifetime average from `/server_info`.
pub fn from_lifetime(info: &Value) -> Option<SpecStats> {
    server_info_accept_length(info).map(|len| SpecStats {
        source: SpecSource::LifetimeAverage,
        origin: Some("/server_info internal_states[].avg_spec_accept_length".into()),
        accept_length: Some(len),
        ..SpecStats::default()
    })
}

/// The warning for a figure that is not the level's own, or None.
pub fn not_per_level_warning(s: &SpecStats) -> Option<String> {
    let what = match s.source {
        SpecSource::LifetimeAverage => {
            "SGLang's lifetime average (includes warmup and earlier levels)"
        }
        SpecSource::Gauge => "SGLang's /metrics gauge (its last logging window)",
        _ => return None,
    };
    Some(format!(
        "spec accept_length is {what}, not this level's: use --endpoint generate for \
         per-level acceptance"
    ))
}

/// SGLang `/server_info`: `avg_spec_accept_length` at the top level or in
/// `internal_states[0]` (newer versions), or under `decode[0]` (PD mode).
pub fn server_info_accept_length(info: &Value) -> Option<f64> {
    let direct = info.get("avg_spec_accept_length").and_then(Value::as_f64);
    let states = info
        .get("internal_states")
        .and_then(Value::as_array)
        .and_then(|a| {
            let v: Vec<f64> = a
                .iter()
                .filter_map(|s| s.get("avg_spec_accept_length").and_then(Value::as_f64))
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        });
    let decode = info
        .get("decode")
        .and_then(|d| d.get(0))
        .and_then(|d| d.get("avg_spec_accept_length"))
        .and_then(Value::as_f64);
    direct.or(states).or(decode)
}

/// Does the server run speculative decoding, by its reported args? A
/// report that names `speculative_algorithm` as null is speculation off,
/// whatever the steps say: SGLang keeps `--speculative-num-steps 3` given
/// without an algorithm in its args and ignores it (sgl-project/sglang
/// `python/sglang/srt/arg_groups/speculative_hook.py`
/// `handle_speculative_decoding`; seen on SGLang 0.5.23,
/// tests/fixtures/real/sglang/serve-steps-no-algorithm.json).
pub fn server_speculates(info: &Value) -> bool {
    let no_algorithm = info
        .get("speculative_algorithm")
        .is_some_and(|v| v.is_null() || v.as_str() == Some(""));
    if no_algorithm {
        return false;
    }
    let steps = info
        .get("speculative_num_steps")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .unwrap_or(0);
    let algo = info
        .get("speculative_algorithm")
        .is_some_and(|v| !v.is_null() && v.as_str() != Some(""));
    steps > 0 || algo
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn steps_without_an_algorithm_are_not_speculation() {
        // As SGLang 0.5.23 reports `--speculative-num-steps 3` alone.
        let off = json!({"speculative_algorithm": null, "speculative_num_steps": 3});
        assert!(!server_speculates(&off));
        let on = json!({"speculative_algorithm": "EAGLE", "speculative_num_steps": 3});
        assert!(server_speculates(&on));
        // A report without the key (llama.cpp-like): the steps decide.
        assert!(server_speculates(&json!({"speculative_num_steps": 3})));
        assert!(!server_speculates(&json!({})));
    }
}
