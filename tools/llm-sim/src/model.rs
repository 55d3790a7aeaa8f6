//! The performance model, as pure functions: what one decode step costs,
//! how many tokens it yields per sequence, how much KV a request holds.
//! The man page's PERFORMANCE MODEL section describes exactly this file.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cli::Args;
use crate::tokenize::VOCAB;

/// Acceptance beyond the draft horizon is P divided by this.
const BEYOND_HORIZON_DIVISOR: f64 = 6.0;
/// How much temperature 1 lowers acceptance (P' = P x (1 - 0.3 t)).
const TEMPERATURE_PENALTY: f64 = 0.3;

/// The model's parameters, taken from the flags.
#[derive(Debug, Clone)]
pub struct Model {
    pub base: Duration,
    pub per_seq: Duration,
    pub draft_step: Duration,
    pub prefill_per_token: Duration,
    pub steps: u32,
    /// The draft steps each request's KV reservation covers: `steps`,
    /// except under a draft depth that may go deeper than it launched
    /// with (see [`crate::resolve::Resolved::kv_steps`]).
    pub kv_steps: u32,
    pub accept_rate: f64,
    pub horizon: u32,
    pub kv_per_step: u64,
    pub kv_capacity: u64,
    pub context_length: u64,
    pub eos_prob: f64,
}

impl Model {
    /// The model of `a` with `steps` draft steps (as the server resolved them).
    pub fn from_args(a: &Args, steps: u32) -> Model {
        Model {
            base: a.step_time,
            per_seq: a.per_seq_time,
            draft_step: a.draft_step_time,
            prefill_per_token: a.prefill_per_token,
            steps,
            kv_steps: steps,
            accept_rate: a.speculative_accept_rate,
            horizon: a.speculative_draft_horizon,
            kv_per_step: a.speculative_kv_per_step,
            kv_capacity: a.kv_capacity_tokens,
            context_length: a.context_length,
            eos_prob: a.eos_prob,
        }
    }

    /// Per-draft-token acceptance after the temperature penalty.
    pub fn accept_prob(&self, temperature: f64) -> f64 {
        self.accept_prob_at(self.accept_rate, temperature)
    }

    /// [`Model::accept_prob`] for a request whose content has acceptance
    /// `rate` (`--speculative-accept-by`).
    pub fn accept_prob_at(&self, rate: f64, temperature: f64) -> f64 {
        let t = temperature.clamp(0.0, 1.0);
        rate * (1.0 - TEMPERATURE_PENALTY * t)
    }

    /// Acceptance probability of draft position `k` (1-based).
    fn position_prob(&self, p: f64, k: u32) -> f64 {
        if k <= self.horizon {
            p
        } else {
            p / BEYOND_HORIZON_DIVISOR
        }
    }

    /// Draw how many of the `steps` draft tokens are accepted: each in turn
    /// with its position's probability, stopping at the first rejection.
    pub fn draw_accepted(&self, rng: &mut StdRng, p: f64) -> u32 {
        self.draw_accepted_at(rng, p, self.steps)
    }

    /// [`Model::draw_accepted`] with `steps` drafted this step (a
    /// per-batch-size or adaptive draft depth picks fewer than the maximum).
    pub fn draw_accepted_at(&self, rng: &mut StdRng, p: f64, steps: u32) -> u32 {
        let mut k = 0;
        while k < steps && rng.gen_bool(self.position_prob(p, k + 1).clamp(0.0, 1.0)) {
            k += 1;
        }
        k
    }

    /// Expected tokens per decode step for one sequence (1 + E[accepted]).
    pub fn expected_tokens_per_step(&self, p: f64) -> f64 {
        let (mut reach, mut sum) = (1.0, 1.0);
        for k in 1..=self.steps {
            reach *= self.position_prob(p, k);
            sum += reach;
        }
        sum
    }

    /// Wall time of one step with `batch` running sequences, `prefill`
    /// prompt tokens admitted in it.
    pub fn step_time(&self, batch: usize, prefill: u64) -> Duration {
        self.step_time_at(batch, prefill, self.steps)
    }

    /// [`Model::step_time`] of a step that drafts `steps` tokens.
    pub fn step_time_at(&self, batch: usize, prefill: u64, steps: u32) -> Duration {
        self.base
            + self.per_seq * batch as u32
            + self.draft_step * steps
            + self.prefill_per_token * prefill.min(u32::MAX as u64) as u32
    }

    /// The model whose KV reservation covers `kv_steps` draft steps.
    pub fn reserving(mut self, kv_steps: u32) -> Model {
        self.kv_steps = kv_steps;
        self
    }

    /// KV tokens a request reserves while it runs: its tokens, plus the
    /// speculative buffers of the deepest step the server may draft.
    pub fn kv_need(&self, prompt: u64, max_tokens: u64) -> u64 {
        prompt + max_tokens + self.kv_steps as u64 * self.kv_per_step
    }

    /// Why the model cannot load (the speculative buffers of one
    /// full-context request do not fit), or None.
    pub fn load_oom(&self) -> Option<String> {
        let need = self.kv_need(self.context_length, 0);
        (need > self.kv_capacity).then(|| {
            format!(
                "context-length {} + {} steps x {} KV tokens = {} > kv-capacity-tokens {}",
                self.context_length, self.kv_steps, self.kv_per_step, need, self.kv_capacity
            )
        })
    }
}

/// Why a sequence stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Finish {
    Length,
    Stop,
}

impl Finish {
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
}

/// What one step yields for one sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// Token ids (indexes into the vocabulary).
    pub tokens: Vec<u32>,
    /// Draft tokens proposed in this step.
    pub drafted: u32,
    /// Draft tokens accepted (and emitted) in this step.
    pub accepted: u32,
    pub finish: Option<Finish>,
}

/// One request's generation state: its own random stream, so what it
/// yields does not depend on which other requests share its batches.
#[derive(Debug)]
pub struct Gen {
    pub max_tokens: u64,
    pub ignore_eos: bool,
    pub accept_p: f64,
    pub generated: u64,
    pub rng: StdRng,
}

impl Gen {
    pub fn new(seed: u64, max_tokens: u64, ignore_eos: bool, accept_p: f64) -> Gen {
        Gen {
            max_tokens,
            ignore_eos,
            accept_p,
            generated: 0,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// Run one step: the first (prefill) step yields one token, later ones
    /// 1 + accepted drafts; tokens stop at max_tokens or a drawn EOS.
    pub fn step(&mut self, m: &Model) -> Chunk {
        self.step_at(m, m.steps)
    }

    /// [`Gen::step`] in a step that drafts `steps` tokens per sequence.
    pub fn step_at(&mut self, m: &Model, steps: u32) -> Chunk {
        let first = self.generated == 0;
        let (drafted, mut accepted) = if first || steps == 0 {
            (0, 0)
        } else {
            (
                steps,
                m.draw_accepted_at(&mut self.rng, self.accept_p, steps),
            )
        };
        let want = (1 + accepted as u64).min(self.max_tokens - self.generated);
        let mut tokens = Vec::with_capacity(want as usize);
        let mut finish = None;
        for _ in 0..want {
            tokens.push(self.rng.gen_range(0..VOCAB.len() as u32));
            self.generated += 1;
            let eos = !self.ignore_eos && self.generated > 1 && self.rng.gen_bool(m.eos_prob);
            if eos {
                finish = Some(Finish::Stop);
                break;
            }
        }
        if finish.is_none() && self.generated >= self.max_tokens {
            finish = Some(Finish::Length);
        }
        accepted = accepted.min(tokens.len() as u32 - 1);
        Chunk {
            tokens,
            drafted,
            accepted,
            finish,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn model(steps: u32) -> Model {
        Model::from_args(&Args::parse_from(["llm-sim"]), steps)
    }

    /// The default model's c=1 curve has the reference campaign's shape.
    #[test]
    fn expected_curve_at_concurrency_one() {
        let rate = |n| {
            let m = model(n);
            m.expected_tokens_per_step(m.accept_prob(0.0)) / m.step_time(1, 0).as_secs_f64()
        };
        assert!(rate(4) / rate(1) > 1.9, "{} {}", rate(4), rate(1));
        let r54 = rate(5) / rate(4);
        assert!((0.99..1.03).contains(&r54), "{r54}");
    }

    #[test]
    fn acceptance_draws_match_expectation() {
        let m = model(4);
        let mut rng = StdRng::seed_from_u64(3);
        let n = 200_000;
        let sum: u64 = (0..n).map(|_| m.draw_accepted(&mut rng, 0.9) as u64).sum();
        let mean = sum as f64 / n as f64;
        let want = m.expected_tokens_per_step(0.9) - 1.0;
        assert!((mean - want).abs() < 0.02, "{mean} vs {want}");
    }

    #[test]
    fn temperature_lowers_acceptance() {
        let m = model(4);
        assert_eq!(m.accept_prob(0.0), 0.9);
        assert!((m.accept_prob(1.0) - 0.63).abs() < 1e-9);
        assert_eq!(m.accept_prob(5.0), m.accept_prob(1.0));
    }

    #[test]
    fn gen_respects_max_tokens_and_caps_accepted() {
        let m = model(4);
        let mut g = Gen::new(7, 10, true, 0.9);
        let mut total = 0;
        loop {
            let c = g.step(&m);
            assert!(c.accepted as usize + 1 == c.tokens.len() || c.finish.is_some());
            total += c.tokens.len();
            if c.finish.is_some() {
                assert_eq!(c.finish, Some(Finish::Length));
                break;
            }
        }
        assert_eq!(total, 10);
    }

    #[test]
    fn oom_when_speculative_kv_exceeds_capacity() {
        assert!(model(4).load_oom().is_none());
        let mut m = model(4);
        m.kv_capacity = 4096;
        assert!(m.load_oom().unwrap().contains("> kv-capacity-tokens 4096"));
    }
}
