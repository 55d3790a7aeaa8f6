//! From per-request figures (per_request.rs) to one level's numbers:
//! counts, errors, the latency percentiles, throughput (throughput.rs)
//! and the spec sums. Throughput divides by wall time from first send to
//! last finish. Failed requests never enter latency statistics (guidellm
//! issue 444).

use std::collections::BTreeMap;
use std::time::Instant;

use sweepkit::records::{Counts, Latency, Throughput};

use crate::client::{kind_name, Sample};
use crate::per_request::{derive, meets, ms, Derived, Slo, ITL_APPORTIONED, ITL_ONE, ITL_USAGE};
use crate::stats::{round3, summarize, summarize_weighted};
use crate::throughput::{level_throughput, steady};

/// A level's aggregate figures.
#[derive(Debug, Default)]
pub struct Aggregate {
    pub counts: Counts,
    pub errors: BTreeMap<String, u64>,
    pub throughput: Throughput,
    pub steady: Option<Throughput>,
    /// The record's own latency block, filled here and moved into it.
    pub latency: Latency,
    /// The latency distributions (None when no request completed).
    pub histograms: Option<sweepkit::records::Histograms>,
    pub itl_method: Option<&'static str>,
    pub tokens_per_chunk: Option<f64>,
    pub draft_n: Option<u64>,
    pub draft_accepted: Option<u64>,
    /// SGLang `/generate` `meta_info` sums, when any request had them.
    pub sglang: Option<crate::speculative::SglangSums>,
}

/// Add one request's SGLang `meta_info` to the level's sums: draft counts
/// only while every request so far had them.
fn add_sglang(a: &mut Aggregate, m: crate::sse::MetaInfo, output_tokens: u64) {
    let first = a.sglang.is_none();
    let sums = a.sglang.get_or_insert_with(Default::default);
    sums.verify_ct += m.spec_verify_ct.unwrap_or(0);
    sums.completion_tokens += m.completion_tokens.unwrap_or(output_tokens);
    let add = |acc: Option<u64>, x: Option<u64>| match (first, acc, x) {
        (true, _, Some(x)) => Some(x),
        (false, Some(acc), Some(x)) => Some(acc + x),
        _ => None,
    };
    sums.accepted = add(sums.accepted, m.spec_accept_token_num);
    sums.drafted = add(sums.drafted, m.spec_draft_token_num);
}

/// The per-request values a level collects before summarizing them.
#[derive(Default)]
struct Acc {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    e2e: Vec<f64>,
    gaps: Vec<f64>,
    itl: Vec<(f64, f64)>,
    queue: Vec<f64>,
    lag: Vec<f64>,
    e2eq: Vec<f64>,
    /// Requests that met every SLO.
    good: u64,
    chunk_n: usize,
    tok_n: f64,
    methods: BTreeMap<&'static str, u64>,
    busy_ms: f64,
}

impl Acc {
    fn latency(&self) -> Latency {
        Latency {
            ttft_ms: summarize(&self.ttft),
            tpot_ms: summarize(&self.tpot),
            itl_ms: summarize_weighted(&self.itl),
            chunk_gap_ms: summarize(&self.gaps),
            e2e_ms: summarize(&self.e2e),
            queue_ms: summarize(&self.queue),
            start_lag_ms: summarize(&self.lag),
            e2e_incl_queue_ms: Some(summarize(&self.e2eq)),
        }
    }
}

/// Aggregate a level. `window`: the steady-state window, if any.
pub fn aggregate(
    samples: &[Sample],
    stream: bool,
    ignore_eos: bool,
    slo: Option<&Slo>,
    window: Option<(Instant, Instant)>,
) -> (Aggregate, Vec<Option<Derived>>) {
    let mut a = Aggregate::default();
    let mut acc = Acc::default();
    let mut derived = Vec::with_capacity(samples.len());
    for s in samples {
        let q = ms(s.scheduled, s.sent);
        acc.queue.push(q);
        acc.lag.push(ms(s.slot.max(s.scheduled), s.sent));
        acc.busy_ms += ms(s.sent, s.done);
        if s.cancelled {
            a.counts.cancelled += 1;
            derived.push(None);
            continue;
        }
        if let Some(k) = &s.error {
            a.counts.failed += 1;
            *a.errors.entry(kind_name(k)).or_default() += 1;
            derived.push(None);
            continue;
        }
        let d = derive(s, stream, ignore_eos);
        add_completed(&mut a, &mut acc, s, &d, q, slo);
        derived.push(Some(d));
    }
    // The least exact method used by any request names the level's.
    a.itl_method = [ITL_APPORTIONED, ITL_ONE, ITL_USAGE]
        .into_iter()
        .find(|m| acc.methods.contains_key(m));
    if acc.chunk_n > 0 {
        a.tokens_per_chunk = Some(round3(acc.tok_n / acc.chunk_n as f64));
    }
    a.latency = acc.latency();
    if a.counts.completed > 0 {
        use sweepkit::records::histogram::codec;
        a.histograms = Some(codec::histograms(&acc.ttft, &acc.tpot, &acc.itl, &acc.e2e));
    }
    let first = samples.iter().map(|s| s.sent).min();
    let last = samples.iter().map(|s| s.done).max();
    if let (Some(f), Some(l)) = (first, last) {
        let el = ms(f, l) / 1000.0;
        a.throughput = level_throughput(&a.counts, el, (acc.busy_ms, acc.good), slo, samples.len());
    }
    if let Some(w) = window {
        a.steady = steady(samples, &derived, w, slo);
    }
    (a, derived)
}

/// Add a completed request's figures to the level's.
fn add_completed(
    a: &mut Aggregate,
    acc: &mut Acc,
    s: &Sample,
    d: &Derived,
    q: f64,
    slo: Option<&Slo>,
) {
    a.counts.completed += 1;
    a.counts.output_tokens += d.output_tokens;
    a.counts.input_tokens += d.input_tokens;
    a.counts.usage_missing += d.usage_missing as u64;
    a.counts.early_stops += d.early_stop as u64;
    acc.ttft.extend(d.ttft_ms);
    acc.tpot.extend(d.tpot_ms);
    acc.e2e.push(d.e2e_ms);
    acc.e2eq.push(d.e2e_ms + q);
    acc.gaps.extend_from_slice(&d.gaps_ms);
    acc.itl.extend_from_slice(&d.itl);
    acc.chunk_n += d.ks.len();
    acc.tok_n += d.ks.iter().sum::<f64>();
    if !d.ks.is_empty() {
        *acc.methods.entry(d.itl_method).or_insert(0u64) += 1;
    }
    if slo.is_some_and(|x| meets(x, d)) {
        acc.good += 1;
    }
    if let Some(t) = s.timings {
        if let (Some(n), Some(acc)) = (t.draft_n, t.draft_n_accepted) {
            *a.draft_n.get_or_insert(0) += n;
            *a.draft_accepted.get_or_insert(0) += acc;
        }
    }
    if let Some(m) = s.meta_info.filter(|m| m.spec_verify_ct.is_some()) {
        add_sglang(a, m, d.output_tokens);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::ChunkMark;
    use crate::per_request::parse_slo;
    use std::time::Duration;

    fn mark(at_ms: u32, len: u32, cum: Option<u32>) -> ChunkMark {
        ChunkMark {
            at_us: at_ms * 1000,
            text_len: len,
            cum_tokens: cum,
        }
    }

    fn sample(chunks: Vec<ChunkMark>, e2e_ms: u64, tokens: u64) -> Sample {
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        s.sent = t0;
        s.done = t0 + Duration::from_millis(e2e_ms);
        s.chunks = chunks;
        s.usage = Some(crate::sse::Usage {
            prompt_tokens: Some(10),
            completion_tokens: Some(tokens),
        });
        s
    }

    #[test]
    fn ttft_tpot_itl_on_known_timing() {
        // TTFT 100 ms, then 4 one-token chunks 20 ms apart, done at 180 ms.
        let ch = (0..5).map(|i| mark(100 + 20 * i, 3, None)).collect();
        let d = derive(&sample(ch, 180, 5), true, false);
        assert_eq!(d.ttft_ms, Some(100.0));
        assert_eq!(d.tpot_ms, Some(20.0));
        assert_eq!(d.itl, vec![(20.0, 1.0); 4]);
        assert_eq!(d.itl_method, ITL_ONE);
    }

    #[test]
    fn multi_token_chunks_spread_their_gap() {
        // Speculative decoding: chunks of 1, 3, 3 tokens 30 ms apart.
        let ch = vec![
            mark(50, 2, Some(1)),
            mark(80, 6, Some(4)),
            mark(110, 6, Some(7)),
        ];
        let d = derive(&sample(ch, 110, 7), true, false);
        assert_eq!(d.itl_method, ITL_USAGE);
        assert_eq!(d.itl, vec![(10.0, 3.0), (10.0, 3.0)]);
        assert_eq!(d.gaps_ms, vec![30.0, 30.0]);
        assert_eq!(d.tpot_ms, Some(10.0));
        // Without per-chunk usage, the 7 tokens are apportioned by text.
        let ch = vec![mark(50, 2, None), mark(80, 6, None), mark(110, 6, None)];
        let d = derive(&sample(ch, 110, 7), true, false);
        assert_eq!(d.itl_method, ITL_APPORTIONED);
        assert!((d.itl[0].1 - 3.0).abs() < 1e-9, "{:?}", d.itl);
    }

    #[test]
    fn early_stop_and_missing_usage_are_flagged() {
        let mut s = sample(vec![mark(5, 1, None), mark(6, 1, None)], 7, 2);
        s.asked_tokens = Some(16);
        s.usage = None;
        let d = derive(&s, true, true);
        assert!(d.usage_missing && d.early_stop);
        assert_eq!(d.output_tokens, 2);
    }

    #[test]
    fn failed_requests_stay_out_of_latency() {
        let ok = sample(vec![mark(10, 1, None), mark(20, 1, None)], 20, 2);
        let mut bad = sample(vec![], 1, 0);
        bad.fail(crate::client::ErrorKind::Http(500), "boom");
        let (a, _) = aggregate(&[ok, bad], true, false, None, None);
        assert_eq!(a.counts.completed, 1);
        assert_eq!(a.counts.failed, 1);
        assert_eq!(a.errors.get("http_500"), Some(&1));
        assert_eq!(a.latency.ttft_ms.count, 1);
        assert_eq!(a.latency.e2e_ms.count, 1);
    }

    #[test]
    fn slo_parse_and_goodput() {
        let slo = parse_slo("ttft=50ms,tpot=20,e2e=1s").unwrap();
        assert_eq!(slo.ttft_ms, Some(50.0));
        assert_eq!(slo.tpot_ms, Some(20.0));
        assert_eq!(slo.e2e_ms, Some(1000.0));
        assert!(parse_slo("foo=1").is_err());
        assert!(parse_slo("ttft").is_err());
        // The canonical form (summarize's syntax) means the same.
        assert_eq!(
            parse_slo("ttft_ms<=50,tpot_ms<=20,e2e_ms<=1000"),
            Ok(slo.clone())
        );
        assert!(parse_slo("p99_ttft_ms<=50").is_err());
        let fast = sample(vec![mark(10, 1, None), mark(20, 1, None)], 20, 2);
        let slow = sample(vec![mark(90, 1, None), mark(100, 1, None)], 100, 2);
        let (a, _) = aggregate(&[fast, slow], true, false, Some(&slo), None);
        assert_eq!(a.throughput.slo_attainment, Some(0.5));
    }
}
