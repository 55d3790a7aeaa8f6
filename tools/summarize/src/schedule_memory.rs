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

use crate::analysis::Analysis;
use crate::cli::Server;
use crate::schedule_cells::{Cell, Verdict};

/// The note of the schedule's cell at level `c`, when it is worse beyond
/// noise than the best static value there and that value is shallower
/// than the schedule's deepest depth `deepest`.
pub fn note(
    a: &Analysis,
    server: &str,
    deepest: Option<u32>,
    c: usize,
    cell: &Cell,
) -> Option<String> {
    let vs = cell
        .vs_best
        .as_ref()
        .filter(|v| v.verdict == Verdict::Worse)?;
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
    (k < deepest).then(|| {
        format!(
            "{} is shallower than the schedule's deepest depth {deepest}: both servers \
             reserve speculative KV for the deepest depth at every load (SGLang \
             get_alloc_len_per_decode, vLLM num_lookahead_tokens), so a schedule cannot \
             win back a loss that comes from speculative memory; try a schedule capped \
             at depth {k} (summarize --schedule {server} --max-depth {k})",
            vs.label
        )
    })
}
