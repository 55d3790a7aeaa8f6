//! Measuring one level: warm up, sample the server's /metrics (and the
//! GPUs) through the level (scrape/), run the load, aggregate, and pick
//! the level's spec figures. What it
//! measured (`Measured`) is judged by classify.rs and written by
//! record.rs; `Progress` carries from one level to the next.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::sync::atomic::AtomicBool;
use std::time::{Instant, SystemTime};

use sweepkit::records::{
    BenchRecord, GpuTelemetry, Load, LoadMode, ServerMetrics, SpecStats, Stability, StopReason,
};

use crate::client::Sample;
use crate::level::{self, Bound, Ended, Env, Outcome, Shape};
use crate::metrics::{aggregate, Aggregate};
use crate::output;
use crate::per_request::Derived;
use crate::plan::{LevelPlan, Plan, UntilStable};
use crate::server_death;
use crate::setup::Context;
use crate::speculative;
use crate::stability::{Tracker, BATCHES};

/// Process CPU time (user + system) so far, in seconds.
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes into the struct we own; RUSAGE_SELF is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// One level to run: its shape and, with `--repeat`, which run it is.
#[derive(Debug, Clone, Copy)]
pub struct Level {
    pub shape: Shape,
    pub repeat: Option<u32>,
}

/// What carries from one level to the next.
pub struct Progress {
    /// Index of the next prompt (levels rotate through the pool).
    pub offset: u64,
    /// Has the server answered anything yet? Setup's model list or server
    /// info count; a server that never answered is unreachable, not dead.
    pub answered: bool,
    /// Some level had failed requests (exit 3 at the end).
    pub any_failed: bool,
}

/// A level's measurement, before it is judged.
pub struct Measured {
    pub level: Level,
    pub label: String,
    pub load: Load,
    pub started: SystemTime,
    pub out: Outcome,
    pub agg: Aggregate,
    pub derived: Vec<Option<Derived>>,
    /// Client CPU seconds during the measurement.
    pub cpu: f64,
    pub spec: Option<SpecStats>,
    /// `--until-stable`: the interval and why the level stopped.
    pub stability: Option<Stability>,
    /// What the server's /metrics and the GPUs said (scrape/).
    pub server_metrics: Option<ServerMetrics>,
    pub gpu: Option<GpuTelemetry>,
}

/// Warm up, scrape, run the level, aggregate.
pub(crate) fn measure(
    plan: &Plan,
    ctx: &Context,
    level: Level,
    p: &mut Progress,
    interrupted: &AtomicBool,
) -> Measured {
    let lp = &plan.level;
    let bound = match &ctx.sessions {
        // A sessions level runs every session of the file.
        Some(run) => Bound {
            count: Some(run.scripts.iter().map(|s| s.turns.len() as u64).sum()),
            duration: None,
        },
        None => bound_for(lp, level.shape, ctx.prepared.len()),
    };
    let started = SystemTime::now();
    let mut load = load_of(lp, ctx, plan.endpoint_path, level, bound);
    // Each trace level replays the trace from its first line.
    let offset = match level.shape {
        Shape::Trace { .. } => 0,
        _ => p.offset,
    };
    let label = output::label(&BenchRecord {
        load: load.clone(),
        ..BenchRecord::default()
    });
    let noop = |_: &Sample, _: Option<Instant>| false;
    let mut env = Env {
        rt: &ctx.rt,
        target: ctx.target.clone(),
        prepared: ctx.prepared.clone(),
        offset,
        trace_ms: ctx.trace_ms.clone(),
        sessions: ctx.sessions.clone(),
        cancel: None,
        interrupted,
        deadline: Instant::now() + lp.level_timeout,
        seed: lp.seed,
        on_sample: &noop,
    };
    p.answered |= warm_up(&mut env, lp, level.shape);
    let src = &ctx.sources;
    let sampling =
        crate::scrape::LevelScrape::start(src.server.as_ref(), src.dcgm.as_ref(), src.interval);
    let (out, cpu, stability) = run_measured(&env, lp, &label, level.shape, bound);
    let window = out
        .window
        .filter(|_| matches!(level.shape, Shape::Closed { .. }));
    let seen = sampling.finish(window, src.smi.as_ref());
    p.offset = env.offset + out.samples.len() as u64;
    let (agg, derived) = aggregate_level(plan, &out, level.shape);
    if bound.duration.is_some() || stability.is_some() {
        load.requests = Some(out.samples.len() as u64);
    }
    if let Some(w) = load.workload.as_mut() {
        crate::replay::fill(w, &out, &agg);
        if let Some(run) = &ctx.sessions {
            let turns: Vec<usize> = run.scripts.iter().map(|s| s.turns.len()).collect();
            crate::session_stats::fill(w, &out.samples, &derived, &turns);
        }
    }
    let spec = spec_stats(ctx, lp.scrape, &agg, (seen.spec_before, seen.spec_after));
    let gpu = src.gpu().and_then(|(source, origin)| {
        let output = (agg.counts.output_tokens, agg.throughput.output_tok_per_s);
        crate::scrape::gpu::telemetry(&seen.gpu, source, origin, seen.span, output)
    });
    Measured {
        level,
        label,
        load,
        started,
        out,
        agg,
        derived,
        cpu,
        spec,
        stability,
        server_metrics: seen.server_metrics,
        gpu,
    }
}

/// The warm-up requests (closed loop, at most 16 in flight for an open
/// level); true when the server answered any of them.
fn warm_up(env: &mut Env, lp: &LevelPlan, shape: Shape) -> bool {
    if lp.warmup == 0 {
        return false;
    }
    let wshape = match shape {
        Shape::Closed { concurrency } => Shape::Closed { concurrency },
        Shape::Open { max_inflight, .. } | Shape::Trace { max_inflight, .. } => Shape::Closed {
            concurrency: max_inflight.min(16),
        },
    };
    let bound = Bound {
        count: Some(lp.warmup),
        duration: None,
    };
    let warm = level::run(env, wshape, bound);
    env.offset += lp.warmup;
    warm.samples.iter().any(server_death::answered)
}

/// The measured run, with a progress bar on a terminal and the
/// `--until-stable` tracker; its client CPU and stability.
fn run_measured(
    env: &Env,
    lp: &LevelPlan,
    label: &str,
    shape: Shape,
    bound: Bound,
) -> (Outcome, f64, Option<Stability>) {
    let pb = progress(lp.quiet, label, bound.count);
    let tracker = lp
        .until_stable
        .map(|u| RefCell::new(Tracker::new(u.pct, min_requests(u, shape))));
    let tick = |s: &Sample, from: Option<Instant>| {
        if let Some(p) = &pb {
            p.inc(1);
        }
        tracker
            .as_ref()
            .is_some_and(|t| t.borrow_mut().add(s, from))
    };
    let env = Env {
        target: env.target.clone(),
        prepared: env.prepared.clone(),
        trace_ms: env.trace_ms.clone(),
        sessions: env.sessions.clone(),
        cancel: lp.cancel,
        on_sample: &tick,
        ..*env
    };
    let cpu0 = cpu_seconds();
    let out = level::run(&env, shape, bound);
    let cpu = cpu_seconds() - cpu0;
    if let Some(p) = &pb {
        p.finish_and_clear();
    }
    let stability = lp
        .until_stable
        .zip(tracker)
        .map(|(u, t)| stability(u, &t.into_inner(), out.ended, bound));
    (out, cpu, stability)
}

/// The record's stability block: the interval and what ended the level.
fn stability(u: UntilStable, t: &Tracker, ended: Ended, bound: Bound) -> Stability {
    let stopped = match ended {
        Ended::Enough => StopReason::Stable,
        Ended::Bound if bound.duration.is_some() => StopReason::Duration,
        Ended::Bound => StopReason::MaxRequests,
        Ended::Deadline => StopReason::LevelTimeout,
        Ended::Interrupted => StopReason::Interrupted,
        Ended::ServerGone => StopReason::ServerGone,
    };
    let iv = t.interval();
    Stability {
        pct_target: u.pct,
        half_width_pct: iv.map(|i| crate::stats::round3(i.half_width_pct)),
        mean_output_tok_per_s: iv.map(|i| crate::stats::round3(i.mean)),
        batches: BATCHES as u64,
        batch_size: iv.map_or(0, |i| i.batch_size),
        stopped,
    }
}

/// The level's default request count (fixed mode; a trace level sends
/// the whole trace window, which plan.rs keeps apart from the count flags).
fn default_count(shape: Shape) -> u64 {
    match shape {
        Shape::Closed { concurrency } => (8 * concurrency as u64).max(16),
        Shape::Open { rate, .. } => ((10.0 * rate).ceil() as u64).max(16),
        Shape::Trace { .. } => 16,
    }
}

/// `--min-requests`, or the level's default count, at least two per batch.
fn min_requests(u: UntilStable, shape: Shape) -> u64 {
    u.min_requests
        .unwrap_or_else(|| default_count(shape).max(2 * BATCHES as u64))
}

fn aggregate_level(plan: &Plan, out: &Outcome, shape: Shape) -> (Aggregate, Vec<Option<Derived>>) {
    let window = match shape {
        Shape::Closed { .. } => out.window,
        Shape::Open { .. } | Shape::Trace { .. } => None,
    };
    let lp = &plan.level;
    let (mut agg, derived) = aggregate(
        &out.samples,
        lp.stream,
        lp.ignore_eos,
        plan.slo.as_ref(),
        window,
    );
    if out.abandoned > 0 {
        agg.counts.failed += out.abandoned;
        *agg.errors.entry("abandoned".into()).or_default() += out.abandoned;
    }
    (agg, derived)
}

fn bound_for(lp: &LevelPlan, shape: Shape, trace_len: usize) -> Bound {
    if let Shape::Trace { .. } = shape {
        return Bound {
            count: Some(trace_len as u64),
            duration: None,
        };
    }
    if let Some(d) = lp.duration {
        return Bound {
            count: None,
            duration: Some(d),
        };
    }
    // With --until-stable the count is a cap: ten times the fixed
    // default, and never below --min-requests.
    let count = match (lp.requests, lp.until_stable) {
        (Some(n), _) => n,
        (None, None) => default_count(shape),
        (None, Some(u)) => (10 * default_count(shape)).max(min_requests(u, shape)),
    };
    Bound {
        count: Some(count),
        duration: None,
    }
}

fn progress(quiet: bool, label: &str, total: Option<u64>) -> Option<indicatif::ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = match total {
        Some(n) => indicatif::ProgressBar::new(n),
        None => indicatif::ProgressBar::new_spinner(),
    };
    let style = indicatif::ProgressStyle::with_template(
        "loadgen: {prefix} [{bar:30}] {pos}/{len} {per_sec} {elapsed}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    pb.set_style(style);
    pb.set_prefix(label.to_string());
    Some(pb)
}

/// Pick the spec figures, the level's own first: SGLang `/generate`
/// `meta_info` sums, /metrics counter deltas, `timings` sums; else, marked
/// as not the level's own, SGLang's /metrics gauge (a recent window) or
/// its lifetime /server_info average (see speculative.rs for each source).
pub fn spec_stats(
    ctx: &Context,
    scraping: bool,
    agg: &Aggregate,
    (before, after): (
        Option<speculative::SpecCounters>,
        Option<speculative::SpecCounters>,
    ),
) -> Option<SpecStats> {
    if let Some(s) = agg.sglang.and_then(speculative::from_sglang) {
        return Some(s);
    }
    if let (Some(b), Some(after)) = (before, after) {
        if let Some(s) = speculative::from_deltas(b, after) {
            return Some(s);
        }
    }
    if let (Some(n), Some(acc)) = (agg.draft_n, agg.draft_accepted) {
        if let Some(s) = speculative::from_timings(n, acc) {
            return Some(s);
        }
    }
    // Counters that did not move mean no drafts this level: a lifetime
    // average from /server_info would only mislead.
    if !scraping || after.is_some_and(|c| c.present) {
        return None;
    }
    let info = ctx.probe.server_info()?;
    if !speculative::server_speculates(&info) {
        return None;
    }
    after
        .and_then(speculative::from_gauge)
        .or_else(|| speculative::from_lifetime(&info))
}

fn load_of(lp: &LevelPlan, ctx: &Context, endpoint: &str, level: Level, bound: Bound) -> Load {
    let mut workload = ctx.workload.clone();
    let (mode, concurrency, rate, burst, cap) = match level.shape {
        Shape::Closed { concurrency } => (LoadMode::Closed, Some(concurrency), None, None, None),
        Shape::Trace {
            speed,
            max_inflight,
        } => {
            workload.speed = Some(speed);
            let rate = crate::replay::mean_rate(&workload, speed);
            (LoadMode::Trace, None, rate, None, Some(max_inflight))
        }
        Shape::Open {
            rate,
            burstiness,
            max_inflight,
        } => (
            LoadMode::Open,
            None,
            Some(rate),
            Some(burstiness),
            Some(max_inflight),
        ),
    };
    Load {
        mode,
        concurrency,
        rate_rps: rate,
        burstiness: burst,
        endpoint: endpoint.into(),
        stream: lp.stream,
        warmup_requests: lp.warmup,
        requests: bound.count,
        duration_s: bound.duration.map(|d| d.as_secs_f64()),
        input_tokens: ctx.synthetic_input_tokens,
        max_tokens: Some(lp.max_tokens),
        ignore_eos: lp.ignore_eos,
        temperature: lp.temperature,
        prompts: ctx.prompts_label.clone(),
        input_len_method: ctx.input_len_method.clone(),
        seed: Some(lp.seed),
        max_inflight: cap,
        slo: lp.slo_text.clone(),
        repeat: level.repeat,
        cancel_rate: lp.cancel.map(|c| c.rate),
        cancel_after_s: lp.cancel.map(|c| c.after.as_secs_f64()),
        workload: Some(workload),
    }
}
