//! The level loop: for each concurrency or rate, warm up, scrape the spec
//! counters, measure, scrape again, and write one bench record (or a
//! failure record when every request failed or the server died).

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::sync::atomic::AtomicBool;
use std::time::{Instant, SystemTime};

use anyhow::{anyhow, Context as _};
use sweepkit::exit;
use sweepkit::records::{BenchRecord, FailureKind, Load, Record, SpecStats, SCHEMA_VERSION};
use sweepkit::report::{self, Exit, WithCode};

use crate::args::Args;
use crate::death;
use crate::level::{self, Bound, Env, Shape};
use crate::metrics::{aggregate, Aggregate};
use crate::output::{self, Sink};
use crate::setup::{failure_record, Context, Plan};
use crate::spec;
use crate::upstream::Upstream;

const TOOL: &str = "loadgen";

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

fn bound_for(a: &Args, shape: Shape) -> Bound {
    if let Some(d) = a.duration {
        return Bound {
            count: None,
            duration: Some(d),
        };
    }
    let default = match shape {
        Shape::Closed { concurrency } => (8 * concurrency as u64).max(16),
        Shape::Open { rate, .. } => ((10.0 * rate).ceil() as u64).max(16),
    };
    Bound {
        count: Some(a.requests.unwrap_or(default)),
        duration: None,
    }
}

fn progress(a: &Args, label: &str, total: Option<u64>) -> Option<indicatif::ProgressBar> {
    if a.quiet || !std::io::stderr().is_terminal() {
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

fn scrape(ctx: &Context, a: &Args) -> Option<spec::SpecCounters> {
    if a.no_scrape {
        return None;
    }
    ctx.probe
        .get_text("/metrics")
        .map(|t| spec::parse_metrics(&t))
}

/// Pick the spec figures, the level's own first: SGLang `/generate`
/// `meta_info` sums, /metrics counter deltas, `timings` sums; else, marked
/// as not the level's own, SGLang's /metrics gauge (a recent window) or
/// its lifetime /server_info average (see spec.rs for each source).
fn spec_stats(
    ctx: &Context,
    a: &Args,
    agg: &Aggregate,
    before: Option<spec::SpecCounters>,
) -> Option<SpecStats> {
    if let Some(s) = agg.sglang.and_then(spec::from_sglang) {
        return Some(s);
    }
    let after = before.and_then(|_| scrape(ctx, a));
    if let (Some(b), Some(after)) = (before, after) {
        if let Some(s) = spec::from_deltas(b, after) {
            return Some(s);
        }
    }
    if let (Some(n), Some(acc)) = (agg.draft_n, agg.draft_accepted) {
        if let Some(s) = spec::from_timings(n, acc) {
            return Some(s);
        }
    }
    // Counters that did not move mean no drafts this level: a lifetime
    // average from /server_info would only mislead.
    if a.no_scrape || after.is_some_and(|c| c.present) {
        return None;
    }
    let info = ctx.probe.server_info()?;
    if !spec::server_speculates(&info) {
        return None;
    }
    after
        .and_then(spec::from_gauge)
        .or_else(|| spec::from_lifetime(&info))
}

fn load_of(a: &Args, ctx: &Context, plan: &Plan, shape: Shape, bound: Bound) -> Load {
    let (mode, concurrency, rate, burst, cap) = match shape {
        Shape::Closed { concurrency } => ("closed", Some(concurrency), None, None, None),
        Shape::Open {
            rate,
            burstiness,
            max_inflight,
        } => (
            "open",
            None,
            Some(rate),
            Some(burstiness),
            Some(max_inflight),
        ),
    };
    Load {
        mode: mode.into(),
        concurrency,
        rate_rps: rate,
        burstiness: burst,
        endpoint: plan.endpoint_path.into(),
        stream: !a.no_stream,
        warmup_requests: a.warmup,
        requests: bound.count,
        duration_s: bound.duration.map(|d| d.as_secs_f64()),
        input_tokens: ctx.synthetic_input_tokens,
        max_tokens: Some(a.max_tokens),
        ignore_eos: a.ignore_eos,
        temperature: a.temperature,
        prompts: ctx.prompts_label.clone(),
        input_len_method: ctx.input_len_method.clone(),
        seed: Some(a.seed),
        max_inflight: cap,
        slo: a.slo.clone(),
        repeat: None,
    }
}

fn error_summary(agg: &Aggregate) -> String {
    agg.errors
        .iter()
        .map(|(k, v)| format!("{k} x{v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn warnings(
    a: &Args,
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
    if a.ignore_eos && agg.counts.early_stops > 0 {
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
            .is_some_and(spec::server_speculates);
    if speculates && a.ignore_eos && a.temperature == Some(0.0) {
        w.push(
            "temperature 0 with ignore_eos under speculative decoding: repetitive greedy \
             output flatters acceptance; use real prompts (--prompts-file) or temperature > 0"
                .into(),
        );
    }
    let el = agg.throughput.elapsed_s;
    // The event loop runs on --client-threads threads: that many cores
    // at most, however many the machine has.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let usable = cores.min(a.client_threads as usize).max(1) as f64;
    let lag99 = agg.latency.start_lag_ms.p99;
    if el > 0.0 && (cpu / el > 0.8 * usable || lag99 > 10.0) {
        let more = if (a.client_threads as usize) < cores {
            "raise --client-threads, "
        } else {
            ""
        };
        w.push(format!(
            "the client may be the bottleneck (start lag p99 {lag99:.1} ms, client CPU {:.0}% \
             of {usable} thread(s)): {more}run loadgen on another machine or lower the load",
            100.0 * cpu / el / usable
        ));
    }
    w.extend(spec.and_then(spec::not_per_level_warning));
    if let (Shape::Closed { concurrency }, Some(cap)) = (shape, ctx.server.max_running_requests) {
        w.extend(crate::generate::over_cap(concurrency, cap));
    }
    w
}

/// Run every level in turn; write records; map outcomes to the exit code.
pub fn run_all<W: Write>(
    a: &Args,
    plan: &Plan,
    ctx: &Context,
    up: &Upstream,
    sink: &mut Sink<W>,
    interrupted: &AtomicBool,
) -> Result<(), Exit> {
    let mut req_out = match &a.requests_out {
        None => None,
        Some(p) => Some(BufWriter::new(
            File::create(p)
                .with_context(|| format!("--requests-out {}", p.display()))
                .code(exit::USAGE)?,
        )),
    };
    let mut any_failed = false;
    // Has the server answered anything yet? Setup's model list or server
    // info count; a server that never answered is unreachable, not dead.
    let mut answered_before = a.model.is_none() || ctx.server_info.is_some();
    let mut offset = 0u64;
    let runs = plan
        .shapes
        .iter()
        .flat_map(|&s| (1..=a.repeat).map(move |i| (s, i)));
    for (shape, rep) in runs {
        let bound = bound_for(a, shape);
        let started = SystemTime::now();
        let deadline = Instant::now() + a.level_timeout;
        let noop = || {};
        let mut env = Env {
            rt: &ctx.rt,
            target: ctx.target.clone(),
            prepared: ctx.prepared.clone(),
            offset,
            interrupted,
            deadline,
            seed: a.seed,
            on_sample: &noop,
        };
        let mut load = load_of(a, ctx, plan, shape, bound);
        load.repeat = (a.repeat > 1).then_some(rep);
        let label = output::label(&BenchRecord {
            load: load.clone(),
            ..BenchRecord::default()
        });
        if a.warmup > 0 {
            let wshape = match shape {
                Shape::Closed { concurrency } => Shape::Closed { concurrency },
                Shape::Open { max_inflight, .. } => Shape::Closed {
                    concurrency: max_inflight.min(16),
                },
            };
            let warm = level::run(
                &env,
                wshape,
                Bound {
                    count: Some(a.warmup),
                    duration: None,
                },
            );
            answered_before |= warm.samples.iter().any(death::answered);
            env.offset += a.warmup;
        }
        let before = scrape(ctx, a);
        let pb = progress(a, &label, bound.count);
        let tick = || {
            if let Some(p) = &pb {
                p.inc(1);
            }
        };
        env.on_sample = &tick;
        let cpu0 = cpu_seconds();
        let out = level::run(&env, shape, bound);
        let cpu = cpu_seconds() - cpu0;
        if let Some(p) = &pb {
            p.finish_and_clear();
        }
        offset = env.offset + out.samples.len() as u64;
        let window = match shape {
            Shape::Closed { .. } => out.window,
            Shape::Open { .. } => None,
        };
        let (mut agg, derived) = aggregate(
            &out.samples,
            !a.no_stream,
            a.ignore_eos,
            plan.slo.as_ref(),
            window,
        );
        if out.abandoned > 0 {
            agg.counts.failed += out.abandoned;
            *agg.errors.entry("abandoned".into()).or_default() += out.abandoned;
        }
        if let Some(w) = req_out.as_mut() {
            for (s, d) in out.samples.iter().zip(&derived) {
                let line = output::request_line(&label, out.started, s, d.as_ref());
                sweepkit::io::write_json_line(w, &line)
                    .context("--requests-out")
                    .code(exit::FAILURE)?;
            }
        }
        if bound.duration.is_some() {
            load.requests = Some(out.samples.len() as u64);
        }
        // Only a level with failures can have lost its server.
        let died = (agg.counts.failed > 0 || out.server_gone)
            .then(|| {
                death::server_died(
                    &plan.base_url,
                    &out.samples,
                    answered_before,
                    out.server_gone,
                )
            })
            .flatten();
        answered_before |= out.samples.iter().any(death::answered);
        let spec = spec_stats(ctx, a, &agg, before);
        let mut warns = warnings(a, ctx, &agg, cpu, spec.as_ref(), shape);
        if let Some(why) = &out.cut_short {
            warns.push(format!("level cut short: {why}"));
        }
        if let Some(why) = &died {
            warns.push(why.clone());
        }
        for w in &warns {
            report::warning(TOOL, format!("{label}: {w}"));
        }
        if !a.quiet {
            report::info(
                TOOL,
                format!(
                    "{label}: {} ok, {} failed, {:.2} req/s, {:.1} out tok/s, TTFT p50 {:.1} ms",
                    agg.counts.completed,
                    agg.counts.failed,
                    agg.throughput.requests_per_s,
                    agg.throughput.output_tok_per_s,
                    agg.latency.ttft_ms.p50
                ),
            );
        }
        if agg.counts.completed == 0 && agg.counts.failed > 0 {
            let kind = if died.is_some() {
                FailureKind::CrashedMidRun
            } else {
                FailureKind::BenchFailed
            };
            let mut reason = format!(
                "{label}: all {} requests failed ({})",
                agg.counts.failed,
                error_summary(&agg)
            );
            if let Some(why) = &died {
                reason = format!("{reason}: {why}");
            }
            let rec = failure_record(plan, up, kind, &reason);
            sink.record(&Record::Failure(rec))
                .context("writing stdout")
                .code(exit::FAILURE)?;
            if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Exit::silent(exit::INTERRUPTED));
            }
            return Err(Exit::new(exit::ALL_FAILED, anyhow!("{reason}")));
        }
        any_failed |= agg.counts.failed > 0;
        let rec = BenchRecord {
            schema: SCHEMA_VERSION,
            config: up.config.clone(),
            provenance: sweepkit::records::Provenance::new(TOOL, started),
            server: ctx.server.clone(),
            load,
            counts: agg.counts.clone(),
            errors: agg.errors.clone(),
            throughput: agg.throughput.clone(),
            latency: agg.latency.clone(),
            itl_method: agg.itl_method.map(str::to_string),
            tokens_per_chunk: agg.tokens_per_chunk,
            client_cpu_s: Some(crate::stats::round3(cpu)),
            steady: agg.steady.clone(),
            spec,
            warnings: warns,
            partial: out.cut_short.is_some() || died.is_some(),
            upstream: up.raw.clone(),
        };
        sink.record(&Record::Bench(rec))
            .context("writing stdout")
            .code(exit::FAILURE)?;
        if let Some(w) = req_out.as_mut() {
            w.flush().context("--requests-out").code(exit::FAILURE)?;
        }
        if interrupted.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(Exit::silent(exit::INTERRUPTED));
        }
        if let Some(why) = &died {
            // Later levels would only meet a closed port: stop here, and
            // say in the results file why this config has no more numbers.
            let reason = format!("{label}: {why}");
            let rec = failure_record(plan, up, FailureKind::CrashedMidRun, &reason);
            sink.record(&Record::Failure(rec))
                .context("writing stdout")
                .code(exit::FAILURE)?;
            return Err(Exit::new(exit::ALL_FAILED, anyhow!("{reason}")));
        }
    }
    if any_failed {
        return Err(Exit::new(
            exit::SOME_FAILED,
            anyhow!("some requests failed (see each record's errors)"),
        ));
    }
    Ok(())
}
