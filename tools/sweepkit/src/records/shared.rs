//! What every record carries: the schema number, the config it describes
//! and who wrote it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Bumped when a field changes meaning or is removed, or a record grows a
/// block older readers would misread. 2: bench records carry what the
/// server measured (`server_metrics`, `gpu`, `server.limits`); records of
/// schema 1 are still read, their blocks absent.
pub const SCHEMA_VERSION: u32 = 2;

/// The version every tool stamps into its records' provenance.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The config map: launch parameter (flag name without dashes) -> value.
pub type Config = BTreeMap<String, String>;

/// Who wrote a record, with what, when.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Provenance {
    /// The tool that wrote the record (`svc-swap`, `loadgen`, ...).
    pub tool: String,
    /// That tool's version.
    pub version: String,
    /// The machine the tool ran on (not the server's host).
    pub hostname: Option<String>,
    /// RFC 3339 UTC time the tool started its work for this record.
    pub started_at: String,
    /// RFC 3339 UTC time the record was written.
    pub finished_at: String,
}

impl Provenance {
    /// Provenance for `tool`, started at `started` and finished now.
    pub fn new(tool: &str, started: std::time::SystemTime) -> Self {
        Provenance {
            tool: tool.to_string(),
            version: VERSION.to_string(),
            hostname: crate::time::hostname(),
            started_at: crate::time::rfc3339(started),
            finished_at: crate::time::rfc3339(std::time::SystemTime::now()),
        }
    }
}
