//! What a bench record says about the GPU slot its config ran in (`sweep`
//! with slots: several configs side by side on one machine's GPU subsets):
//! the slot, its GPUs, and what the machine's other slots did while the
//! level ran, so a measurement taken beside another bench or a load is
//! known as such.

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

use super::vocabulary::SlotActivity;

/// The slot a level was measured in (added by sweep when it runs the
/// bench; see sweep(1), SLOTS).
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SlotUse {
    /// The machine the slots share, as sweep names it (`local`, or the
    /// SSH destination).
    pub machine: String,
    /// The slot, as its `--hosts` line or `--gpus` numbered it (`0`).
    pub slot: String,
    /// The slot's GPUs as given (`0,1`); absent when the line named none.
    pub gpus: Option<String>,
    /// `sweep --bench-together`: the machine's slots benchmarked at once;
    /// false: no other slot of the machine benchmarked during this level.
    #[serde(default)]
    pub bench_together: bool,
    /// Each other slot of the machine and what it did between this
    /// level's start and its record (`provenance`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub beside: Vec<SlotBeside>,
}

/// Another slot of the machine, during one level.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SlotBeside {
    /// The slot.
    pub slot: String,
    /// Its GPUs as given.
    pub gpus: Option<String>,
    /// What it did, each once, in the order seen: `loading` (its server
    /// stopping, starting or loading the model), `idle` (ready, or
    /// between configs), `benchmarking`.
    pub activity: Vec<SlotActivity>,
}

impl SlotUse {
    /// True when another slot benchmarked during the level.
    pub fn beside_bench(&self) -> bool {
        self.beside_doing(&SlotActivity::Benchmarking)
    }

    /// True when another slot's server loaded during the level.
    pub fn beside_load(&self) -> bool {
        self.beside_doing(&SlotActivity::Loading)
    }

    fn beside_doing(&self, a: &SlotActivity) -> bool {
        self.beside.iter().any(|b| b.activity.contains(a))
    }
}
