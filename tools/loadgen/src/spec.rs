//! Speculative decoding, the same fields whatever the server: counters from
//! Prometheus `/metrics` scraped before and after a level (vLLM `vllm:`,
//! llama.cpp `llamacpp:`, llm-sim), per-request fields summed over the
//! level (llama.cpp/llm-sim `timings.draft_n`/`draft_n_accepted`, SGLang
//! `meta_info.spec_verify_ct`), or SGLang's `/server_info`
//! `avg_spec_accept_length` (a lifetime average: warmup included).

use serde_json::Value;
use sweepkit::records::SpecStats;

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
}

/// Parse Prometheus text exposition for the spec-decode counters, whatever
/// the prefix (`vllm:`, `llamacpp:`, `sglang:`, none).
pub fn parse_metrics(text: &str) -> SpecCounters {
    let mut c = SpecCounters::default();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name_end = line
            .find(|ch: char| ch == '{' || ch.is_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        let base = name.rsplit(':').next().unwrap_or(name);
        // The value follows the (optional) label block.
        let rest = match line[name_end..].find('}') {
            Some(i) if line[name_end..].starts_with('{') => &line[name_end + i + 1..],
            _ => &line[name_end..],
        };
        let Some(v) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        let slot = match base {
            "spec_decode_num_draft_tokens_total" => &mut c.draft_tokens,
            "spec_decode_num_accepted_tokens_total" => &mut c.accepted_tokens,
            "spec_decode_num_drafts_total" => &mut c.drafts,
            _ => continue,
        };
        *slot += v;
        c.present = true;
    }
    c
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
        source: "metrics".into(),
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
        source: "per_request".into(),
        draft_tokens: Some(draft_n),
        accepted_tokens: Some(accepted),
        acceptance_rate: Some(round3(accepted as f64 / draft_n as f64)),
        accept_length: None,
        drafts: None,
    })
}

/// Spec figures from SGLang per-request `spec_verify_ct`: accept length =
/// completion tokens / verify steps (SGLang's own formula).
pub fn from_sglang(verify_ct: u64, tokens: u64) -> Option<SpecStats> {
    (verify_ct > 0).then(|| SpecStats {
        source: "per_request".into(),
        accept_length: Some(round3(tokens as f64 / verify_ct as f64)),
        drafts: Some(verify_ct),
        ..SpecStats::default()
    })
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

/// Does the server run speculative decoding, by its reported args?
pub fn server_speculates(info: &Value) -> bool {
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
