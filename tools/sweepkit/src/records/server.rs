//! What a record says about the server under test and the machine it ran on.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::server_limits::ServerLimits;
use super::vocabulary::ServerKind;

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
    /// The capacity the server reported once ready: KV tokens and blocks,
    /// running requests, slots (loadgen reads it when it connects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ServerLimits>,
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
