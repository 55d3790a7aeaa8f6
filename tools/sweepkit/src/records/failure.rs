//! The failure record: a config that could not be measured, and why.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::server::HostInfo;
use super::shared::{Config, Provenance, SCHEMA_VERSION};
use super::slurm::SlurmJob;

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
    /// A signal stopped the stage (Ctrl-C, sweep's own cancel of a Slurm
    /// job): no result, and not the config's fault (class `transport`).
    Interrupted,
    /// sweep --hosts stopped using a host after repeated failures (the
    /// record has no config; `reason` names the host, `upstream` is its
    /// origin record, which carries its target).
    HostDropped,
    /// A stage run for a config (`--pipeline-config`) got no record from
    /// the stage before it (killed, crashed): nothing was measured. `stage`
    /// is the stage that wrote no record; the config is the driver's.
    UpstreamMissing,
    /// wait-ready's probe path does not exist on the server (HTTP 404 or
    /// 405): the command's mistake, not the config's (class `usage`).
    NotFound,
    /// The server answered HTTP 401 or 403 (wait-ready's probe, loadgen's
    /// requests): it wants an API key, or refused the one sent. The
    /// command's mistake, not the config's (class `usage`).
    Unauthorized,
    /// sweep --slurm: sbatch refused the job (its own line is the
    /// `reason`); nothing ran.
    SubmitRejected,
    /// sweep --slurm: the job hit its time limit (Slurm state TIMEOUT);
    /// the records before it say how far load and bench got.
    TimeLimit,
    /// sweep --slurm: the job was cancelled from outside (scancel, an
    /// administrator): run it again.
    Cancelled,
    /// sweep --slurm: the job's node failed (NODE_FAIL, BOOT_FAIL): run
    /// it again, on another node.
    NodeFail,
    /// sweep --slurm: the job was preempted (PREEMPTED) by a job of a
    /// higher priority: run it again, on any node (its node is sound).
    Preempted,
    /// sweep --slurm: the job ended FAILED without a record of the tools
    /// (the batch script itself failed); `exit_code` is the job's.
    JobFailed,
    /// sweep --slurm: still pending when --queue-timeout ran out; the job
    /// was cancelled. Not a result.
    QueueTimeout,
}

impl FailureKind {
    /// The class a failure of this kind has unless the tool knows better:
    /// `unreachable` is the transport's (the server's port or host could
    /// not be reached), and so is an interruption; the kinds below that
    /// say the config's own failure are its own.
    pub fn default_class(self) -> FailureClass {
        match self {
            // A stage that died without a record says nothing about the
            // config either: run it again.
            FailureKind::Unreachable
            | FailureKind::Interrupted
            | FailureKind::HostDropped
            | FailureKind::UpstreamMissing
            | FailureKind::SubmitRejected
            | FailureKind::Cancelled
            | FailureKind::NodeFail
            | FailureKind::Preempted
            | FailureKind::QueueTimeout => FailureClass::Transport,
            FailureKind::NotFound | FailureKind::Unauthorized => FailureClass::Usage,
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
    /// The command's own (a readiness path the server does not have): it
    /// says nothing about the config, which is no result; fix the command
    /// and run the config again.
    Usage,
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
    /// sweep --slurm: the job the config ran in (added by sweep's control
    /// side when it appends the job's records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmJob>,
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
        slurm: None,
    }
}
