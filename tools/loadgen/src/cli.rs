//! Command-line flags (clap derive). Help lines stay within 79 columns.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

use sweepkit::time::parse_duration as duration;

/// A number flag's value outside what it means (clap prints it after the
/// flag's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadNumber {
    #[error("'{0}': expected a rate above 0 (requests/s)")]
    Rate(String),
    #[error("'{0}': expected a share from 0 to 1 (0.1 = one in ten)")]
    Share(String),
    #[error("'{0}': expected a speed above 0 (2 = twice as fast)")]
    Speed(String),
}

fn rate(s: &str) -> Result<f64, BadNumber> {
    match s.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r.is_finite() => Ok(r),
        _ => Err(BadNumber::Rate(s.into())),
    }
}

fn share(s: &str) -> Result<f64, BadNumber> {
    match s.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(BadNumber::Share(s.into())),
    }
}

fn speed(s: &str) -> Result<f64, BadNumber> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x.is_finite() => Ok(x),
        _ => Err(BadNumber::Speed(s.into())),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Endpoint {
    /// /v1/completions
    Completions,
    /// /v1/chat/completions
    Chat,
    /// SGLang's native /generate (per-request acceptance from meta_info)
    Generate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON bench record per level, written when the level ends
    Json,
    /// CSV (dotted column names), written after the last level
    Csv,
    /// A Markdown table for people, written after the last level
    Markdown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PromptsFormat {
    /// By content: a JSON array is ShareGPT, else JSONL
    Auto,
    /// One {"prompt": .., "output_tokens": ..} object per line
    Jsonl,
    /// ShareGPT JSON: first human turn, reply length as output length
    Sharegpt,
}

/// Streaming load against an OpenAI-compatible server, one bench record per
/// load level on stdout.
#[derive(Debug, Parser)]
#[command(name = "loadgen", version, max_term_width = 79)]
#[command(group = clap::ArgGroup::new("replay").args(["trace", "sessions"]))]
#[command(after_help = "Reads an upstream ready/swap record from stdin when \
stdin is not a terminal; a failure record is passed through (exit 4).")]
pub struct Args {
    /// Server base URL (e.g. http://127.0.0.1:8000); default: the upstream
    /// record's server.base_url
    #[arg(value_name = "URL", conflicts_with = "url")]
    pub base_url: Option<String>,

    /// Server base URL (same as the positional URL)
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,

    /// Model name; default: the first model /v1/models lists
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,

    /// API key sent as a Bearer token (never printed); SWEEPKIT_API_KEY,
    /// as wait-ready reads it, when neither this nor OPENAI_API_KEY is set
    #[arg(
        long,
        value_name = "KEY",
        env = "OPENAI_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,

    /// Which API to call
    #[arg(long, value_enum, default_value = "completions")]
    pub endpoint: Endpoint,

    /// Ask for whole responses instead of a stream (no TTFT or ITL)
    #[arg(long)]
    pub no_stream: bool,

    /// Closed loop: requests in flight, one level per value
    #[arg(short = 'c', long, value_name = "N[,N..]", value_delimiter = ',',
          value_parser = clap::value_parser!(u32).range(1..), conflicts_with = "rate")]
    pub concurrency: Option<Vec<u32>>,

    /// Open loop: arrival rate in requests/s, one level per value
    #[arg(short = 'r', long, value_name = "R[,R..]", value_delimiter = ',',
          value_parser = rate)]
    pub rate: Option<Vec<f64>>,

    /// Open loop: gamma shape of inter-arrival times (1 = Poisson; lower
    /// is burstier)
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub burstiness: f64,

    /// Open loop: most requests in flight; later arrivals wait in the
    /// client (queue time)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_inflight: u32,

    /// Requests per level before measuring (not counted)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub warmup: u64,

    /// Measured requests per level [default: max(16, 8 x concurrency);
    /// open loop: max(16, 10 x rate)]; with --until-stable, the most
    /// (--max-requests) [default: 10 times that]
    #[arg(
        short = 'n',
        long,
        value_name = "N",
        conflicts_with = "duration",
        visible_alias = "max-requests"
    )]
    pub requests: Option<u64>,

    /// End a level once its steady-state output throughput is known to
    /// within PCT percent (5 or 5%): 95% interval by batch means over
    /// completed requests (see man loadgen); bounded by --max-requests or
    /// --duration
    #[arg(long, value_name = "PCT", allow_hyphen_values = true)]
    pub until_stable: Option<String>,

    /// With --until-stable: the fewest measured requests before a level
    /// may stop [default: max(20, the level's default request count)]
    #[arg(long, value_name = "N", requires = "until_stable")]
    pub min_requests: Option<u64>,

    /// Measure each level for this long instead of a request count
    #[arg(short = 'd', long, value_name = "DUR", value_parser = duration)]
    pub duration: Option<Duration>,

    /// Run each level N times in a row, one record each (run-to-run
    /// variance; summarize treats them as repeats of one cell)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,

    /// Output tokens asked for per request
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_tokens: u64,

    /// Ask the server to ignore end-of-sequence (full-length outputs)
    #[arg(long)]
    pub ignore_eos: bool,

    /// Sampling temperature (default: the server's)
    #[arg(long, value_name = "F")]
    pub temperature: Option<f64>,

    /// Synthetic prompts of this many tokens
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub input_tokens: u64,

    /// Prompts from a file instead of synthetic ones
    #[arg(long, value_name = "FILE")]
    pub prompts_file: Option<PathBuf>,

    /// Format of --prompts-file
    #[arg(long, value_enum, default_value = "auto")]
    pub prompts_format: PromptsFormat,

    /// Replay a request trace at its recorded times: Mooncake JSONL
    /// (timestamp ms, input_length, output_length, hash_ids) or JSONL with
    /// timestamp and prompt or messages; one level per --speed
    #[arg(long, value_name = "FILE", help_heading = "Trace replay",
          conflicts_with_all = ["concurrency", "rate", "prompts_file", "find_capacity",
              "warmup", "requests", "duration", "until_stable", "input_tokens", "repeat"])]
    pub trace: Option<PathBuf>,

    /// Send the trace at X times its recorded pace, one level per value
    #[arg(long, value_name = "X[,X..]", value_delimiter = ',', value_parser = speed,
          requires = "replay", help_heading = "Trace replay")]
    pub speed: Option<Vec<f64>>,

    /// Replay from this time on the trace's clock (e.g. 10m)
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "trace",
          help_heading = "Trace replay")]
    pub trace_start: Option<Duration>,

    /// Replay up to (not including) this time on the trace's clock
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "trace",
          help_heading = "Trace replay")]
    pub trace_end: Option<Duration>,

    /// Tokens each Mooncake hash id stands for: the trace's block size
    #[arg(long, value_name = "N", default_value_t = sweepkit::trace::DEFAULT_BLOCK_SIZE,
          value_parser = clap::value_parser!(u64).range(1..), help_heading = "Trace replay")]
    pub block_size: u64,

    /// Multi-turn sessions: ShareGPT or JSONL conversations, or JSONL turns
    /// with a session_id (timestamp or delay ms); each turn sends the
    /// history with the replies received; see man loadgen, SESSIONS
    #[arg(long, value_name = "FILE", help_heading = "Sessions",
          conflicts_with_all = ["rate", "prompts_file", "find_capacity", "warmup",
              "requests", "duration", "until_stable", "input_tokens"])]
    pub sessions: Option<PathBuf>,

    /// Think time of a turn that records none: its wait after the previous
    /// reply ended (over --speed)
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "0s",
          requires = "sessions", help_heading = "Sessions")]
    pub think_time: Duration,

    /// Cancel this share of requests (0 to 1), each --cancel-after its
    /// send; counted apart (counts.cancelled), never as errors or tokens
    #[arg(long, value_name = "P", value_parser = share, requires = "cancel_after")]
    pub cancel_rate: Option<f64>,

    /// With --cancel-rate: how long after its send a request is cancelled
    #[arg(long, value_name = "DUR", value_parser = duration, requires = "cancel_rate")]
    pub cancel_after: Option<Duration>,

    /// Do not call the server's /tokenize (approximate input lengths)
    #[arg(long)]
    pub no_tokenize: bool,

    /// Seed for prompts and the arrival schedule
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,

    /// Extra JSON fields merged into every request body (they win)
    #[arg(long, value_name = "JSON")]
    pub extra_body: Option<String>,

    /// Do not ask for per-chunk usage (stream_options.continuous_usage_stats)
    #[arg(long)]
    pub no_continuous_usage: bool,

    /// Goodput objectives per request, e.g. 'ttft_ms<=200,tpot_ms<=50'
    /// (summarize's syntax; ttft=200ms also works)
    #[arg(long, value_name = "SPEC")]
    pub slo: Option<String>,

    /// Longest time one request may take
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "10m")]
    pub request_timeout: Duration,

    /// Longest silence between bytes of a response (a stalled stream)
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "60s")]
    pub idle_timeout: Duration,

    /// Longest time one level may take, warmup and drain included
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "1h")]
    pub level_timeout: Duration,

    /// Threads for the client's event loop. One keeps every timestamp on
    /// one clock with no cross-thread wakeups and serves tens of thousands
    /// of chunks a second; raise it only when the run warns that the
    /// client was the bottleneck
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub client_threads: u32,

    /// Do not read the server's /metrics, capacity and /server_info
    #[arg(long)]
    pub no_scrape: bool,

    /// Sample the server's /metrics this often during each level (KV
    /// cache, queue, preemptions: loadgen(1) SERVER METRICS)
    #[arg(long, value_name = "DUR", default_value = "1s",
          value_parser = crate::scrape::sources::scrape_interval)]
    pub scrape_interval: Duration,

    /// GPU power, energy and memory during each level: a DCGM exporter's
    /// URL (http://HOST:9400/metrics) or nvidia-smi
    #[arg(long, value_name = "URL|nvidia-smi",
          value_parser = crate::scrape::sources::gpu_metrics)]
    pub gpu_metrics: Option<crate::scrape::sources::GpuMetrics>,

    /// Run --gpu-metrics nvidia-smi under this command, e.g. 'ssh gpu1'
    #[arg(long, value_name = "CMD", requires = "gpu_metrics")]
    pub gpu_metrics_cmd: Option<String>,

    /// Output format on stdout
    #[arg(long, value_enum, default_value = "json")]
    pub format: Format,

    /// Write one JSON line per request to FILE
    #[arg(long, value_name = "FILE")]
    pub requests_out: Option<PathBuf>,

    /// Name this run in every bench record (`label`), e.g. a server
    /// version: summarize --compare-by label compares two runs of one file
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,

    /// Do not read an upstream record from stdin
    #[arg(long)]
    pub no_upstream: bool,

    /// Search the highest concurrency whose level meets every term, e.g.
    /// 'p99_ttft_ms<=500' (a level's figure, as summarize --slo): double
    /// from --concurrency (default 1) until a level misses, then bisect
    #[arg(
        long,
        value_name = "TERMS",
        conflicts_with = "rate",
        help_heading = "Capacity search"
    )]
    pub find_capacity: Option<String>,

    /// With --find-capacity: the highest concurrency to try
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..),
          help_heading = "Capacity search")]
    pub max_concurrency: u32,

    /// With --find-capacity: the most levels the search may run
    #[arg(long, value_name = "N", default_value_t = 12,
          value_parser = clap::value_parser!(u32).range(1..),
          help_heading = "Capacity search")]
    pub level_budget: u32,

    #[command(flatten)]
    pub pipeline: sweepkit::upstream_input::PipelineArgs,

    /// No progress bar or level lines on stderr
    #[arg(short, long)]
    pub quiet: bool,
}
