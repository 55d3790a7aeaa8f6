//! loadgen's record: one load level's results (latency, throughput, counts,
//! speculative figures, `--until-stable` and `--find-capacity` results).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::gpu::GpuTelemetry;
use super::histogram::Histograms;
use super::server::ServerInfo;
use super::server_metrics::ServerMetrics;
use super::shared::{Config, Provenance};
use super::slot::SlotUse;
use super::slurm::SlurmJob;
use super::vocabulary::{CapacityStop, LoadMode, SpecSource};

/// Summary statistics of one latency metric, in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Stats {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

impl Stats {
    /// Every field, in order: the metric names under each latency block
    /// (`ttft_ms.p99`). A test checks it against the struct.
    pub const FIELDS: [&'static str; 7] = ["count", "mean", "p50", "p90", "p95", "p99", "max"];
}

/// The load shape of one level.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Load {
    /// `closed` (fixed concurrency) or `open` (arrival rate).
    pub mode: LoadMode,
    pub concurrency: Option<u32>,
    pub rate_rps: Option<f64>,
    pub burstiness: Option<f64>,
    /// `/v1/completions` or `/v1/chat/completions`.
    pub endpoint: String,
    pub stream: bool,
    pub warmup_requests: u64,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub input_tokens: Option<u64>,
    pub max_tokens: Option<u64>,
    pub ignore_eos: bool,
    pub temperature: Option<f64>,
    /// `synthetic`, `jsonl:PATH`, `sharegpt:PATH`.
    pub prompts: String,
    /// How synthetic input lengths were made exact: `tokenize` or `approx`.
    pub input_len_method: Option<String>,
    pub seed: Option<u64>,
    /// Open loop: the cap on requests in flight (`--max-inflight`).
    pub max_inflight: Option<u32>,
    /// The `--slo` goodput is measured against, as given.
    pub slo: Option<String>,
    /// Which repetition of this level (1-based) under `--repeat N`.
    pub repeat: Option<u32>,
    /// `--cancel-rate`: the share of requests cancelled on purpose.
    pub cancel_rate: Option<f64>,
    /// `--cancel-after`: how long after its send a request is cancelled.
    pub cancel_after_s: Option<f64>,
    /// What was sent: summarize never pools two workloads in one cell.
    pub workload: Option<Workload>,
}

/// The workload of a level: where its prompts (and, for a trace, its send
/// times) came from, and how the replay compares with the trace.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Workload {
    /// `synthetic`, `jsonl` or `sharegpt` (`--prompts-file`),
    /// `mooncake_trace` or `jsonl_trace` (`--trace`), `sessions`
    /// (`--sessions`).
    pub kind: String,
    /// SHA-256 of the prompts or trace file (64 hex digits); absent for
    /// synthetic prompts.
    pub sha256: Option<String>,
    /// Distinct prompts prepared, the trace's requests in the window, or
    /// the sessions' turns.
    pub requests: u64,
    /// Tokens each Mooncake hash id stands for (`--block-size`).
    pub block_size: Option<u64>,
    /// `--trace-start`..`--trace-end` on the trace's clock, as given
    /// (`0s..` is the whole trace).
    pub window: Option<String>,
    /// `--speed`: how many times the recorded pace the trace was sent at.
    pub speed: Option<f64>,
    /// The window's length on the trace's clock, seconds.
    pub trace_duration_s: Option<f64>,
    /// Input tokens the trace asks for in all (`input_length` summed; an
    /// estimate for text prompts).
    pub trace_input_tokens: Option<u64>,
    /// Input tokens the replayed requests had, as the server counted them
    /// (usage), else as loadgen made them.
    pub replayed_input_tokens: Option<u64>,
    /// Burstiness of the trace: the coefficient of variation of its
    /// inter-arrival gaps (0 steady, 1 Poisson, above 1 bursty).
    pub trace_arrival_cv: Option<f64>,
    /// The same for the replayed send times.
    pub replayed_arrival_cv: Option<f64>,
    /// Each request's send after its time in the trace (over `speed`),
    /// median and 99th percentile, ms: the timer's lateness and any wait
    /// for a free in-flight slot (`start_lag_ms` leaves both out).
    pub send_lag_p50_ms: Option<f64>,
    pub send_lag_p99_ms: Option<f64>,
    /// Mooncake blocks (hash ids) the window uses more than once: the
    /// prefix reuse a prefix cache can serve.
    pub reused_blocks: Option<u64>,
    /// `--sessions`: the multi-turn figures (kind `sessions`).
    pub sessions: Option<SessionStats>,
}

/// A multi-turn level (`loadgen --sessions`): each turn sends the history
/// so far (earlier user turns and the live replies received) plus its user
/// turn, after the think time from the previous reply's end.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SessionStats {
    /// `conversations` (ShareGPT or `messages` per line) or `trace`
    /// (lines with a `session_id`).
    pub source: String,
    /// Sessions in the file.
    pub sessions: u64,
    /// User turns in the file: one request each.
    pub turns: u64,
    /// Sessions whose every turn completed.
    pub sessions_completed: u64,
    /// Sessions ended early: a turn failed or was cancelled, so there was
    /// no reply to carry on with; their later turns are not sent.
    pub sessions_cut: u64,
    /// Turns not sent: their session was cut, or the level ended first.
    pub turns_not_sent: u64,
    /// `--think-time`: the think time of a turn that records none, s.
    pub think_time_default_s: f64,
    /// TTFT of each session's first turn (no history to reuse).
    pub ttft_first_turn_ms: Option<Stats>,
    /// TTFT of the later turns, whose history a prefix cache can hold.
    pub ttft_later_turns_ms: Option<Stats>,
    /// Think time asked for, summed over the later turns sent (recorded
    /// or `--think-time`, over `--speed`), seconds.
    pub think_time_scheduled_s: f64,
    /// Think time kept: the previous reply's end to the send, summed.
    pub think_time_actual_s: f64,
    /// Each later turn's kept minus asked think time, ms (the timer's
    /// lateness).
    pub think_lag_ms: Option<Stats>,
}

/// Speculative-decoding figures for one level, whatever the server.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SpecStats {
    /// Where the figures came from. The level's own: `metrics` (/metrics
    /// counter deltas over the level), `per_request` (per-request fields
    /// summed over the level: SGLang `/generate` `meta_info`, llama.cpp
    /// `timings`). Not the level's own: `gauge` (SGLang's
    /// `sglang:spec_accept_length` gauge, a recent window),
    /// `lifetime_average` (SGLang `/server_info` `avg_spec_accept_length`
    /// since server start; older records say `server_info`).
    pub source: SpecSource,
    /// The exact fields read, e.g. `/generate meta_info.spec_verify_ct,
    /// completion_tokens`.
    pub origin: Option<String>,
    pub draft_tokens: Option<u64>,
    pub accepted_tokens: Option<u64>,
    /// accepted / draft.
    pub acceptance_rate: Option<f64>,
    /// Mean tokens emitted per decode step (1 + accepted per step).
    pub accept_length: Option<f64>,
    /// Draft/verify steps in the level (vLLM `num_drafts`, SGLang
    /// `spec_verify_ct`), when the server reports them.
    pub drafts: Option<u64>,
}

impl SpecStats {
    /// The numeric fields (metrics such as `spec.acceptance_rate`).
    pub const NUMBERS: [&'static str; 5] = [
        "draft_tokens",
        "accepted_tokens",
        "acceptance_rate",
        "accept_length",
        "drafts",
    ];
}

/// Is a `SpecStats.source` a figure of the level itself? `gauge`,
/// `lifetime_average` and the older `server_info` are not.
pub fn spec_source_is_per_level(source: &str) -> bool {
    SpecSource::from(source).is_per_level()
}

/// Throughput figures for one level.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Throughput {
    /// Wall time from first send to last finish.
    pub elapsed_s: f64,
    pub requests_per_s: f64,
    pub output_tok_per_s: f64,
    pub total_tok_per_s: f64,
    pub goodput_req_per_s: Option<f64>,
    /// Mean requests in flight (sum of E2E / elapsed).
    pub achieved_concurrency: f64,
    /// Fraction of sent requests that completed and met every `--slo`.
    pub slo_attainment: Option<f64>,
}

impl Throughput {
    /// Every field (all numbers): metrics such as `throughput.output_tok_per_s`.
    pub const FIELDS: [&'static str; 7] = [
        "elapsed_s",
        "requests_per_s",
        "output_tok_per_s",
        "total_tok_per_s",
        "goodput_req_per_s",
        "achieved_concurrency",
        "slo_attainment",
    ];
}

/// Request counts for one level.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Counts {
    pub completed: u64,
    pub failed: u64,
    /// Requests that stopped before max_tokens (with ignore_eos, or short).
    pub early_stops: u64,
    /// Completed requests whose token count was not from the server's usage.
    pub usage_missing: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Requests loadgen cancelled on purpose (`--cancel-rate`): neither
    /// completed nor failed, their tokens in no count.
    #[serde(default)]
    pub cancelled: u64,
}

impl Counts {
    /// Every field (all integers): metrics such as `counts.failed`.
    pub const FIELDS: [&'static str; 7] = [
        "completed",
        "failed",
        "early_stops",
        "usage_missing",
        "input_tokens",
        "output_tokens",
        "cancelled",
    ];
}

/// A level's latency statistics, in milliseconds: one type filled while
/// loadgen aggregates and written as is (its fields sit at the top level
/// of a bench record).
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Latency {
    pub ttft_ms: Stats,
    pub tpot_ms: Stats,
    /// Inter-token latency: each chunk gap spread over the chunk's tokens.
    pub itl_ms: Stats,
    /// Raw gaps between content chunks.
    pub chunk_gap_ms: Stats,
    pub e2e_ms: Stats,
    /// Time a request waited in the client before it was sent.
    pub queue_ms: Stats,
    /// How late each send was against its schedule (client health).
    pub start_lag_ms: Stats,
    /// Client queue time plus E2E: the latency a caller of an open-loop
    /// service sees (vLLM issue 54101).
    pub e2e_incl_queue_ms: Option<Stats>,
}

/// How `loadgen --until-stable` ended a level: a 95% confidence interval
/// of its steady-state output throughput by non-overlapping batch means
/// (Law & Kelton, Simulation Modeling and Analysis, ch. 9; see loadgen(1)),
/// and why the level stopped.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Stability {
    /// The half-width asked for (`--until-stable`), percent of the mean.
    pub pct_target: f64,
    /// The half-width reached, percent of the mean: when the level became
    /// stable, else over every steady-state request. Absent when too few
    /// completed to form the batches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_width_pct: Option<f64>,
    /// Steady-state output tokens/s over the batches, the interval's centre.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_output_tok_per_s: Option<f64>,
    /// Batches the steady-state requests were cut into (fixed).
    pub batches: u64,
    /// Completed requests per batch (grows with the level).
    pub batch_size: u64,
    /// Why the level ended.
    pub stopped: StopReason,
}

/// Why an `--until-stable` level ended.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The interval came within the target.
    Stable,
    /// `--max-requests` (or its default) were sent first.
    MaxRequests,
    /// `--duration` ran out first.
    Duration,
    /// `--level-timeout` ran out first.
    LevelTimeout,
    /// Ctrl-C.
    Interrupted,
    /// The server stopped accepting connections.
    ServerGone,
}

/// What `loadgen --find-capacity` found: doubling the concurrency from
/// the start until a level missed a term, then bisecting between the last
/// level that met every term and the first that did not, within a level
/// budget and `--max-concurrency` (loadgen(1) CAPACITY SEARCH).
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CapacitySearch {
    /// The terms, as given (`p99_ttft_ms<=500`).
    pub slo: String,
    /// The highest concurrency that met every term; absent when none did.
    pub capacity: Option<u32>,
    /// The lowest concurrency that missed a term or failed; absent when
    /// every level tried met them.
    pub first_miss: Option<u32>,
    /// True when `first_miss` is `capacity` + 1 (or 1 with no capacity):
    /// the capacity is known to the request.
    pub exact: bool,
    /// Why the search stopped: `converged` (exact), `budget` (the level
    /// budget ran out first), `max_concurrency` (the limit met every
    /// term), `server_failed` (a level failed: all requests, or the server
    /// died), `interrupted`.
    pub stopped: CapacityStop,
    /// Levels run, and the budget they had.
    pub levels_run: u32,
    pub level_budget: u32,
    pub max_concurrency: u32,
    /// Every level tried, in order.
    pub tried: Vec<CapacityStep>,
}

/// One level of a capacity search.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct CapacityStep {
    pub concurrency: u32,
    /// Every term held.
    pub meets: bool,
    /// The terms that did not hold, with the level's figure
    /// (`p99_ttft_ms 812`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missed: Vec<String>,
}

/// One load level's results: loadgen writes one per level.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct BenchRecord {
    pub schema: u32,
    /// The run's name (`loadgen --label`; sweep: `--load-arg --label=NAME`),
    /// e.g. a server version: `summarize --compare-by label` splits one
    /// file by it.
    pub label: Option<String>,
    pub config: Config,
    pub provenance: Provenance,
    pub server: ServerInfo,
    pub load: Load,
    pub counts: Counts,
    /// Failed requests by kind: `http_500`, `connect`, `timeout`,
    /// `malformed_stream`, `cut_stream`, ...
    pub errors: BTreeMap<String, u64>,
    pub throughput: Throughput,
    /// The latency blocks (flattened: each is a top-level field).
    #[serde(flatten)]
    pub latency: Latency,
    /// The latency distributions (TTFT, TPOT, ITL, E2E) the blocks above
    /// summarize, mergeable across starts; absent in older records.
    pub histograms: Option<Histograms>,
    /// How ITL assigned tokens to chunks: `usage_per_chunk`,
    /// `one_per_chunk` or `apportioned_by_text` (least exact one used).
    pub itl_method: Option<String>,
    /// Mean output tokens per content chunk (above 1 under speculative
    /// decoding or server-side batching of tokens into chunks).
    pub tokens_per_chunk: Option<f64>,
    /// CPU seconds the load generator itself used during the level.
    pub client_cpu_s: Option<f64>,
    /// Steady-state window (closed loop: ramp-up and drain excluded).
    pub steady: Option<Throughput>,
    /// `loadgen --until-stable`: the throughput interval and why the
    /// level stopped. Absent without the flag.
    pub stability: Option<Stability>,
    /// `loadgen --find-capacity`: on the search's last record only, the
    /// capacity it found and how sure it is. Absent otherwise.
    pub capacity: Option<CapacitySearch>,
    pub spec: Option<SpecStats>,
    /// What the server's own `/metrics` said during the level: KV cache,
    /// running and waiting requests, preemptions, prefix cache, spec
    /// counters. Absent when it serves no `/metrics` (or `--no-scrape`).
    pub server_metrics: Option<ServerMetrics>,
    /// `loadgen --gpu-metrics`: power, energy, memory over the level.
    pub gpu: Option<GpuTelemetry>,
    /// Warnings a human should act on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// True when the level was cut short (Ctrl-C, server death).
    #[serde(default)]
    pub partial: bool,
    /// sweep --slurm: the job the config ran in (added by sweep's control
    /// side when it appends the job's records).
    pub slurm: Option<SlurmJob>,
    /// sweep with GPU slots: the slot the level ran in and what the
    /// machine's other slots did meanwhile (added by sweep as it runs the
    /// bench).
    pub slot: Option<SlotUse>,
    pub upstream: Option<Value>,
}

impl BenchRecord {
    /// The latency blocks (each a [`Stats`]).
    pub const STATS_BLOCKS: [&'static str; 8] = [
        "ttft_ms",
        "tpot_ms",
        "itl_ms",
        "chunk_gap_ms",
        "e2e_ms",
        "queue_ms",
        "start_lag_ms",
        "e2e_incl_queue_ms",
    ];
    /// The blocks of [`Throughput`] figures.
    pub const THROUGHPUT_BLOCKS: [&'static str; 2] = ["throughput", "steady"];
    /// Numbers at the top level.
    pub const NUMBERS: [&'static str; 2] = ["tokens_per_chunk", "client_cpu_s"];
}
