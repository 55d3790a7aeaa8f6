//! A trace level's own figures beside the trace's: the input tokens the
//! server counted against those the trace asked for, the burstiness of
//! the sends against the trace's, and the warnings when they part (the
//! client fell behind the schedule, or the server's tokenizer made the
//! prompts another length than the trace says).

use std::time::Instant;

use sweepkit::records::Workload;

use crate::level::Outcome;
use crate::metrics::Aggregate;

/// Send lag (actual after scheduled) above which the replay is not the
/// trace any more: a tenth of a typical 100 ms inter-arrival gap.
const LAG_WARN_MS: f64 = 10.0;
/// Input tokens may differ this much (a BOS token, a chat template)
/// before the replay is called another workload.
const TOKENS_WARN_FRACTION: f64 = 0.05;

/// The trace's mean request rate at `speed` (the record's `rate_rps`).
pub fn mean_rate(w: &Workload, speed: f64) -> Option<f64> {
    let d = w.trace_duration_s.filter(|d| *d > 0.0)?;
    Some(crate::stats::round3(
        w.requests.saturating_sub(1) as f64 / d * speed,
    ))
}

/// Add what the level replayed: input tokens as the server counted them
/// (usage; loadgen's own count when it sent none) and the burstiness of
/// the actual send times. Only for a trace: other workloads have no
/// recorded times to compare with.
pub fn fill(w: &mut Workload, out: &Outcome, agg: &Aggregate) {
    if w.speed.is_none() {
        return;
    }
    w.replayed_input_tokens = Some(agg.counts.input_tokens);
    let mut sent: Vec<Instant> = out.samples.iter().map(|s| s.sent).collect();
    sent.sort();
    let t: Vec<f64> = sent
        .iter()
        .map(|s| s.duration_since(out.started).as_secs_f64())
        .collect();
    w.replayed_arrival_cv = sweepkit::trace::arrival_cv(&t).map(crate::stats::round3);
    // The send lag is each request's queue time, scheduled (the trace's
    // time over the speed) to sent, over every sample: the level's
    // `latency.queue_ms`, summarized once by `metrics::aggregate`.
    let q = &agg.latency.queue_ms;
    if q.count > 0 {
        w.send_lag_p50_ms = Some(q.p50);
        w.send_lag_p99_ms = Some(q.p99);
    }
}

/// The trace level's warnings: sends behind schedule, input lengths that
/// are not the trace's.
pub fn warnings(w: &Workload, asked_input_tokens: u64) -> Vec<String> {
    let mut out = Vec::new();
    if w.speed.is_none() {
        return out;
    }
    if let (Some(p50), Some(p99)) = (w.send_lag_p50_ms, w.send_lag_p99_ms) {
        if p99 > LAG_WARN_MS {
            out.push(format!(
                "the replay fell behind the trace: send lag p50 {p50:.1} ms, p99 {p99:.1} \
                 ms; the trace's burstiness was not reproduced: lower --speed, raise \
                 --max-inflight, or run loadgen on another machine"
            ));
        }
    }
    // A session's turns carry their history: the server counts what the
    // replies added, which no file gives.
    if let Some(got) = w.replayed_input_tokens.filter(|_| w.sessions.is_none()) {
        let want = asked_input_tokens as f64;
        if want > 0.0 && ((got as f64 - want) / want).abs() > TOKENS_WARN_FRACTION {
            out.push(format!(
                "the server counted {got} input tokens for requests the trace gives {} \
                 ({:+.1}%): its tokenizer or chat template makes other lengths; compare \
                 with runs of the same trace only",
                asked_input_tokens,
                100.0 * (got as f64 - want) / want
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_and_token_warnings() {
        let w = Workload {
            requests: 11,
            trace_duration_s: Some(5.0),
            speed: Some(2.0),
            replayed_input_tokens: Some(1100),
            ..Workload::default()
        };
        assert_eq!(mean_rate(&w, 2.0), Some(4.0));
        assert!(warnings(&w, 1060).is_empty());
        let ws = warnings(&w, 1000);
        assert!(ws[0].contains("1100 input tokens for requests the trace gives 1000 (+10.0%)"));
        let late = Workload {
            send_lag_p50_ms: Some(2.0),
            send_lag_p99_ms: Some(25.0),
            ..w.clone()
        };
        assert!(warnings(&late, 1100)[0].contains("fell behind the trace"));
        let not_trace = Workload::default();
        assert!(warnings(&not_trace, 1).is_empty());
    }
}
