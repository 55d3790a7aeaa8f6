//! svc-swap's record: what it changed, how the old instance stopped and the new
//! one started.

use serde::{Deserialize, Serialize};
use serde_json::Value;
// `#[skip_serializing_none]` leaves every `None` out of the JSON (each
// struct it marks); `Change` keeps its `null`s, so it is not marked.
use serde_with::skip_serializing_none;

use super::shared::{Config, Provenance};
use super::vocabulary::{ServiceManager, StopResult, SwapMethod};

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
    /// What manages the service.
    pub manager: ServiceManager,
    /// Unit name (systemd), spec file path (process) or container name.
    pub unit: String,
    /// `user@host[:port]` when reached over SSH.
    pub ssh: Option<String>,
    /// Command prefix the far side was reached through (`pct exec 129 --`).
    pub exec_prefix: Option<String>,
    /// Log file of a process-managed service.
    pub log: Option<String>,
    /// PID file of a process-managed service (whose PID it holds is the
    /// service's, when it runs).
    pub pid_file: Option<String>,
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
