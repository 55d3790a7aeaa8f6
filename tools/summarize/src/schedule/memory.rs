//! Why a schedule loses at a level: both servers reserve speculative KV
//! for the schedule's deepest depth at every load, so where the best
//! static value there is shallower, the schedule pays the deeper value's
//! memory whatever depth it drafts. One line per such level, naming the
//! cause and what to try (a schedule capped at that depth).
//!
//! SGLang 0.5.23: `get_alloc_len_per_decode` (srt/mem_cache/
//! allocation_sizing.py) reserves `max(steps * topk,
//! max_speculative_num_draft_tokens())` per request and decode step (twice
//! that, `get_alloc_reserve_per_decode`), and under `--speculative-adaptive`
//! `resolve_max_speculative_num_draft_tokens` (srt/speculative/spec_info.py)
//! is the deepest candidate of any slot + 1. vLLM 0.32: the scheduler
//! allocates slots with the static `num_lookahead_tokens` (from
//! `num_speculative_tokens`, the schedule's largest k;
//! v1/core/sched/scheduler.py `schedule()` -> `allocate_slots`), while
//! `dynamic_sd_lookup` only changes the tokens scheduled per step.

use crate::analysis::schedule_cells::{Cell, Verdict};
use crate::analysis::Analysis;
use crate::cli::Server;

/// The note of the schedule's cell at level `c`, when it is worse beyond
/// noise than the best static value there (or lower with the noise
/// unknown, where static `deepest` waited for KV) and that value is
/// shallower than the schedule's deepest depth `deepest`.
pub fn note(
    a: &Analysis,
    server: &str,
    deepest: Option<u32>,
    c: usize,
    cell: &Cell,
) -> Option<String> {
    let deepest = deepest?;
    let srv = match server {
        "vllm" => Server::Vllm,
        "sglang" => Server::Sglang,
        _ => return None,
    };
    let best = a.best_per_level[c]?;
    let k = crate::schedule::depth_of(srv, &a.model.rows[best].config)
        .ok()?
        .k;
    if k >= deepest {
        return None;
    }
    // Worse beyond noise; or, with the noise unknown (one run each),
    // lower where the records show static `deepest` waiting for KV there:
    // without repeats a lower median alone may be noise or another cause.
    let lower = |m: f64| {
        cell.stat
            .as_ref()
            .is_some_and(|s| a.opts.metric.better.beats(m, s.median))
    };
    let vs = cell.vs_best.as_ref()?;
    // The records are read only for a level that may get the note.
    let bound = || crate::schedule::depth_cap::kv_bound(a, srv, deepest, k, c);
    let waited = match vs.verdict {
        Verdict::Worse => bound(),
        Verdict::Unknown if lower(vs.median) => Some(bound()?),
        _ => return None,
    };
    let evidence = match waited {
        None => String::new(),
        Some(crate::schedule::depth_cap::Bound::Waited(x)) => format!(
            "static {deepest}'s requests waited {:.0}% of their latency longer for a \
             first token here (KV-bound, inferred from waits); ",
            x * 100.0
        ),
        Some(crate::schedule::depth_cap::Bound::Measured(words)) => {
            format!("KV-bound, measured by the servers: {words}; ")
        }
    };
    Some(format!(
        "{evidence}the schedule reserves speculative KV for its deepest depth \
         {deepest} at every load (both servers do), which {} does not: try it capped \
         at {k} (summarize --schedule {server} --max-depth {k})",
        vs.label
    ))
}

/// The note of level `c` when its concurrency is above the schedule's max
/// batch (SGLang runs at most 48 requests with speculation on and
/// `--max-running-requests` unset, `SGLANG_DEFAULT_MAX_BATCH`): the rest
/// wait in the server's queue at any depth, so that level measures the
/// cap as much as the schedule.
pub fn cap_note(
    a: &Analysis,
    plan: Option<&crate::input::schedule_plan::Plan>,
    c: usize,
) -> Option<String> {
    let p = plan?;
    let level = &a.model.levels[c];
    let n = level.value();
    (!level.is_open() && n > p.max_batch as f64).then(|| {
        format!(
            "above the server's max batch of {} (from {}): at most {} requests run at \
             once and the other {} wait in its queue, whatever the depth",
            p.max_batch,
            p.max_batch_source,
            p.max_batch,
            crate::input::level::trim_float(n - p.max_batch as f64)
        )
    })
}
