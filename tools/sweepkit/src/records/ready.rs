//! wait-ready's record: its verdict and what it saw.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::server::ServerInfo;
use super::shared::{Config, Provenance};
use super::vocabulary::ConfigSource;

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
    /// The server answers, but not at the probed path (HTTP 404/405).
    NotFound,
    /// The server answered HTTP 401 or 403: it wants an API key.
    Unauthorized,
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
            ReadyOutcome::NotFound => exit::NOT_FOUND,
            ReadyOutcome::Unauthorized => exit::AUTH_REFUSED,
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
