//! One completed request's figures. Definitions (the man page states them
//! with the peers' differences):
//! - TTFT: send -> first chunk carrying generated text (vLLM's definition).
//! - TPOT: (E2E - TTFT) / (output tokens - 1), per request (vLLM's).
//! - ITL: each content chunk's gap after the previous one, divided by the
//!   tokens it carries, weighted by those tokens (SGLang PRs 12064/33193:
//!   per-chunk gaps are wrong under speculative decoding); raw per-chunk
//!   gaps are `chunk_gap_ms` (vLLM's "ITL").
//! - The SLO (`--slo`): per-request upper limits a request meets or not.

use std::time::Instant;

use crate::client::{ChunkMark, Sample};

/// Service-level objectives for goodput, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

impl Slo {
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2e_ms.is_none()
    }
}

/// Why a `--slo` is not loadgen's: the shared syntax, or a term loadgen
/// cannot judge a request by.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestSloError {
    #[error(transparent)]
    Syntax(#[from] sweepkit::slo::SloError),
    #[error("{0}: loadgen's objectives are upper limits (<=)")]
    NotUpperLimit(sweepkit::slo::Term),
    #[error(
        "unknown SLO '{0}': loadgen judges each request by \
         ttft_ms, tpot_ms or e2e_ms (percentiles are summarize's)"
    )]
    Unknown(String),
}

/// Parse `--slo` with the shared parser (`sweepkit::slo`, one syntax with
/// summarize): per-request upper limits `ttft_ms<=200,tpot_ms<=50,e2e_ms<=10000`
/// (also `ttft=200ms`, a bare number being ms).
pub fn parse_slo(s: &str) -> Result<Slo, RequestSloError> {
    let mut slo = Slo::default();
    for t in sweepkit::slo::parse(s)? {
        if t.op != sweepkit::slo::Op::Le {
            return Err(RequestSloError::NotUpperLimit(t));
        }
        match t.name.as_str() {
            "ttft_ms" => slo.ttft_ms = Some(t.limit),
            "tpot_ms" => slo.tpot_ms = Some(t.limit),
            "e2e_ms" => slo.e2e_ms = Some(t.limit),
            other => return Err(RequestSloError::Unknown(other.into())),
        }
    }
    Ok(slo)
}

/// How tokens were assigned to chunks for ITL.
pub const ITL_USAGE: &str = "usage_per_chunk";
pub const ITL_ONE: &str = "one_per_chunk";
pub const ITL_APPORTIONED: &str = "apportioned_by_text";

/// Tokens carried by each content chunk: the server's running count when
/// every chunk has one (`continuous_usage_stats`), one each when the chunk
/// count equals the token count, else the total apportioned by text length.
pub fn tokens_per_chunk(chunks: &[ChunkMark], total: u64) -> (Vec<f64>, &'static str) {
    if !chunks.is_empty() && chunks.iter().all(|c| c.cum_tokens.is_some()) {
        let mut prev = 0u32;
        let mut ks = Vec::with_capacity(chunks.len());
        let mut monotone = true;
        for c in chunks {
            let cum = c.cum_tokens.unwrap_or(0);
            monotone &= cum >= prev;
            ks.push(cum.saturating_sub(prev) as f64);
            prev = cum;
        }
        if monotone && prev > 0 {
            return (ks, ITL_USAGE);
        }
    }
    if chunks.len() as u64 == total || total == 0 {
        return (vec![1.0; chunks.len()], ITL_ONE);
    }
    let text: u64 = chunks.iter().map(|c| c.text_len as u64).sum();
    if text == 0 {
        let each = total as f64 / chunks.len() as f64;
        return (vec![each; chunks.len()], ITL_APPORTIONED);
    }
    let ks = chunks
        .iter()
        .map(|c| total as f64 * c.text_len as f64 / text as f64)
        .collect();
    (ks, ITL_APPORTIONED)
}

/// One completed request's derived figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Derived {
    pub output_tokens: u64,
    pub input_tokens: u64,
    pub usage_missing: bool,
    pub early_stop: bool,
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: f64,
    /// (per-token gap ms, tokens) for each chunk after the first.
    pub itl: Vec<(f64, f64)>,
    pub gaps_ms: Vec<f64>,
    pub ks: Vec<f64>,
    pub itl_method: &'static str,
}

pub fn ms(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64() * 1000.0
}

/// Derive a completed request's figures; `stream` false: no TTFT/ITL.
pub fn derive(s: &Sample, stream: bool, ignore_eos: bool) -> Derived {
    let usage_out = s.usage.and_then(|u| u.completion_tokens);
    let (output_tokens, usage_missing) = match usage_out {
        Some(n) => (n, false),
        None if stream => (s.chunks.len() as u64, true),
        None => (
            s.chunks
                .iter()
                .map(|c| (c.text_len as u64).div_ceil(4))
                .sum(),
            true,
        ),
    };
    let input_tokens = s
        .usage
        .and_then(|u| u.prompt_tokens)
        .unwrap_or(s.prompt_tokens_hint);
    let e2e_ms = ms(s.sent, s.done);
    let early_stop = s.asked_tokens.is_some_and(|a| output_tokens < a)
        || (ignore_eos && s.finish_reason.as_deref() == Some("stop"));
    let mut d = Derived {
        output_tokens,
        input_tokens,
        usage_missing,
        early_stop,
        ttft_ms: None,
        tpot_ms: None,
        e2e_ms,
        itl: Vec::new(),
        gaps_ms: Vec::new(),
        ks: Vec::new(),
        itl_method: ITL_ONE,
    };
    if !stream || s.chunks.is_empty() {
        return d;
    }
    let ttft = s.chunks[0].at_us as f64 / 1000.0;
    d.ttft_ms = Some(ttft);
    if output_tokens > 1 {
        d.tpot_ms = Some((e2e_ms - ttft).max(0.0) / (output_tokens - 1) as f64);
    }
    let (ks, method) = tokens_per_chunk(&s.chunks, output_tokens);
    d.itl_method = method;
    let mut prev = s.chunks[0].at_us;
    for (c, k) in s.chunks.iter().zip(&ks).skip(1) {
        let gap = c.at_us.saturating_sub(prev) as f64 / 1000.0;
        d.gaps_ms.push(gap);
        if *k > 0.0 {
            d.itl.push((gap / k, *k));
            prev = c.at_us;
        }
    }
    d.ks = ks;
    d
}

/// Does a completed request meet every SLO given?
pub fn meets(slo: &Slo, d: &Derived) -> bool {
    let ttft = d.ttft_ms.unwrap_or(d.e2e_ms);
    slo.ttft_ms.is_none_or(|x| ttft <= x)
        && slo.tpot_ms.is_none_or(|x| d.tpot_ms.unwrap_or(0.0) <= x)
        && slo.e2e_ms.is_none_or(|x| d.e2e_ms <= x)
}
