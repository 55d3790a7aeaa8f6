//! What the GPUs drew during a level (`loadgen --gpu-metrics`): power,
//! energy, memory and utilisation, from a DCGM exporter or nvidia-smi,
//! and the efficiency figures summarize can pick on.

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::server_metrics::GaugeFigure;

/// Where a level's GPU figures came from (`gpu.source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GpuSource {
    /// A DCGM exporter's Prometheus `/metrics` (`--gpu-metrics URL`).
    Dcgm,
    /// `nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms N`,
    /// locally or under `--gpu-metrics-cmd`.
    #[default]
    NvidiaSmi,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// How `gpu.energy_j` was found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyMethod {
    /// The increase of DCGM's `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`
    /// counter (mJ since boot), summed over the GPUs.
    Counter,
    /// Power samples integrated over time (trapezoids between samples).
    PowerIntegral,
    /// A value this version does not know, kept as written.
    #[serde(untagged)]
    Other(String),
}

/// The GPUs over one level, first send to last end. Sums are over every
/// GPU the source lists (the server's; point `--gpu-metrics` at its host).
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct GpuTelemetry {
    /// `dcgm` or `nvidia_smi`.
    pub source: GpuSource,
    /// The URL or command it was read through, as given.
    pub origin: String,
    /// Samples in the level.
    pub samples: u64,
    /// GPUs the source listed.
    pub gpus: u64,
    /// Board power, summed over the GPUs, W.
    pub power_w: Option<GaugeFigure>,
    /// Energy the GPUs used during the level, J.
    pub energy_j: Option<f64>,
    /// How `energy_j` was found: `counter` or `power_integral`.
    pub energy_method: Option<EnergyMethod>,
    /// Framebuffer memory in use, summed over the GPUs, MiB.
    pub memory_used_mib: Option<GaugeFigure>,
    /// GPU utilisation, the mean over the GPUs, percent.
    pub utilization_pct: Option<GaugeFigure>,
    /// `energy_j` / the level's output tokens: joules per output token.
    pub energy_per_output_token_j: Option<f64>,
    /// Output tokens/s per watt of mean power (`throughput.output_tok_per_s`
    /// / `power_w.mean`).
    pub output_tok_per_s_per_w: Option<f64>,
}

impl GpuTelemetry {
    /// The plain numbers (metrics such as `gpu.energy_per_output_token_j`).
    pub const NUMBERS: [&'static str; 5] = [
        "samples",
        "gpus",
        "energy_j",
        "energy_per_output_token_j",
        "output_tok_per_s_per_w",
    ];
    /// The gauge fields (each a [`GaugeFigure`]).
    pub const GAUGES: [&'static str; 3] = ["power_w", "memory_used_mib", "utilization_pct"];
}
