//! Command-line flags of llm-sim, shaped like SGLang's launch_server so that
//! svc-swap can edit them in an ExecStart line like a real server's.

use std::time::Duration;

use clap::{Parser, ValueEnum};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::time::parse_duration as dur;

const SHORT: &str = "A labelled stand-in LLM inference server (simulated: no model runs)";

const ABOUT: &str = "A labelled stand-in LLM inference server (SIMULATED: no model runs).

Serves OpenAI-style completions with a speculative-decoding performance
model, SGLang/vLLM/llama.cpp-shaped readiness, info and metrics endpoints,
and faults on demand, so the sweepkit loop can be run and tested without a
GPU. Every response carries `x-simulated: llm-sim`.";

const AFTER: &str = "\
Lifecycle: prints {\"event\":\"bound\",...} on stdout at once. sglang: the
port refuses connections for --load-time, then listens with /health and
/health_generate 503 for --warmup-time (/v1/models, /server_info already
200), then 200, each probe taking --health-probe-time. vllm: the port
refuses for --load-time + --warmup-time, then everything answers at once.
llama.cpp: listens at once, every route 503 \"Loading model\" until ready.
SGLang's speculative flags are resolved as SGLang does (see llm-sim(1)).

Performance model (see llm-sim(1) for the whole of it):
  step time = step-time + per-seq-time x batch + draft-step-time x N
              + prefill-per-token x prompt tokens admitted in the step
  tokens per step and sequence = 1 + accepted draft tokens; draft token k
  is accepted with probability p_k = P' (k <= horizon) or P'/6 (beyond),
  stopping at the first rejection, at most N = --speculative-num-steps;
  P' = P x (1 - 0.3 x min(temperature, 1)).
  KV per request = prompt + max_tokens + N x speculative-kv-per-step;
  requests run while KV fits in --kv-capacity-tokens (and at most
  --max-running-requests); the rest queue. context-length + N x
  speculative-kv-per-step > kv-capacity-tokens: CUDA-OOM crash at load.
  Without ignore_eos each token after the first is EOS with --eos-prob.
Tokenizer: one token per whitespace-separated word.
Exit status: 0 after SIGTERM/SIGINT, 1 on a (simulated) crash or error,
2 on bad flags.";

/// llm-sim's flags.
#[derive(Debug, Clone, Parser)]
#[command(name = "llm-sim", version, about = SHORT, long_about = ABOUT, after_help = AFTER)]
// A unit file or sweep appends its own flags after the defaults: the last
// occurrence wins, as with SGLang's and vLLM's argparse.
#[command(args_override_self = true)]
pub struct Args {
    /// Address to bind (keep it on loopback for tests).
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1")]
    pub host: String,

    /// Port to bind; 0 picks a free one and reports it in the bound line.
    #[arg(long, value_name = "PORT", default_value_t = 30000)]
    pub port: u16,

    /// Model name served in /v1/models, /server_info and responses.
    #[arg(long, value_name = "NAME", default_value = "sim-llama-8b")]
    pub model_name: String,

    /// Draft steps per decode step (sglang: with algorithm and topk).
    #[arg(long, value_name = "N")]
    pub speculative_num_steps: Option<u32>,

    /// Which real server to imitate.
    #[arg(long, value_name = "NAME", value_enum, default_value_t = Personality::Sglang)]
    pub personality: Personality,

    /// SGLang's speculative algorithm (EAGLE, EAGLE3, NEXTN, STANDALONE).
    #[arg(long, value_name = "NAME")]
    pub speculative_algorithm: Option<String>,

    /// SGLang's draft tree branching factor.
    #[arg(long, value_name = "N")]
    pub speculative_eagle_topk: Option<u32>,

    /// SGLang's draft tokens verified per step.
    #[arg(long, value_name = "N")]
    pub speculative_num_draft_tokens: Option<u32>,

    /// SGLang: move the draft steps per batch size by accept length.
    #[arg(long)]
    pub speculative_adaptive: bool,

    /// SGLang: the adaptive config (JSON keyed by batch size).
    #[arg(long, value_name = "FILE")]
    pub speculative_adaptive_config: Option<String>,

    /// vLLM's speculative settings as JSON (num_speculative_tokens, method).
    #[arg(long, value_name = "JSON")]
    pub speculative_config: Option<String>,

    /// API key the server requires (and, like SGLang, reports about itself).
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,

    /// SGLang's admin API key (reported in /server_info, as SGLang does).
    #[arg(long, value_name = "KEY")]
    pub admin_api_key: Option<String>,

    /// SGLang's TLS key password (reported in /server_info; no TLS).
    #[arg(long, value_name = "PASSWORD")]
    pub ssl_keyfile_password: Option<String>,

    /// Serve /metrics as sglang and llama.cpp do when asked (vllm always)
    #[arg(long, visible_alias = "metrics")]
    pub enable_metrics: bool,

    /// Time one sglang /health probe takes (SGLang: a token and 1 s).
    #[arg(long, value_name = "DUR", default_value = "1s", value_parser = dur)]
    pub health_probe_time: Duration,

    /// Probability P that a draft token is accepted (greedy sampling).
    #[arg(long, value_name = "P", default_value_t = 0.9)]
    pub speculative_accept_rate: f64,

    /// Acceptance P of prompts starting with WORD, e.g. math=0.9
    #[arg(long, value_name = "WORD=P[,..]", value_delimiter = ',',
          value_parser = word_rate)]
    pub speculative_accept_by: Vec<(String, f64)>,

    /// Draft positions at P; later positions are accepted with P/6.
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub speculative_draft_horizon: u32,

    /// KV tokens each running request reserves per speculative step.
    #[arg(long, value_name = "TOKENS", default_value_t = 512)]
    pub speculative_kv_per_step: u64,

    /// Most requests decoded at once (default 128; sglang+spec: 48).
    #[arg(long, value_name = "N")]
    pub max_running_requests: Option<usize>,

    /// KV cache size in tokens shared by running requests.
    #[arg(long, value_name = "TOKENS", default_value_t = 36864)]
    pub kv_capacity_tokens: u64,

    /// Longest prompt + max_tokens a request may ask for.
    #[arg(long, value_name = "TOKENS", default_value_t = 4096)]
    pub context_length: u64,

    /// Time the port stays closed (simulated weight loading).
    #[arg(long, value_name = "DUR", default_value = "200ms", value_parser = dur)]
    pub load_time: Duration,

    /// Time /health answers 503 after the port opens.
    #[arg(long, value_name = "DUR", default_value = "200ms", value_parser = dur)]
    pub warmup_time: Duration,

    /// Base time of one decode step (the target model's forward pass).
    #[arg(long, value_name = "DUR", default_value = "2ms", value_parser = dur)]
    pub step_time: Duration,

    /// Extra step time per running sequence.
    #[arg(long, value_name = "DUR", default_value = "50us", value_parser = dur)]
    pub per_seq_time: Duration,

    /// Extra step time per speculative step (the draft model's passes).
    #[arg(long, value_name = "DUR", default_value = "25us", value_parser = dur)]
    pub draft_step_time: Duration,

    /// Extra step time per prompt token admitted in that step (prefill).
    #[arg(long, value_name = "DUR", default_value = "5us", value_parser = dur)]
    pub prefill_per_token: Duration,

    /// Chance that a token after the first is EOS (unless ignore_eos).
    #[arg(long, value_name = "P", default_value_t = 0.004)]
    pub eos_prob: f64,

    /// Seed of every random draw (default: from the clock, logged).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Run-to-run noise: each start's speed is 1 +/- PCT (see llm-sim(1)).
    #[arg(long, value_name = "PCT", default_value = "0", value_parser = pct)]
    pub noise: f64,

    /// Start counter for --noise (read, counted up): each start draws anew.
    #[arg(long, value_name = "FILE", requires = "noise")]
    pub noise_counter: Option<std::path::PathBuf>,

    /// Crash at the end of loading with a CUDA-out-of-memory line, exit 1.
    #[arg(long)]
    pub crash_on_load: bool,

    /// Crash (exit 1) this long after becoming ready.
    #[arg(long, value_name = "DUR", value_parser = dur)]
    pub crash_after: Option<Duration>,

    /// Crash (exit 1) when the Nth generation request arrives.
    #[arg(long, value_name = "N")]
    pub crash_after_requests: Option<u64>,

    /// On SIGTERM keep serving for DUR, then exit (SIGKILL ends it sooner).
    #[arg(long, value_name = "DUR", value_parser = dur)]
    pub ignore_sigterm: Option<Duration>,

    /// Fraction of generation requests answered HTTP 500.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub error_rate: f64,

    /// Fraction of streams whose connection is closed mid-way, no [DONE].
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub cut_stream_rate: f64,

    /// Fraction of streams with one malformed SSE line mid-way.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub malformed_sse_rate: f64,

    /// Fraction of streams that stop sending for --stall mid-way.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub stall_rate: f64,

    /// Length of a stall.
    #[arg(long, value_name = "DUR", default_value = "2s", value_parser = dur)]
    pub stall: Duration,

    /// No simulated time: answer as fast as possible (client overhead).
    #[arg(long, conflicts_with_all = ["exact_ttft", "exact_itl"])]
    pub zero_delay: bool,

    /// Exact time to first token; one token per chunk (client accuracy).
    #[arg(long, value_name = "DUR", value_parser = dur, requires = "exact_itl")]
    pub exact_ttft: Option<Duration>,

    /// Exact gap between token chunks (with --exact-ttft).
    #[arg(long, value_name = "DUR", value_parser = dur, requires = "exact_ttft")]
    pub exact_itl: Option<Duration>,
}

impl Args {
    /// Check values clap cannot: rates in [0, 1] (a usage error).
    pub fn validate(&self) -> Result<(), Exit> {
        let usage = |msg: String| Exit::new(exit::USAGE, anyhow::anyhow!(msg));
        let rates = [
            ("--speculative-accept-rate", self.speculative_accept_rate),
            ("--eos-prob", self.eos_prob),
            ("--error-rate", self.error_rate),
            ("--cut-stream-rate", self.cut_stream_rate),
            ("--malformed-sse-rate", self.malformed_sse_rate),
            ("--stall-rate", self.stall_rate),
        ];
        for (name, v) in rates {
            if !(0.0..=1.0).contains(&v) {
                return Err(usage(format!("{name}: {v} is not in [0, 1]")));
            }
        }
        if self.max_running_requests == Some(0) {
            return Err(usage("--max-running-requests: must be at least 1".into()));
        }
        Ok(())
    }

    /// The timing mode the flags select.
    pub fn mode(&self) -> Mode {
        match (self.exact_ttft, self.exact_itl) {
            (Some(ttft), Some(itl)) => Mode::Exact { ttft, itl },
            _ if self.zero_delay => Mode::ZeroDelay,
            _ => Mode::Model,
        }
    }
}

/// `WORD=P` with P in [0, 1].
fn word_rate(s: &str) -> Result<(String, f64), String> {
    let (w, p) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}': expected WORD=P"))?;
    let p: f64 = p
        .trim()
        .parse()
        .ok()
        .filter(|p| (0.0..=1.0).contains(p))
        .ok_or_else(|| format!("'{s}': P must be a number in [0, 1]"))?;
    let w = w.trim();
    if w.is_empty() || w.contains(char::is_whitespace) {
        return Err(format!("'{s}': WORD must be one word"));
    }
    Ok((w.to_string(), p))
}

/// `5%` or `5` as the fraction 0.05, in [0, 90%].
fn pct(s: &str) -> Result<f64, String> {
    let x: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("'{s}': expected a percentage like 5%"))?;
    if !(0.0..=90.0).contains(&x) {
        return Err(format!("'{s}': must be between 0% and 90%"));
    }
    Ok(x / 100.0)
}

/// The real server llm-sim imitates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Personality {
    /// SGLang (python -m sglang.launch_server).
    Sglang,
    /// vLLM (vllm serve).
    Vllm,
    /// llama.cpp's llama-server.
    #[value(name = "llama.cpp")]
    LlamaCpp,
}

/// How generated tokens are timed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// The batched decode-step performance model.
    Model,
    /// No simulated time at all.
    ZeroDelay,
    /// Fixed TTFT and inter-token gap, one token per chunk.
    Exact { ttft: Duration, itl: Duration },
}
