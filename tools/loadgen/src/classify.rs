//! Judging a measured level: a bench record (with its warnings), a failure
//! record when every request failed, or a bench record followed by a
//! failure when the server died during the level.

use sweepkit::diag;
use sweepkit::records::{
    BenchRecord, FailureKind, Record, SpecStats, Stability, StopReason, SCHEMA_VERSION,
};

use crate::level::Shape;
use crate::measure::{Measured, Progress};
use crate::metrics::Aggregate;
use crate::plan::{LevelPlan, Plan};
use crate::server_death;
use crate::setup::{failure_record, Context};
use crate::speculative;
use crate::upstream_record::Upstream;

const TOOL: &str = "loadgen";

/// A failure record, the one-line reason the run ends with and its exit
/// code.
pub struct Failure {
    pub record: Record,
    pub reason: String,
    pub code: u8,
}

/// What a level amounts to.
pub enum Verdict {
    /// Every request failed: the run ends here.
    AllFailed(Failure),
    /// Numbers; when the server died during the level, the failure that
    /// follows them and ends the run.
    Bench(Box<Record>, Option<Failure>),
}

/// Judge a level: warnings to stderr, then the verdict.
pub fn classify(
    plan: &Plan,
    ctx: &Context,
    up: &Upstream,
    m: Measured,
    p: &mut Progress,
) -> Verdict {
    let agg = &m.agg;
    // Only a level with failures can have lost its server.
    let died = (agg.counts.failed > 0 || m.out.server_gone)
        .then(|| {
            server_death::server_died(
                &plan.base_url,
                &m.out.samples,
                p.answered,
                m.out.server_gone,
            )
        })
        .flatten();
    p.answered |= m.out.samples.iter().any(server_death::answered);
    let warns = level_warnings(&plan.level, ctx, &m, died.as_deref());
    tell(&plan.level, &m, &warns);
    let failure = |kind, reason: String| {
        let rec = failure_record(plan, up, kind, &reason);
        Failure {
            code: rec
                .exit_code
                .map_or(sweepkit::exit::ALL_FAILED, |c| c as u8),
            record: Record::Failure(rec),
            reason,
        }
    };
    if let Some(status) = key_refused_everywhere(agg) {
        // --model skipped GET /v1/models, where the key is otherwise
        // missed first: every request met HTTP 401/403.
        let what = format!("POST {}", plan.endpoint_path);
        let reason = crate::setup::key_refused(&what, status, &ctx.probe, up);
        return Verdict::AllFailed(failure(FailureKind::Unauthorized, reason));
    }
    if agg.counts.completed == 0 && agg.counts.failed > 0 {
        let kind = match died {
            Some(_) => FailureKind::CrashedMidRun,
            None => FailureKind::BenchFailed,
        };
        let mut reason = format!(
            "{}: all {} requests failed ({})",
            m.label,
            agg.counts.failed,
            error_summary(agg)
        );
        if let Some(why) = &died {
            reason = format!("{reason}: {why}");
        }
        return Verdict::AllFailed(failure(kind, reason));
    }
    p.any_failed |= agg.counts.failed > 0;
    let then = died
        .as_ref()
        .map(|why| failure(FailureKind::CrashedMidRun, format!("{}: {why}", m.label)));
    let partial = m.out.cut_short.is_some() || died.is_some();
    let mut rec = bench_record(ctx, up, m, warns, partial);
    rec.label = plan.level.label.clone();
    Verdict::Bench(Box::new(Record::Bench(rec)), then)
}

/// Every warning of the level, to stderr and into the record.
fn level_warnings(lp: &LevelPlan, ctx: &Context, m: &Measured, died: Option<&str>) -> Vec<String> {
    let mut warns = warnings(lp, ctx, &m.agg, m.cpu, m.spec.as_ref(), m.level.shape);
    if let Some(w) = &m.load.workload {
        // Only requests that ended: a cancelled one's prompt is in no usage.
        let ended = |s: &&crate::client::Sample| s.error.is_none() && !s.cancelled;
        let asked = m.out.samples.iter().filter(ended);
        let asked = asked.map(|s| s.prompt_tokens_hint).sum();
        warns.extend(crate::replay::warnings(w, asked));
    }
    if let Some(why) = &m.out.cut_short {
        warns.push(format!("level cut short: {why}"));
    }
    warns.extend(died.map(str::to_string));
    warns.extend(m.stability.as_ref().and_then(unstable));
    warns
}

/// `--until-stable` ran into a bound before the interval was narrow enough.
fn unstable(s: &Stability) -> Option<String> {
    if s.stopped == StopReason::Stable {
        return None;
    }
    let reached = s
        .half_width_pct
        .map_or("no interval yet (too few requests)".into(), |h| {
            format!("the interval is +-{h:.1}%")
        });
    let stopped = serde_json::to_value(s.stopped).unwrap_or_default();
    Some(format!(
        "not stable within {}%: {reached} when the level stopped ({}); \
         raise --max-requests or --duration, or accept a wider --until-stable",
        s.pct_target,
        stopped.as_str().unwrap_or("")
    ))
}

/// The level's warnings and, unless quiet, its one-line summary.
fn tell(lp: &LevelPlan, m: &Measured, warns: &[String]) {
    for w in warns {
        diag::warning(TOOL, format!("{}: {w}", m.label));
    }
    if lp.quiet {
        return;
    }
    let agg = &m.agg;
    diag::info(
        TOOL,
        format!(
            "{}: {} ok, {} failed, {:.2} req/s, {:.1} out tok/s, TTFT p50 {:.1} ms",
            m.label,
            agg.counts.completed,
            agg.counts.failed,
            agg.throughput.requests_per_s,
            agg.throughput.output_tok_per_s,
            agg.latency.ttft_ms.p50
        ),
    );
}

fn bench_record(
    ctx: &Context,
    up: &Upstream,
    m: Measured,
    warnings: Vec<String>,
    partial: bool,
) -> BenchRecord {
    let agg = m.agg;
    BenchRecord {
        schema: SCHEMA_VERSION,
        config: up.config.clone(),
        provenance: sweepkit::records::Provenance::new(TOOL, m.started),
        server: ctx.server.clone(),
        load: m.load,
        counts: agg.counts,
        errors: agg.errors,
        throughput: agg.throughput,
        latency: agg.latency,
        histograms: agg.histograms,
        itl_method: agg.itl_method.map(str::to_string),
        tokens_per_chunk: agg.tokens_per_chunk,
        client_cpu_s: Some(crate::stats::round3(m.cpu)),
        steady: agg.steady,
        spec: m.spec,
        server_metrics: m.server_metrics,
        gpu: m.gpu,
        stability: m.stability,
        capacity: None,
        label: None,
        warnings,
        partial,
        slurm: None,
        slot: None,
        upstream: up.raw.clone(),
    }
}

/// The status when no request completed and every one failed on HTTP 401
/// or 403 (the first such status): the server wants an API key.
fn key_refused_everywhere(agg: &Aggregate) -> Option<u16> {
    if agg.counts.completed > 0 || agg.counts.failed == 0 {
        return None;
    }
    let statuses: Vec<Option<u16>> = agg
        .errors
        .keys()
        .map(|k| k.strip_prefix("http_").and_then(|c| c.parse().ok()))
        .collect();
    let all = statuses
        .iter()
        .all(|s| s.is_some_and(sweepkit::api::is_key_refusal));
    all.then(|| statuses.first().copied().flatten()).flatten()
}

fn error_summary(agg: &Aggregate) -> String {
    agg.errors
        .iter()
        .map(|(k, v)| format!("{k} x{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn warnings(
    lp: &LevelPlan,
    ctx: &Context,
    agg: &Aggregate,
    cpu: f64,
    spec: Option<&SpecStats>,
    shape: Shape,
) -> Vec<String> {
    let mut w = Vec::new();
    if agg.counts.usage_missing > 0 {
        w.push(format!(
            "{} responses had no usage; their output tokens were counted from chunks \
             (the server may not support stream_options.include_usage)",
            agg.counts.usage_missing
        ));
    }
    if lp.ignore_eos && agg.counts.early_stops > 0 {
        w.push(format!(
            "{} requests stopped before max_tokens although ignore_eos was set: the server \
             may not honour ignore_eos; compare output tok/s with care",
            agg.counts.early_stops
        ));
    }
    let speculates = spec.is_some()
        || ctx
            .server_info
            .as_ref()
            .is_some_and(speculative::server_speculates);
    if speculates && lp.ignore_eos && lp.temperature == Some(0.0) {
        w.push(
            "temperature 0 with ignore_eos under speculative decoding: repetitive greedy \
             output flatters acceptance; use real prompts (--prompts-file) or temperature > 0"
                .into(),
        );
    }
    w.extend(client_bound(lp.client_threads, agg, cpu));
    w.extend(spec.and_then(speculative::not_per_level_warning));
    if let (Shape::Closed { concurrency }, Some(cap)) = (shape, ctx.server.max_running_requests) {
        w.extend(crate::generate::over_cap(concurrency, cap));
    }
    w
}

/// Was the client the bottleneck? The event loop runs on
/// --client-threads threads: that many cores at most, however many the
/// machine has.
fn client_bound(threads: u32, agg: &Aggregate, cpu: f64) -> Option<String> {
    let el = agg.throughput.elapsed_s;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let usable = cores.min(threads as usize).max(1) as f64;
    let lag99 = agg.latency.start_lag_ms.p99;
    if !(el > 0.0 && (cpu / el > 0.8 * usable || lag99 > 10.0)) {
        return None;
    }
    let more = if (threads as usize) < cores {
        "raise --client-threads, "
    } else {
        ""
    };
    Some(format!(
        "the client may be the bottleneck (start lag p99 {lag99:.1} ms, client CPU {:.0}% \
         of {usable} thread(s)): {more}run loadgen on another machine or lower the load",
        100.0 * cpu / el / usable
    ))
}
