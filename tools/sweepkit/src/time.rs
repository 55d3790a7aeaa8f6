//! Timestamps and host names for provenance.

use std::time::SystemTime;

/// RFC 3339 UTC with milliseconds, e.g. `2026-11-30T05:01:02.345Z`.
pub fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

/// This machine's host name, when it can be read.
pub fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Parse a humantime duration (`90s`, `2m`, `250ms`) for clap value parsers.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(s)
        .map_err(|e| format!("invalid duration '{s}': {e} (e.g. 500ms, 10s, 2m)"))
}
