//! The records that flow between sweepkit tools, defined once.
//!
//! Every record is one JSON object on one line, tagged with `"type"`. Each
//! carries `config` (parameter -> value, the labels results are grouped by)
//! and `provenance`; a tool that read a record from stdin keeps it whole in
//! `upstream`, so the last record of a pipeline says which config produced
//! which numbers. `man/sweepkit-records.5` documents every field, and the
//! contract test in `tests/` checks real tool output against it.

use serde::{Deserialize, Serialize};

// One file per record kind, plus the parts several share; the public
// paths stay `sweepkit::records::NAME`.
mod bench;
mod failure;
mod gpu;
pub mod histogram;
mod origin;
mod ready;
mod schedule;
mod server;
mod server_limits;
mod server_metrics;
mod shared;
mod skipped;
mod slot;
mod slurm;
mod summary;
mod swap;
mod upstream;
mod vocabulary;

pub use bench::*;
pub use failure::*;
pub use gpu::*;
pub use histogram::{Histograms, HDR_ENCODING};
pub use origin::*;
pub use ready::*;
pub use schedule::*;
pub use server::*;
pub use server_limits::*;
pub use server_metrics::*;
pub use shared::*;
pub use skipped::*;
pub use slot::*;
pub use slurm::*;
pub use summary::*;
pub use swap::*;
pub use upstream::*;
pub use vocabulary::*;

#[cfg(test)]
mod tests;

/// Any record, as read from a pipe.
// Bench records dominate every stream that holds many records, so boxing
// them would add an allocation per record without saving memory.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    Swap(SwapRecord),
    Ready(ReadyRecord),
    Bench(BenchRecord),
    Failure(FailureRecord),
    Summary(SummaryRecord),
    Origin(OriginRecord),
    Skipped(SkippedRecord),
    Schedule(ScheduleRecord),
}

/// A record holding this object (`{"of": "pick", "trace": FILE, "slo":
/// TERMS}`) is the replay `sweep --validate-on` ran against the pick (or
/// the schedule) after the sweep: reported apart, never one of the sweep's
/// results (summarize pools it with no cell; sweep-plan counts it for no
/// config).
pub const VALIDATION_FIELD: &str = "validation";

/// Every record type: its `type` tag and the struct it is, listed once.
/// io.rs's reader, summarize and the man page generator read this list; a
/// test checks it against the tags serde derives for [`Record`].
pub const RECORD_TYPES: [(&str, &str); 8] = [
    ("swap", "SwapRecord"),
    ("ready", "ReadyRecord"),
    ("bench", "BenchRecord"),
    ("failure", "FailureRecord"),
    ("summary", "SummaryRecord"),
    ("origin", "OriginRecord"),
    ("skipped", "SkippedRecord"),
    ("schedule", "ScheduleRecord"),
];

/// True when `tag` is a record type this version knows.
pub fn is_record_type(tag: &str) -> bool {
    RECORD_TYPES.iter().any(|(t, _)| *t == tag)
}

impl Record {
    /// The record's `type` tag.
    pub fn kind(&self) -> &'static str {
        // The match is exhaustive, so a new variant must be given a place.
        let i = match self {
            Record::Swap(_) => 0,
            Record::Ready(_) => 1,
            Record::Bench(_) => 2,
            Record::Failure(_) => 3,
            Record::Summary(_) => 4,
            Record::Origin(_) => 5,
            Record::Skipped(_) => 6,
            Record::Schedule(_) => 7,
        };
        RECORD_TYPES[i].0
    }

    /// The config this record describes; empty for a schedule, which
    /// describes a choice among configs per load, not one config (no
    /// upstream reader accepts it: `upstream::SERVER`, `upstream::CONFIG`).
    pub fn config(&self) -> &Config {
        static NONE: Config = Config::new();
        match self {
            Record::Swap(r) => &r.config,
            Record::Ready(r) => &r.config,
            Record::Bench(r) => &r.config,
            Record::Failure(r) => &r.config,
            Record::Summary(r) => &r.best_config,
            Record::Origin(r) => &r.config,
            Record::Skipped(r) => &r.config,
            Record::Schedule(_) => &NONE,
        }
    }
}
