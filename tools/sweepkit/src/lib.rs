//! sweepkit's shared library: the records that flow through pipes, JSON Lines
//! and CSV I/O, exit codes, and error reporting. No tool's flags live here.

pub mod api;
pub mod diag;
pub mod engine;
pub mod exit;
pub mod flat;
pub mod hardware;
pub mod io;
pub mod lines;
pub mod listeners;
pub mod mix;
pub mod once;
pub mod pick;
pub mod proc_stat;
pub mod prom;
pub mod records;
pub mod redact;

#[cfg(feature = "rxstamp")]
pub mod rxstamp;
pub mod server_kind;
pub mod sha256;
#[cfg(feature = "args")]
pub mod short_help;
pub mod slo;
#[cfg(feature = "ssh")]
pub mod ssh;
pub mod stats;
pub mod time;
pub mod trace;
pub mod transport;
#[cfg(feature = "cli")]
pub mod transport_args;
pub mod upstream_input;
pub mod vllm_dotted;
pub mod vllm_schedule;
pub mod wrap;

pub use records::{
    BenchRecord, Change, FailureKind, FailureRecord, Provenance, ReadyOutcome, ReadyRecord, Record,
    ServerInfo, Stage, SummaryRecord, SwapRecord, SCHEMA_VERSION, VERSION,
};
