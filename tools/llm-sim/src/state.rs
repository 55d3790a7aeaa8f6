//! What every connection shares: the flags, the model, the engine, the
//! counters, readiness, and the seeded random streams of each request.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::{json, Value};

use crate::cli::{Args, Mode};
use crate::engine::Engine;
use crate::metrics::Metrics;
use crate::model::Model;
use crate::timer::Timer;

pub struct State {
    pub args: Args,
    pub model: Arc<Model>,
    /// The model with speculation off: exact mode's one token per chunk.
    pub plain_model: Arc<Model>,
    pub mode: Mode,
    pub metrics: Arc<Metrics>,
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
    pub fn new(args: Args, seed: u64, port: u16) -> State {
        let model = Model::from_args(&args);
        let metrics = Arc::new(Metrics::default());
        let engine = Engine::start(model.clone(), args.max_running_requests, metrics.clone());
        let mut plain = model.clone();
        plain.steps = 0;
        State {
            mode: args.mode(),
            model: Arc::new(model),
            plain_model: Arc::new(plain),
            metrics,
            engine,
            timer: Timer::start(),
            ready: AtomicBool::new(false),
            seed,
            counter: AtomicU64::new(0),
            port,
            started: Instant::now(),
            args,
        }
    }

    /// Request `n`'s random stream for `salt` (SplitMix64 of the three).
    pub fn rng(&self, n: u64, salt: u64) -> StdRng {
        let mut z = self
            .seed
            .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        StdRng::seed_from_u64(z ^ (z >> 31))
    }

    /// SGLang-shaped server args and internal state, with live values.
    pub fn server_info(&self) -> Value {
        let a = &self.args;
        let n = a.speculative_num_steps;
        let spec = n > 0;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        let avg = self.metrics.avg_accept_length();
        let ready = self.ready.load(std::sync::atomic::Ordering::Relaxed);
        json!({
            "simulated": true,
            "version": concat!("llm-sim ", env!("CARGO_PKG_VERSION")),
            "status": if ready { "ready" } else { "warming_up" },
            "served_model_name": a.model_name,
            "model_path": format!("simulated/{}", a.model_name),
            "host": a.host,
            "port": self.port,
            "speculative_algorithm": if spec { Some("EAGLE") } else { None },
            "speculative_num_steps": n,
            "speculative_eagle_topk": if spec { Some(1) } else { None },
            "speculative_num_draft_tokens": if spec { Some(n + 1) } else { None },
            "speculative_accept_rate": a.speculative_accept_rate,
            "speculative_draft_horizon": a.speculative_draft_horizon,
            "speculative_kv_per_step": a.speculative_kv_per_step,
            "max_running_requests": a.max_running_requests,
            "max_total_num_tokens": a.kv_capacity_tokens,
            "kv_capacity_tokens": a.kv_capacity_tokens,
            "context_length": a.context_length,
            "random_seed": self.seed,
            "step_time_ms": ms(a.step_time),
            "per_seq_time_ms": ms(a.per_seq_time),
            "draft_step_time_ms": ms(a.draft_step_time),
            "prefill_per_token_ms": ms(a.prefill_per_token),
            "eos_prob": a.eos_prob,
            "load_time_s": a.load_time.as_secs_f64(),
            "warmup_time_s": a.warmup_time.as_secs_f64(),
            "mode": match self.mode {
                Mode::Model => "model",
                Mode::ZeroDelay => "zero-delay",
                Mode::Exact { .. } => "exact",
            },
            "faults": {
                "crash_after_s": a.crash_after.map(|d| d.as_secs_f64()),
                "crash_after_requests": a.crash_after_requests,
                "ignore_sigterm_s": a.ignore_sigterm.map(|d| d.as_secs_f64()),
                "error_rate": a.error_rate,
                "cut_stream_rate": a.cut_stream_rate,
                "malformed_sse_rate": a.malformed_sse_rate,
                "stall_rate": a.stall_rate,
                "stall_s": a.stall.as_secs_f64(),
            },
            "uptime_s": self.started.elapsed().as_secs_f64(),
            "avg_spec_accept_length": avg,
            "internal_states": [{"avg_spec_accept_length": avg}],
        })
    }
}

/// Log a simulated crash the way a CUDA failure looks, and exit 1.
pub fn crash(line: &str, why: &str) -> ! {
    eprintln!("{line} (simulated by llm-sim: {why})");
    std::process::exit(1)
}

/// The CUDA-out-of-memory line of a crash at load.
pub const OOM_LINE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate \
    2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free.";

/// The line of a crash mid-run.
pub const CRASH_LINE: &str = "RuntimeError: CUDA error: an illegal memory access was encountered";
