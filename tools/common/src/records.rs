//! The records that flow between sweepkit tools, defined once.
//!
//! Every record is one JSON object on one line, tagged with `"type"`. Each
//! carries `config` (parameter -> value, the labels results are grouped by)
//! and `provenance`; a tool that read a record from stdin keeps it whole in
//! `upstream`, so the last record of a pipeline says which config produced
//! which numbers. `man/sweepkit-records.5` documents every field, and the
//! contract test in `tests/` checks real tool output against it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
// `#[skip_serializing_none]` leaves every `None` out of the JSON (each
// struct it marks); `Change` keeps its `null`s, so it is not marked.
use serde_with::skip_serializing_none;

mod vocabulary;
pub use vocabulary::*;

/// Bumped when a field changes meaning or is removed (adding fields is not).
pub const SCHEMA_VERSION: u32 = 1;

/// The config map: launch parameter (flag name without dashes) -> value.
pub type Config = BTreeMap<String, String>;

/// Any record, as read from a pipe.
// Bench records dominate every stream that holds many records, so boxing
// them would add an allocation per record without saving memory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Swap(SwapRecord),
    Ready(ReadyRecord),
    Bench(BenchRecord),
    Failure(FailureRecord),
    Summary(SummaryRecord),
    Origin(OriginRecord),
    Skipped(SkippedRecord),
    Schedule(ScheduleRecord),
}

/// Every record type: its `type` tag and the struct it is, listed once.
/// io.rs's reader, summarize and the man page generator read this list; a
/// test checks it against the tags serde derives for [`Record`].
pub const RECORD_TYPES: [(&str, &str); 8] = [
    ("swap", "SwapRecord"),
    ("ready", "ReadyRecord"),
    ("bench", "BenchRecord"),
    ("failure", "FailureRecord"),
    ("summary", "SummaryRecord"),
    ("origin", "OriginRecord"),
    ("skipped", "SkippedRecord"),
    ("schedule", "ScheduleRecord"),
];

/// True when `tag` is a record type this version knows.
pub fn is_record_type(tag: &str) -> bool {
    RECORD_TYPES.iter().any(|(t, _)| *t == tag)
}

impl Record {
    /// The record's `type` tag.
    pub fn kind(&self) -> &'static str {
        // The match is exhaustive, so a new variant must be given a place.
        let i = match self {
            Record::Swap(_) => 0,
            Record::Ready(_) => 1,
            Record::Bench(_) => 2,
            Record::Failure(_) => 3,
            Record::Summary(_) => 4,
            Record::Origin(_) => 5,
            Record::Skipped(_) => 6,
            Record::Schedule(_) => 7,
        };
        RECORD_TYPES[i].0
    }

    /// The config this record describes; empty for a schedule, which
    /// describes a choice among configs per load, not one config (no
    /// upstream reader accepts it: `upstream::SERVER`, `upstream::CONFIG`).
    pub fn config(&self) -> &Config {
        static NONE: Config = Config::new();
        match self {
            Record::Swap(r) => &r.config,
            Record::Ready(r) => &r.config,
            Record::Bench(r) => &r.config,
            Record::Failure(r) => &r.config,
            Record::Summary(r) => &r.best_config,
            Record::Origin(r) => &r.config,
            Record::Skipped(r) => &r.config,
            Record::Schedule(_) => &NONE,
        }
    }
}

/// Who wrote a record, with what, when.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Provenance {
    /// The tool that wrote the record (`svc-swap`, `loadgen`, ...).
    pub tool: String,
    /// That tool's version.
    pub version: String,
    /// The machine the tool ran on (not the server's host).
    pub hostname: Option<String>,
    /// RFC 3339 UTC time the tool started its work for this record.
    pub started_at: String,
    /// RFC 3339 UTC time the record was written.
    pub finished_at: String,
}

impl Provenance {
    /// Provenance for `tool`, started at `started` and finished now.
    pub fn new(tool: &str, started: std::time::SystemTime) -> Self {
        Provenance {
            tool: tool.to_string(),
            version: crate::VERSION.to_string(),
            hostname: crate::time::hostname(),
            started_at: crate::time::rfc3339(started),
            finished_at: crate::time::rfc3339(std::time::SystemTime::now()),
        }
    }
}

/// What is known about the server under test.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ServerInfo {
    /// The server software (`openai` when unknown).
    pub kind: Option<ServerKind>,
    /// Base URL the tools talked to.
    pub base_url: Option<String>,
    /// Served model name.
    pub model: Option<String>,
    /// Server version when it reports one.
    pub version: Option<String>,
    /// True when the server is llm-sim: results are not measurements.
    #[serde(default)]
    pub simulated: bool,
    /// The live server arguments as the server reported them.
    pub args: Option<Value>,
    /// Most requests the server runs at once (SGLang `max_running_requests`
    /// from `/server_info`; 48 when speculation is on and it was not set):
    /// concurrency above it queues in the server.
    pub max_running_requests: Option<u64>,
    /// The live process's own argument vector (`/proc/PID/cmdline`), read
    /// when the server reports no `args` (vLLM, llama.cpp); secrets redacted.
    pub argv: Option<Vec<String>>,
    /// Where the server ran and on what hardware (wait-ready reads it once
    /// per run through the transport; loadgen keeps it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
}

/// The machine a server ran on, as seen through the transport: one
/// far-side command (`nvidia-smi --query-gpu=name,memory.total
/// --format=csv,noheader`, `/proc/cpuinfo`, `uname -n`) per run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct HostInfo {
    /// The SSH destination (`root@gpu1`, as given) or `localhost`.
    pub name: String,
    /// Command prefix the far side was reached through (`pct exec 129 --`):
    /// with `name`, what tells two containers on one host apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec_prefix: Option<String>,
    /// The far side's own host name (`uname -n`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// One entry per GPU `nvidia-smi` listed; empty when it is absent or
    /// listed none (then `gpu_error` says why, if it failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<Gpu>,
    /// Why `nvidia-smi` gave no GPUs when it was present but failed (e.g.
    /// no driver); absent when it listed GPUs or is not installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_error: Option<String>,
    /// `model name` of the first processor in `/proc/cpuinfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Logical CPUs (`processor` lines in `/proc/cpuinfo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
    /// The hardware in one comparable line, e.g. `8x NVIDIA H200 (143771
    /// MiB); 192x AMD EPYC 9654`: summarize treats hosts whose
    /// fingerprints (and server kind and version) are equal as identical.
    pub fingerprint: String,
}

/// One GPU as `nvidia-smi --query-gpu=name,memory.total` lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Gpu {
    /// e.g. `NVIDIA H200`.
    pub name: String,
    /// Total memory in MiB, when reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
}

/// One launch-argument change made by svc-swap.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Change {
    /// Flag as written on the command line, e.g. `--speculative-num-steps`.
    pub flag: String,
    /// Value before (`null`: flag absent; `""`: a bare switch).
    pub old: Option<String>,
    /// Value after (`null`: flag removed).
    pub new: Option<String>,
}

/// Where the service lives and how it is managed.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ServiceTarget {
    /// `systemd`, `process` or `container`.
    pub manager: String,
    /// Unit name (systemd), spec file path (process) or container name.
    pub unit: String,
    /// `user@host[:port]` when reached over SSH.
    pub ssh: Option<String>,
    /// Command prefix the far side was reached through (`pct exec 129 --`).
    pub exec_prefix: Option<String>,
    /// Log file of a process-managed service.
    pub log: Option<String>,
    /// TCP port the service listens on, when known.
    pub port: Option<u16>,
    /// Private key files `ssh` was reached with (`--ssh-key`, in order):
    /// paths only, never key material, so later stages reconnect alike.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ssh_key: Vec<String>,
    /// The known_hosts file the host key was checked against
    /// (`--known-hosts`); absent: `~/.ssh/known_hosts`.
    pub known_hosts: Option<String>,
    /// True when an unknown host key was to be recorded (OpenSSH's
    /// accept-new, `--accept-new-host-key`); a changed key is refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub accept_new_host_key: bool,
    /// The ssh config file read for `ssh` (`--ssh-config`), when not the
    /// default one.
    pub ssh_config: Option<String>,
    /// The container, when `manager` is `container` (svc-swap
    /// `--container`, `--compose`): which engine, which container now
    /// serves, from which image.
    pub container: Option<ContainerRef>,
}

/// A container svc-swap recreated (or would): `unit` names it too.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ContainerRef {
    /// `docker` or `podman`.
    pub engine: String,
    /// The container's name (what `--container` named).
    pub name: String,
    /// Full ID of the container that serves now (after a swap: the new one).
    pub id: String,
    /// The image as the user named it (`lmsysorg/sglang:latest`); absent for
    /// a container run from a root filesystem (`--rootfs`).
    pub image: Option<String>,
    /// The image ID the container runs (both containers of a swap share it).
    pub image_id: Option<String>,
    /// The image's repository digest (`name@sha256:...`), when it has one.
    pub image_digest: Option<String>,
    /// The old container, stopped and kept under this name for rollback.
    pub previous: Option<String>,
    /// The Compose file and service, when the swap went through Compose.
    pub compose_file: Option<String>,
    pub compose_service: Option<String>,
}

/// How the old instance stopped.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct StopInfo {
    /// How it ended: `clean_after_resend` ended only after SIGTERM was
    /// sent again (see `term_resent`); empty when nothing was stopped (a
    /// dry run, a no-op).
    pub result: StopResult,
    pub duration_s: f64,
    /// SIGTERMs sent after the first while the old instance outlived it
    /// (svc-swap `--resend-term-after`; vLLM loses one that arrives while it
    /// loads). Absent when none was needed.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub term_resent: u32,
    pub old_main_pid: Option<u32>,
    pub old_invocation_id: Option<String>,
    /// systemd's `Result=` after the stop, when systemd manages the unit.
    pub systemd_result: Option<String>,
    /// PIDs of the old instance when the stop began (its control group, or
    /// the pid file's PID); each was checked gone before the start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub old_pids: Vec<u32>,
    /// Why `result` is what it is, e.g. the journal's "State 'stop-sigterm'
    /// timed out. Killing." line.
    pub detail: Option<String>,
    /// The `--gpu` check: `freed`, or why it was skipped.
    pub gpu: Option<String>,
}

/// Serde's skip test for `StopInfo::term_resent`: records of stops that
/// needed one SIGTERM read as before.
fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// The new instance.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct StartInfo {
    pub started_at: String,
    pub main_pid: Option<u32>,
    pub invocation_id: Option<String>,
    /// True when `/proc/PID/cmdline` of the new main PID equals the new
    /// `exec_start`; `null` when it could not be compared (variables, `%`
    /// specifiers, or the process already gone).
    pub cmdline_verified: Option<bool>,
    /// True when `systemctl reset-failed` ran first (e.g. start-limit-hit).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reset_failed: bool,
    /// Size in bytes of the log file just before this instance started:
    /// its own lines begin there (the process manager appends every
    /// instance's output to one log).
    pub log_offset: Option<u64>,
}

/// What svc-swap did.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SwapRecord {
    pub schema: u32,
    pub config: Config,
    pub provenance: Provenance,
    pub target: ServiceTarget,
    pub changes: Vec<Change>,
    /// The new command line, split into words.
    pub exec_start: Vec<String>,
    pub stop: StopInfo,
    pub start: StartInfo,
    /// How the new command line was put in place.
    pub method: SwapMethod,
    /// The file svc-swap wrote (drop-in, unit file, spec, container
    /// definition or Compose file).
    pub path: Option<String>,
    /// The timestamped copy of that file's previous text, if it had one.
    pub backup: Option<String>,
    /// Warnings a human should act on (duplicate flags, skipped checks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// What pre-flight says the server will force or ignore (SGLang's
    /// draft tokens = steps + 1 at topk 1, its 48-request cap).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<String>,
    pub upstream: Option<Value>,
    /// True when the live instance already ran the requested config (its
    /// manager's ExecStart and its own argv): nothing was stopped or
    /// restarted (`svc-swap --force-restart` restarts anyway).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub noop: bool,
    /// The far-side job that did the stop and start: `svc-swap --reattach
    /// ID` follows it when the session was lost.
    pub swap_id: Option<String>,
    /// True when this record was written by a later run that reattached
    /// to the job (the run that started it was lost).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reattached: bool,
    /// Files svc-swap copied to the far side and set a flag to
    /// (`--set-file`, a schedule's adaptive config): each checked there by
    /// size and SHA-256 before anything was stopped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<CopiedFile>,
}

/// A file made here that svc-swap copied to the far side for a flag.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CopiedFile {
    /// The flag set to `far_path`, e.g. `--speculative-adaptive-config`.
    pub flag: String,
    /// Where the file came from: the local path, or `RECORD#adaptive_config`
    /// when the content came from an `--apply-from` schedule record.
    pub local_path: String,
    /// The path on the far side: `DIR/SHA16-NAME` (svc-swap(1) FILES); with
    /// `--container`, the path inside the container.
    pub far_path: String,
    /// With `--container`: where the file lies on the container's host (the
    /// source of the bind mount that holds `far_path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_path: Option<String>,
    /// SHA-256 of the content, 64 lowercase hex digits (as `sha256sum`).
    pub sha256: String,
    /// The content's size, checked on the far side too.
    pub size_bytes: u64,
}

/// wait-ready's verdict.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ReadyOutcome {
    Ready,
    /// `--invert`: the server is down.
    Down,
    Timeout,
    Crashed,
    RestartLoop,
    Unreachable,
    ConfigMismatch,
    Interrupted,
}

impl ReadyOutcome {
    /// The exit code wait-ready ends with for this outcome.
    pub fn exit_code(self) -> u8 {
        use crate::exit;
        match self {
            ReadyOutcome::Ready | ReadyOutcome::Down => exit::OK,
            ReadyOutcome::Timeout => exit::TIMEOUT,
            ReadyOutcome::Crashed => exit::CRASHED,
            ReadyOutcome::RestartLoop => exit::RESTART_LOOP,
            ReadyOutcome::Unreachable => exit::UNREACHABLE,
            ReadyOutcome::ConfigMismatch => exit::CONFIG_MISMATCH,
            ReadyOutcome::Interrupted => exit::INTERRUPTED,
        }
    }
}

/// One probe target's last state.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ProbeTarget {
    pub target: String,
    pub ok: bool,
    pub last_status: Option<u16>,
    pub last_error: Option<String>,
}

/// What wait-ready saw.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ReadyRecord {
    pub schema: u32,
    pub config: Config,
    pub provenance: Provenance,
    pub outcome: ReadyOutcome,
    /// One line saying why (the same line wait-ready prints on stderr).
    pub reason: String,
    pub targets: Vec<ProbeTarget>,
    /// How targets and watchers were reached when not directly: e.g.
    /// `ssh root@gpu1` (HTTP through an SSH direct-tcpip tunnel) or
    /// `local via 'pct exec 129 --'`. Absent when everything was local.
    pub via: Option<String>,
    /// Seconds from start of waiting until a TCP connect first succeeded.
    pub time_to_port_open_s: Option<f64>,
    /// Seconds from start of waiting until every target passed.
    pub time_to_ready_s: Option<f64>,
    pub elapsed_s: f64,
    pub attempts: u64,
    pub server: Option<ServerInfo>,
    /// Where the live config (`--expect-config`, `server.args`/`argv`) was
    /// read: `server_info` (the server's own report: SGLang's
    /// `/server_info`, llama.cpp's `/props`), `argv` (the process's
    /// `/proc/PID/cmdline`), `inspect` (a container's command, by the
    /// engine's `container inspect`), or `none`.
    pub config_source: Option<ConfigSource>,
    /// Last log lines (journal or `--log`) when the server crashed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// Warnings a human should act on, also printed on stderr: an
    /// `--expect-config` value the server reports but does not use
    /// (`speculative-num-steps=3` while `speculative_algorithm` is null).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    pub upstream: Option<Value>,
}

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
}

impl Counts {
    /// Every field (all integers): metrics such as `counts.failed`.
    pub const FIELDS: [&'static str; 6] = [
        "completed",
        "failed",
        "early_stops",
        "usage_missing",
        "input_tokens",
        "output_tokens",
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
    pub stopped: String,
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
    /// Warnings a human should act on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// True when the level was cut short (Ctrl-C, server death).
    #[serde(default)]
    pub partial: bool,
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

/// The pipeline stage a failure happened at.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Swap,
    Ready,
    Bench,
}

/// What kind of failure stopped a config from being measured.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The server exited while loading.
    CrashedAtLoad,
    /// The server ran out of (GPU) memory.
    Oom,
    /// The server died after it was ready.
    CrashedMidRun,
    /// Still loading when the readiness timeout ran out.
    Timeout,
    RestartLoop,
    Unreachable,
    ConfigMismatch,
    /// svc-swap could not stop, edit or start the service.
    SwapFailed,
    /// svc-swap's pre-flight refused the config before touching the server.
    PreflightRejected,
    /// Every request of the benchmark failed.
    BenchFailed,
    Interrupted,
    /// sweep --hosts stopped using a host after repeated failures (the
    /// record has no config; `reason` names the host, `upstream` is its
    /// origin record, which carries its target).
    HostDropped,
    /// A stage run for a config (`--pipeline-config`) got no record from
    /// the stage before it (killed, crashed): nothing was measured. `stage`
    /// is the stage that wrote no record; the config is the driver's.
    UpstreamMissing,
}

impl FailureKind {
    /// The class a failure of this kind has unless the tool knows better:
    /// `unreachable` is the transport's (the server's port or host could
    /// not be reached), every other kind is the config's own.
    pub fn default_class(self) -> FailureClass {
        match self {
            // A stage that died without a record says nothing about the
            // config either: run it again.
            FailureKind::Unreachable | FailureKind::HostDropped | FailureKind::UpstreamMissing => {
                FailureClass::Transport
            }
            _ => FailureClass::Config,
        }
    }
}

/// A failure record's class, read from its JSON: its `class`, or for
/// records of older tools (no `class`, or one this version does not know)
/// its kind's default class; an unknown kind is the config's own.
pub fn failure_class(rec: &Value) -> FailureClass {
    if let Some(c) = rec
        .get("class")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
    {
        return c;
    }
    rec.get("kind")
        .and_then(|k| serde_json::from_value::<FailureKind>(k.clone()).ok())
        .map_or(FailureClass::Config, FailureKind::default_class)
}

/// Whose fault a failure was: a sweep retries `transport` failures and
/// never uses them as results; `config` failures are results.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// Transient: SSH connect or session lost, the far side unreachable.
    /// Running the same config again may well succeed.
    Transport,
    /// The config's own: crash, OOM, timeout at load, config mismatch,
    /// a pre-flight refusal, every request failing.
    Config,
}

/// A config that could not be measured, and why.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FailureRecord {
    pub schema: u32,
    pub config: Config,
    pub provenance: Provenance,
    pub stage: Stage,
    pub kind: FailureKind,
    /// `transport` or `config` (see `FailureClass`). Absent in records of
    /// older tools: read it as `kind`'s default class.
    pub class: Option<FailureClass>,
    pub reason: String,
    /// The failing tool's exit code.
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    pub upstream: Option<Value>,
    /// svc-swap: which config serves after the failure (`old`, `new`, or
    /// `none` when neither could be started); absent when unknown.
    pub running: Option<String>,
    /// svc-swap: the far-side job that ran the stop and start, if any.
    pub swap_id: Option<String>,
    /// wait-ready: where the server ran and on what hardware, when read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostInfo>,
}

/// summarize's decisions, as a record a script can act on.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SummaryRecord {
    pub schema: u32,
    pub provenance: Provenance,
    /// The metric decided on, e.g. `throughput.output_tok_per_s`.
    pub metric: String,
    pub objective: String,
    /// The overall pick; `svc-swap --apply-from -` applies it.
    pub best_config: Config,
    /// Config keys that vary across the results but the pick leaves unset
    /// (e.g. `speculative-algorithm` when the pick is speculation off): a
    /// tool applying `best_config` should remove these flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub best_unset: Vec<String>,
    /// Best config per level, keyed by level label (`c=16`, `rate=4`).
    pub best_per_level: BTreeMap<String, Config>,
    /// e.g. "below 2% gain beyond speculative-num-steps=4".
    pub plateau: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// True when any input came from llm-sim.
    #[serde(default)]
    pub simulated: bool,
    /// Any decision detail beyond the fields above.
    pub details: Option<Value>,
    /// `summarize --per-host`: the host these decisions are for (its
    /// `name`, exec prefix and hardware fingerprint); absent when the
    /// results were ranked together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// What ran before a sweep first touched the server: written once, as the
/// first record of a results file, so every later restore (after Ctrl-C,
/// after `--resume`) puts back this config and not whatever runs when a
/// resumed sweep starts. `summarize --origin` reads it back.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct OriginRecord {
    pub schema: u32,
    /// The swept parameters' original values (a parameter the original
    /// command line lacked is absent here and listed in `unset`).
    pub config: Config,
    pub provenance: Provenance,
    /// Flags (as written, e.g. `--speculative-num-steps`) that were absent
    /// originally: a restore removes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unset: Vec<String>,
    /// Flags as written, with their original values: a restore sets them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    /// Where the service lives (from the dry-run swap record).
    #[serde(default)]
    pub target: ServiceTarget,
    /// The dry-run swap record the origin was read from.
    pub upstream: Option<Value>,
}

/// Build a failure record for `config` that carries `upstream` along.
pub fn failure(
    tool: &str,
    started: std::time::SystemTime,
    config: Config,
    stage: Stage,
    kind: FailureKind,
    reason: impl Into<String>,
    upstream: Option<Value>,
) -> FailureRecord {
    FailureRecord {
        schema: SCHEMA_VERSION,
        config,
        provenance: Provenance::new(tool, started),
        stage,
        kind,
        class: Some(kind.default_class()),
        reason: reason.into(),
        exit_code: None,
        log_tail: Vec::new(),
        upstream,
        running: None,
        swap_id: None,
        host: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_round_trips_with_type_tag() {
        let mut cfg = Config::new();
        cfg.insert("speculative-num-steps".into(), "5".into());
        let f = failure(
            "wait-ready",
            std::time::SystemTime::now(),
            cfg,
            Stage::Ready,
            FailureKind::Oom,
            "CUDA out of memory",
            None,
        );
        let line = serde_json::to_string(&Record::Failure(f.clone())).unwrap();
        assert!(line.starts_with(r#"{"type":"failure""#), "{line}");
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back, Record::Failure(f));
    }

    /// serde names every tag of `Record` when it meets an unknown one:
    /// RECORD_TYPES must list exactly those, in order.
    #[test]
    fn record_types_are_the_tags_serde_derives() {
        let e = serde_json::from_str::<Record>(r#"{"type":"no_such_type"}"#).unwrap_err();
        let msg = e.to_string();
        let list = msg
            .split("expected one of ")
            .nth(1)
            .expect("serde lists the tags");
        let tags: Vec<&str> = list
            .split(", ")
            .map(|t| t.trim_matches(|c: char| c == '`' || !c.is_ascii_graphic()))
            .map(|t| t.split('`').next().unwrap_or(t))
            .collect();
        let ours: Vec<&str> = RECORD_TYPES.iter().map(|(t, _)| *t).collect();
        assert_eq!(tags, ours, "{msg}");
        assert!(is_record_type("origin") && !is_record_type("nope"));
        let b = Record::Bench(BenchRecord::default());
        let line = serde_json::to_string(&b).unwrap();
        assert!(line.starts_with(&format!(r#"{{"type":"{}""#, b.kind())));
    }

    /// The top-level keys of `v` (a serialized struct).
    fn keys(v: impl Serialize) -> Vec<String> {
        let v = serde_json::to_value(v).unwrap();
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    }

    fn sorted(xs: &[&str]) -> Vec<String> {
        let mut v: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
        v.sort();
        v
    }

    /// The field lists summarize's metrics come from match the structs.
    /// The literals name every field (no `..`), so a new field does not
    /// compile here until it is listed.
    #[test]
    fn field_lists_match_the_structs() {
        let st = Stats {
            count: 1,
            mean: 1.0,
            p50: 1.0,
            p90: 1.0,
            p95: 1.0,
            p99: 1.0,
            max: 1.0,
        };
        assert_eq!(keys(&st), sorted(&Stats::FIELDS));
        let t = Throughput {
            elapsed_s: 1.0,
            requests_per_s: 1.0,
            output_tok_per_s: 1.0,
            total_tok_per_s: 1.0,
            goodput_req_per_s: Some(1.0),
            achieved_concurrency: 1.0,
            slo_attainment: Some(1.0),
        };
        assert_eq!(keys(&t), sorted(&Throughput::FIELDS));
        let c = Counts {
            completed: 1,
            failed: 1,
            early_stops: 1,
            usage_missing: 1,
            input_tokens: 1,
            output_tokens: 1,
        };
        assert_eq!(keys(&c), sorted(&Counts::FIELDS));
        let sp = SpecStats {
            source: SpecSource::Metrics,
            origin: Some("x".into()),
            draft_tokens: Some(1),
            accepted_tokens: Some(1),
            acceptance_rate: Some(1.0),
            accept_length: Some(1.0),
            drafts: Some(1),
        };
        let mut n = sorted(&SpecStats::NUMBERS);
        n.extend(["origin".to_string(), "source".to_string()]);
        n.sort();
        assert_eq!(keys(&sp), n);
        bench_lists_match(st, t, sp);
    }

    fn bench_lists_match(st: Stats, t: Throughput, sp: SpecStats) {
        let b = BenchRecord {
            schema: 1,
            config: Config::new(),
            provenance: Provenance::default(),
            server: ServerInfo::default(),
            load: Load::default(),
            counts: Counts::default(),
            errors: BTreeMap::new(),
            throughput: t.clone(),
            latency: Latency {
                ttft_ms: st.clone(),
                tpot_ms: st.clone(),
                itl_ms: st.clone(),
                chunk_gap_ms: st.clone(),
                e2e_ms: st.clone(),
                queue_ms: st.clone(),
                start_lag_ms: st.clone(),
                e2e_incl_queue_ms: Some(st),
            },
            // Not a metric: how the level ended (`loadgen --until-stable`).
            stability: None,
            // Not a metric: a capacity search's result.
            capacity: None,
            itl_method: Some("x".into()),
            tokens_per_chunk: Some(1.0),
            client_cpu_s: Some(1.0),
            steady: Some(t),
            spec: Some(sp),
            warnings: vec!["w".into()],
            partial: true,
            upstream: Some(Value::Null),
        };
        let v = serde_json::to_value(&b).unwrap();
        let obj = v.as_object().unwrap();
        let is = |k: &str, fields: &[&str]| {
            obj[k].as_object().is_some_and(|o| o.len() == fields.len())
                && fields.iter().all(|f| obj[k].get(f).is_some())
        };
        let blocks: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| is(k, &Stats::FIELDS))
            .collect();
        assert_eq!(sorted(&blocks), sorted(&BenchRecord::STATS_BLOCKS));
        let tput: Vec<&str> = obj
            .keys()
            .map(String::as_str)
            .filter(|k| is(k, &Throughput::FIELDS))
            .collect();
        assert_eq!(sorted(&tput), sorted(&BenchRecord::THROUGHPUT_BLOCKS));
        let top: Vec<&str> = obj
            .iter()
            .filter(|(k, x)| x.is_f64() && *k != "schema")
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(sorted(&top), sorted(&BenchRecord::NUMBERS));
    }

    #[test]
    fn bench_latency_blocks_stay_top_level_fields_in_order() {
        let mut b = BenchRecord::default();
        b.latency.ttft_ms.p50 = 12.5;
        b.latency.e2e_incl_queue_ms = Some(Stats::default());
        let line = serde_json::to_string(&Record::Bench(b.clone())).unwrap();
        let keys = [
            "\"throughput\"",
            "\"ttft_ms\"",
            "\"tpot_ms\"",
            "\"itl_ms\"",
            "\"chunk_gap_ms\"",
            "\"e2e_ms\"",
            "\"queue_ms\"",
            "\"start_lag_ms\"",
            "\"e2e_incl_queue_ms\"",
            "\"partial\"",
        ];
        let at: Vec<usize> = keys.iter().map(|k| line.find(k).unwrap()).collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{line}");
        assert!(!line.contains("latency"), "{line}");
        let back: Record = serde_json::from_str(&line).unwrap();
        assert_eq!(back, Record::Bench(b));
    }

    /// Slot keys are JSON strings that read back as numbers, in numeric
    /// order, through the tagged `Record` (serde's own integer keys do not).
    #[test]
    fn schedule_round_trips_with_batch_size_keys() {
        let slot = |k: u32| AdaptiveSlot {
            candidate_steps: vec![k],
        };
        let rec = ScheduleRecord {
            schema: SCHEMA_VERSION,
            metric: "throughput.output_tok_per_s".into(),
            per_level: Vec::new(),
            max_batch: 48,
            max_batch_source: "--max-batch".into(),
            replaces: vec!["speculative-num-steps".into()],
            warnings: Vec::new(),
            simulated: false,
            server: ScheduleServer::Sglang,
            flags: vec!["--speculative-adaptive".into()],
            speculative_config: None,
            adaptive_config: Some([(BatchSize(16), slot(1)), (BatchSize(4), slot(3))].into()),
            adaptive_config_file: Some("a.json".into()),
            provenance: Provenance::default(),
        };
        let line = serde_json::to_string(&Record::Schedule(rec.clone())).unwrap();
        assert!(line.starts_with(r#"{"type":"schedule""#), "{line}");
        assert!(
            line.contains(r#""adaptive_config":{"4":{"candidate_steps":[3]},"16":"#),
            "{line}"
        );
        assert!(!line.contains("speculative_config"), "{line}");
        assert_eq!(
            crate::io::parse_record(&line),
            Ok(Record::Schedule(rec.clone()))
        );
        assert_eq!(Record::Schedule(rec).kind(), "schedule");
    }

    #[test]
    fn outcome_exit_codes_are_distinct() {
        use ReadyOutcome::*;
        let all = [
            Timeout,
            Crashed,
            RestartLoop,
            Unreachable,
            ConfigMismatch,
            Interrupted,
        ];
        let mut codes: Vec<u8> = all.iter().map(|o| o.exit_code()).collect();
        codes.sort();
        codes.dedup();
        assert_eq!(codes.len(), all.len());
        assert_eq!(Ready.exit_code(), 0);
    }
}

/// A value of an adaptive sweep (`sweep --adaptive`) that was never
/// measured, and why: when the search stops, `summarize --next
/// --emit-skipped` writes one per untried value, appended to the results
/// file, so the file explains the whole grid. summarize lists them under
/// its table; a resumed adaptive sweep reaches the same decision again
/// (it is a function of the file), and a grid `--resume` measures them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SkippedRecord {
    pub schema: u32,
    /// The untried config: the swept parameter and its value.
    pub config: Config,
    pub provenance: Provenance,
    /// The rule that stopped the search: `plateau` (K further values
    /// gained less than the plateau threshold at every level and lost at
    /// one), `peaked` (the weighted score fell clearly below the best) or
    /// `exhausted` (every value was measured).
    pub rule: SkipRule,
    /// One line for people: which values decided it, against which best.
    pub reason: String,
    /// The best config when the search stopped.
    pub best_config: Config,
}

/// `summarize --schedule vllm|sglang`'s result: from a sweep over one
/// speculative depth at two or more concurrency levels, the server's own
/// per-load schedule (summarize(1) SCHEDULE), with the flags that set it.
/// It has no `config`: it is a choice among the swept configs per level.
/// summarize skips it when reading it back; no other tool reads it.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScheduleRecord {
    pub schema: u32,
    /// The metric the depths were chosen on, e.g.
    /// `throughput.output_tok_per_s`.
    pub metric: String,
    /// Each level's choice, in ascending concurrency.
    pub per_level: Vec<ScheduleLevel>,
    /// The server's max batch: the last range runs to it.
    pub max_batch: u64,
    /// Where `max_batch` came from, for people: `--max-batch`, the records
    /// (the server's max running requests or `--max-num-seqs`), or the
    /// server's default.
    pub max_batch_source: String,
    /// The swept config keys the flags replace: a tool applying `flags`
    /// removes these flags.
    pub replaces: Vec<String>,
    /// Warnings a human should act on (levels within noise, levels above
    /// the max batch left out), also printed on stderr.
    pub warnings: Vec<String>,
    /// True when any input came from llm-sim.
    pub simulated: bool,
    /// The server the schedule is for.
    pub server: ScheduleServer,
    /// The server flags that set the schedule, as words. vLLM:
    /// `--speculative-config` and the JSON of `speculative_config`. SGLang:
    /// the swept algorithm and draft, `--speculative-eagle-topk 1`,
    /// `--speculative-num-steps` (the lowest level's choice),
    /// `--speculative-adaptive`, `--speculative-adaptive-config` and
    /// `adaptive_config_file`.
    pub flags: Vec<String>,
    /// vLLM only: the complete `--speculative-config` as an object; vLLM's
    /// own JSON, kept free-form (the swept settings pass through): the
    /// swept method and draft settings,
    /// `num_speculative_tokens` = the largest depth used, and
    /// `num_speculative_tokens_per_batch_size`, inclusive `[range_start,
    /// range_end, k]` (vllm/config/speculative.py).
    pub speculative_config: Option<serde_json::Map<String, Value>>,
    /// SGLang only: the file `--speculative-adaptive-config` reads, SGLang's
    /// own format: each level's lowest batch size (a string key, `"1"`,
    /// `"16"`) -> `{"candidate_steps": [...]}`, the choice plus every depth
    /// within tolerance or noise of the best there
    /// (python/sglang/srt/speculative/adaptive_spec_params.py).
    pub adaptive_config: Option<BTreeMap<BatchSize, AdaptiveSlot>>,
    /// SGLang only: where the flags say `adaptive_config` is to be written
    /// (`--adaptive-config-file`).
    pub adaptive_config_file: Option<String>,
    pub provenance: Provenance,
}

/// The server a schedule is for (`summarize --schedule`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleServer {
    Vllm,
    Sglang,
}

/// One level's choice in a schedule.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScheduleLevel {
    /// The level's label, e.g. `c=16`.
    pub level: String,
    /// Its concurrency (requests in flight).
    pub concurrency: u64,
    /// The first batch size the choice holds for (1 for the lowest level).
    pub batch_from: u64,
    /// The last batch size it holds for (inclusive): the next level's
    /// batch size - 1, the last level's the max batch.
    pub batch_to: u64,
    /// The depth chosen: draft tokens (vLLM) or steps (SGLang); 0 is
    /// speculation off.
    pub k: u32,
    /// The chosen config's label in summarize's table.
    pub config: String,
    /// The chosen config's score there, in the unit of `metric`.
    pub score: f64,
    /// Depths within tolerance or noise of the best there, sorted (has `k`).
    pub close: Vec<u32>,
    /// The depth the choice was decided against; `null` when it had none.
    pub rival_k: Option<u32>,
    /// That depth's score, in the unit of `metric`; `null` with `rival_k`.
    pub rival_score: Option<f64>,
    /// True when the choice is within noise of the rival (repeats spread
    /// wider than the gap).
    pub within_noise: bool,
}

/// One slot of SGLang's adaptive config file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AdaptiveSlot {
    /// The steps SGLang may move among at these batch sizes.
    pub candidate_steps: Vec<u32>,
}

/// A batch size as a JSON object key (`"16"`), ordered as a number: the
/// keys of SGLang's adaptive config. (serde reads integer keys back only
/// through serde_json's own map, not inside a tagged [`Record`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BatchSize(pub u64);

impl Serialize for BatchSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for BatchSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.trim().parse().map(BatchSize).map_err(|_| {
            serde::de::Error::custom(format!("batch size {text:?} is not a whole number"))
        })
    }
}
