//! The skipped record: a value an adaptive sweep never measured, and why.

use serde::{Deserialize, Serialize};

use super::shared::{Config, Provenance};
use super::vocabulary::SkipRule;

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
