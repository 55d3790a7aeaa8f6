//! The closed vocabularies of record fields (`stop.result`, `method`, ...):
//! each a serde enum whose names are the values, so the records man page
//! lists them from here. Each has an `Other` variant that keeps a value this
//! version does not know (a newer writer's) as written: it reads and writes
//! back unchanged.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `Display` (the value as records write it) and `From<&str>` (an unknown
/// value becomes `Other`) through the serde names, so the enum is the one
/// list of its values; `Default` is `Other("")` where a default struct
/// would otherwise need a value no writer means.
macro_rules! vocabulary {
    ($($t:ident),* $(,)?) => {$(
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                match serde_json::to_value(self) {
                    Ok(Value::String(s)) => f.write_str(&s),
                    _ => Err(std::fmt::Error),
                }
            }
        }

        impl From<&str> for $t {
            fn from(s: &str) -> Self {
                serde_json::from_value(Value::String(s.to_string()))
                    .unwrap_or_else(|_| $t::Other(s.to_string()))
            }
        }
    )*};
}

macro_rules! default_other {
    ($($t:ident),* $(,)?) => {$(
        impl Default for $t {
            fn default() -> Self {
                $t::Other(String::new())
            }
        }
    )*};
}

vocabulary!(
    StopResult,
    SwapMethod,
    ConfigSource,
    LoadMode,
    SpecSource,
    SkipRule,
    ServerKind,
    ServiceManager,
    CapacityStop,
    SlotActivity
);
default_other!(
    SwapMethod,
    LoadMode,
    SpecSource,
    SkipRule,
    ServiceManager,
    CapacityStop
);

/// How svc-swap's stop of the old instance ended (`stop.result`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StopResult {
    /// Nothing was stopped: a dry run, a no-op.
    #[default]
    #[serde(rename = "")]
    NotStopped,
    Clean,
    /// It ended only after SIGTERM was sent again.
    CleanAfterResend,
    SigkillAfterTimeout,
    AlreadyStopped,
    ForceKilled,
    Failed,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// How svc-swap put the new command line in place (`method`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapMethod {
    /// A systemd drop-in that overrides ExecStart.
    #[serde(rename = "drop-in")]
    DropIn,
    /// The unit file itself, edited.
    #[serde(rename = "in-place")]
    InPlace,
    /// A process spec file.
    Spec,
    Container,
    Compose,
    /// The original config put back (`--restore`).
    Restore,
    /// `--dry-run`: nothing was touched.
    #[serde(rename = "dry-run")]
    DryRun,
    /// A failed swap undone.
    Rollback,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// Where wait-ready read the live config (`config_source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfigSource {
    /// The server's own report (SGLang's `/server_info`, llama.cpp's `/props`).
    ServerInfo,
    /// The process's `/proc/PID/cmdline`.
    Argv,
    /// A container's command, by the engine's `container inspect`.
    Inspect,
    /// Nowhere.
    None,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// A level's load shape (`load.mode`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadMode {
    /// Fixed concurrency.
    Closed,
    /// An arrival rate.
    Open,
    /// A trace replayed at its recorded times (`loadgen --trace`).
    Trace,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// Where a level's speculative-decoding figures came from (`spec.source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecSource {
    /// /metrics counter deltas over the level.
    Metrics,
    /// Per-request fields summed over the level.
    PerRequest,
    /// SGLang's `sglang:spec_accept_length` gauge, a recent window.
    Gauge,
    /// SGLang `/server_info` `avg_spec_accept_length` since server start.
    LifetimeAverage,
    /// What older records call `lifetime_average`.
    ServerInfo,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

impl SpecSource {
    /// True for a figure of the level itself (`metrics`, `per_request`);
    /// an unknown source is not taken for one.
    pub fn is_per_level(&self) -> bool {
        matches!(self, SpecSource::Metrics | SpecSource::PerRequest)
    }
}

/// The rule that stopped an adaptive search (`rule` of a skipped record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipRule {
    Plateau,
    Peaked,
    Exhausted,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// The server software (`server.kind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerKind {
    Sglang,
    Vllm,
    #[serde(rename = "llama.cpp")]
    LlamaCpp,
    #[serde(rename = "llm-sim")]
    LlmSim,
    /// Some OpenAI-compatible server, which one unknown.
    Openai,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// What manages a service svc-swap swaps (`target.manager`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceManager {
    /// A systemd unit.
    Systemd,
    /// A process svc-swap runs from a spec file.
    Process,
    /// A container (`--container`, `--compose`).
    Container,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// Why `loadgen --find-capacity` stopped (`capacity.stopped`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapacityStop {
    /// The capacity is known to the request.
    Converged,
    /// The level budget ran out first.
    Budget,
    /// `--max-concurrency` met every term.
    MaxConcurrency,
    /// A level failed: all requests, or the server died.
    ServerFailed,
    Interrupted,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// What a GPU slot was doing (`slot.beside.activity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotActivity {
    /// Its server stopping, starting or loading the model.
    Loading,
    /// Ready and waiting for the bench, or between configs.
    Idle,
    /// loadgen measuring its server.
    Benchmarking,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_read_typed_and_unknown_ones_round_trip() {
        let m: SwapMethod = serde_json::from_str(r#""drop-in""#).unwrap();
        assert_eq!(m, SwapMethod::DropIn);
        assert_eq!(m.to_string(), "drop-in");
        let new: StopResult = serde_json::from_str(r#""stopped_by_magic""#).unwrap();
        assert_eq!(new, StopResult::Other("stopped_by_magic".into()));
        assert_eq!(
            serde_json::to_string(&new).unwrap(),
            r#""stopped_by_magic""#
        );
        assert_eq!(StopResult::from(""), StopResult::NotStopped);
        assert_eq!(
            serde_json::to_string(&StopResult::default()).unwrap(),
            r#""""#
        );
        assert_eq!(ServerKind::from("llama.cpp"), ServerKind::LlamaCpp);
        assert_eq!(ConfigSource::None.to_string(), "none");
        assert!(SpecSource::from("per_request").is_per_level());
        assert!(!SpecSource::from("server_info").is_per_level());
        assert!(!SpecSource::from("from_the_future").is_per_level());
        assert_eq!(LoadMode::default().to_string(), "");
    }
}
