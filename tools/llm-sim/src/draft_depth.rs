//! How many draft tokens each decode step uses (its draft depth): the
//! static flags, vLLM's per-batch-size lookup (`dynamic_sd`), or SGLang's
//! adaptive slots (`adaptive`). The engine thread asks before each step and
//! reports the verify results after it; and the depth each request's
//! speculative KV is reserved for, which a per-step depth does not lower.

use crate::resolve::Resolved;

/// The engine's per-step draft-depth policy.
#[derive(Debug)]
pub enum DraftDepth {
    /// Every step drafts the same number of tokens.
    Static(u32),
    /// vLLM: `lookup[number of requests in the step]`, clamped to the
    /// table (vllm/v1/core/sched/scheduler.py `schedule()`).
    PerBatch(Vec<u32>),
    /// SGLang: each batch-size slot's current steps, moved by its EMA.
    Adaptive(crate::adaptive::Adaptive),
}

impl DraftDepth {
    /// The policy the resolved flags ask for; `steps` is the most the
    /// model drafts (vLLM's `num_speculative_tokens`).
    pub fn new(spec: &Resolved, steps: u32) -> DraftDepth {
        if let Some((cfg, initial)) = &spec.adaptive {
            return DraftDepth::Adaptive(crate::adaptive::Adaptive::new(cfg, *initial));
        }
        let ranges = spec
            .spec_config
            .as_ref()
            .and_then(|v| crate::dynamic_sd::ranges(v).ok().flatten());
        match ranges {
            Some(r) if steps > 0 => {
                DraftDepth::PerBatch(crate::dynamic_sd::lookup(&r, spec.max_running, steps))
            }
            _ => DraftDepth::Static(steps),
        }
    }

    /// Draft tokens per sequence for a step running `batch` requests.
    pub fn steps(&mut self, batch: usize) -> u32 {
        match self {
            DraftDepth::Static(n) => *n,
            DraftDepth::PerBatch(t) if batch == 0 => t.get(1).copied().unwrap_or(0),
            DraftDepth::PerBatch(t) => t[batch.min(t.len() - 1)],
            DraftDepth::Adaptive(a) => a.steps_for(batch),
        }
    }

    /// The accepted draft tokens of each decoding sequence (0 for all when
    /// the step drafted none) in a step of `batch` requests.
    pub fn observe(&mut self, batch: usize, accepted: &[u32]) {
        if let DraftDepth::Adaptive(a) = self {
            a.observe(batch, accepted);
        }
    }
}

impl Resolved {
    /// The steps each request's speculative KV is reserved for. SGLang's
    /// adaptive mode sizes for the deepest candidate of any slot, whatever
    /// the launch steps: `get_alloc_len_per_decode` (mem_cache/
    /// allocation_sizing.py) takes `max(steps * topk,
    /// max_speculative_num_draft_tokens())`, which under
    /// `--speculative-adaptive` is `max(candidate_steps) + 1` over the union
    /// of slots (speculative/spec_info.py
    /// `resolve_max_speculative_num_draft_tokens`). vLLM reserves the static
    /// `num_lookahead_tokens` from `num_speculative_tokens` (`steps` here)
    /// while its per-batch lookup only changes the tokens scheduled
    /// (v1/core/sched/scheduler.py `allocate_slots(...,
    /// num_lookahead_tokens=self.num_lookahead_tokens)`).
    pub fn kv_steps(&self) -> u32 {
        match &self.adaptive {
            Some((cfg, _)) => cfg
                .candidates()
                .last()
                .copied()
                .unwrap_or(0)
                .max(self.steps),
            None => self.steps,
        }
    }
}
