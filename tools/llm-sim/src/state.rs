//! What every connection shares: the flags, the model, the engine, the
//! counters, readiness, and the seeded random streams of each request.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::cli::{Args, Mode, Personality};
use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::model::Model;
use crate::prefix_cache::PrefixCache;
use crate::resolve::Resolved;
use crate::timer::Timer;

pub struct State {
    pub args: Args,
    /// The flags as the imitated server resolved them.
    pub spec: Resolved,
    pub personality: Personality,
    pub model: Arc<Model>,
    /// The model with speculation off: exact mode's one token per chunk.
    pub plain_model: Arc<Model>,
    pub mode: Mode,
    pub metrics: Arc<Metrics>,
    /// Prefix-cache hits of the prompts (counted, see prefix_cache.rs).
    pub prefix_cache: PrefixCache,
    pub engine: Engine,
    pub timer: Timer,
    pub ready: AtomicBool,
    pub seed: u64,
    /// Generation requests received so far (numbers each request's streams).
    pub counter: AtomicU64,
    pub port: u16,
    pub started: Instant,
}

/// Salts that keep a request's independent random streams apart.
pub const SALT_GEN: u64 = 1;
pub const SALT_FAULT: u64 = 2;

impl State {
    pub fn new(args: Args, spec: Resolved, seed: u64, port: u16) -> State {
        let model = Model::from_args(&args, spec.steps).reserving(spec.kv_steps());
        let metrics = Arc::new(Metrics::default());
        let depth = crate::draft_depth::DraftDepth::new(&spec, model.steps);
        let engine = Engine::start(model.clone(), spec.max_running, metrics.clone(), depth);
        let mut plain = model.clone();
        plain.steps = 0;
        State {
            mode: args.mode(),
            model: Arc::new(model),
            plain_model: Arc::new(plain),
            metrics,
            prefix_cache: PrefixCache::new(args.kv_capacity_tokens),
            engine,
            timer: Timer::start(),
            ready: AtomicBool::new(false),
            seed,
            counter: AtomicU64::new(0),
            port,
            started: Instant::now(),
            personality: args.personality,
            spec,
            args,
        }
    }

    /// Draft acceptance for a prompt whose first word is `lead`: the
    /// `--speculative-accept-by` rate of that word, else the global one.
    pub fn accept_rate_for(&self, lead: Option<&str>) -> f64 {
        self.args
            .speculative_accept_by
            .iter()
            .find(|(w, _)| Some(w.as_str()) == lead)
            .map_or(self.args.speculative_accept_rate, |(_, p)| *p)
    }

    /// Request `n`'s random stream for `salt` (SplitMix64 of the three).
    pub fn rng(&self, n: u64, salt: u64) -> StdRng {
        use sweepkit::mix::{mix64, GOLDEN};
        let z = self
            .seed
            .wrapping_add(n.wrapping_mul(GOLDEN))
            .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
        StdRng::seed_from_u64(mix64(z))
    }
}

/// Log a simulated crash the way a CUDA failure looks, and exit 1.
pub fn crash(line: &str, why: &str) -> ! {
    sweepkit::diag::verbatim(&format!("{line} (simulated by llm-sim: {why})"));
    std::process::exit(1)
}

/// Die with a real server's own exception lines, exactly, after a line
/// that labels them simulated (tools take the last line as the error).
pub fn die(lines: &[String], why: &str, code: i32) -> ! {
    sweepkit::diag::verbatim(&format!(
        "llm-sim: SIMULATED failure ({why}); the server's own lines follow"
    ));
    for l in lines {
        sweepkit::diag::verbatim(l);
    }
    std::process::exit(code)
}

/// The CUDA-out-of-memory line of a crash at load.
pub const OOM_LINE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate \
    2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.";

/// The line of a crash mid-run.
pub const CRASH_LINE: &str = "RuntimeError: CUDA error: an illegal memory access was encountered";
