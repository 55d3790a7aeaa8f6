//! The origin record: what ran before a sweep first touched the server.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::shared::{Config, Provenance};
use super::swap::ServiceTarget;

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
