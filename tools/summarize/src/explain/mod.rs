//! What the server reported and measured, beside the client's numbers:
//! the capacity each config started with (limits.rs), a note per level
//! where a config lost beyond noise and the servers' figures differ
//! (levels.rs), whether a depth was KV-bound by the server's own figures
//! for the schedule's derivation (`kv_evidence`), the report's charts
//! (report.rs) and the words for the new metrics (names.rs).

pub mod levels;
pub mod limits;
pub mod measured;
pub mod names;

use serde_json::Value;

use crate::analysis::Analysis;

/// The table's server section.
#[derive(Debug, Clone, Default)]
pub struct Explained {
    /// One line per config with a reported capacity.
    pub capacity: Vec<String>,
    /// One line per lost (config, level) with differing server figures.
    pub notes: Vec<String>,
    /// Said once: configs whose records carry no server metrics, and the
    /// flag that would give them.
    pub absent: Option<String>,
}

impl Explained {
    pub fn is_empty(&self) -> bool {
        self.capacity.is_empty() && self.notes.is_empty() && self.absent.is_none()
    }
}

/// The server section of `a`.
pub fn of(a: &Analysis) -> Explained {
    Explained {
        capacity: (0..a.model.rows.len())
            .filter_map(|r| limits::line(a, r))
            .collect(),
        notes: levels::notes(a),
        absent: absent(a),
    }
}

/// Whether static depth row `deep` was KV-bound at level `c` where row
/// `drafted` was not, by the servers' own figures: Some((bound, words))
/// when both cells measured their KV cache, None otherwise (then the
/// schedule's rule falls back to client-side waits).
pub fn kv_evidence(a: &Analysis, deep: usize, drafted: usize, c: usize) -> Option<(bool, String)> {
    let (md, ms) = (measured::cell(a, deep, c)?, measured::cell(a, drafted, c)?);
    let bound = md.kv_bound()? && !ms.kv_bound()?;
    let (mine, theirs) = md.against(&ms);
    let words = format!(
        "{} at {}: {mine}; {}: {theirs}",
        a.model.rows[deep].label,
        a.model.levels[c].label(),
        a.model.rows[drafted].label
    );
    Some((bound, words))
}

/// The line for configs whose records (written by a loadgen that reads
/// server metrics: schema 2 on) carry none, with the flag each server
/// needs; None when every such record has them.
fn absent(a: &Analysis) -> Option<String> {
    let mut rows = Vec::new();
    let mut flag = None;
    for (r, row) in a.records.iter().enumerate() {
        let recs: Vec<&Value> = row.iter().flatten().collect();
        let newer = recs.iter().any(|v| {
            v.get("schema")
                .and_then(Value::as_u64)
                .is_some_and(|s| s >= 2)
        });
        if !newer || recs.iter().any(|v| v.get("server_metrics").is_some()) {
            continue;
        }
        rows.push(a.model.rows[r].label.clone());
        flag = flag.or_else(|| recs.first().map(|v| needs(v)));
    }
    (!rows.is_empty()).then(|| {
        format!(
            "no server metrics in the records of {}: {}",
            rows.join(", "),
            flag.unwrap_or("")
        )
    })
}

/// What a server needs to serve `/metrics`, by the record's `server`.
fn needs(rec: &Value) -> &'static str {
    let kind = rec.pointer("/server/kind").and_then(Value::as_str);
    let sglang_off = rec.pointer("/server/args/enable_metrics") == Some(&Value::Bool(false));
    match kind {
        _ if sglang_off || kind == Some("sglang") => {
            "SGLang serves /metrics only when started with --enable-metrics"
        }
        Some("llama.cpp") => "llama-server serves /metrics only when started with --metrics",
        Some("vllm") => "vLLM always serves /metrics: was loadgen run with --no-scrape?",
        _ => "SGLang needs --enable-metrics, llama-server --metrics (or loadgen ran with --no-scrape)",
    }
}
