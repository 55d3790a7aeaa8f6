//! summarize's record: its decisions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::shared::{Config, Provenance};

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
    /// `summarize --by workload`: the workload this record's pick is for
    /// (kind, digest, block size, window); absent with one workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// `sweep --validate-on`'s replays of the trace against the pick (and
    /// the schedule): each its config, counts, goodput and text line. Set
    /// apart from every cell; absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub validations: Vec<Value>,
}
