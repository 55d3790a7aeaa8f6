//! Which schedule a record measured (`sweep --schedule SERVER`): the
//! `schedule` record upstream or the config's `schedule` key, read once
//! here for the input reader and the schedule's row alike.

use serde_json::Value;
use sweepkit::records::upstream_of;

/// The config key a stage's own record of the schedule step carries
/// (`--pipeline-config schedule=SERVER`, sweep-plan schedule).
pub const KEY: &str = "schedule";

/// Which schedule a record measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub server: String,
    /// What the schedule sets (its flags and server config, as JSON), so
    /// that two different schedules of one server (sweeps run again into
    /// one file derive anew) are two rows; empty for a stage's own
    /// failure with no record upstream (it joins the server's latest).
    pub id: String,
    /// The deepest depth it may draft ([`deepest`]).
    pub deepest: Option<u32>,
}

/// The schedule `rec` measured: the `schedule` record upstream, else the
/// config's `schedule` key.
pub fn server_of(rec: &Value) -> Option<Tag> {
    if let Some(u) = rec.get("upstream").and_then(|u| upstream_of(u, "schedule")) {
        let id = ["flags", "adaptive_config", "speculative_config"]
            .map(|k| u.get(k).map_or_else(String::new, Value::to_string))
            .join(" ");
        let server = u.get("server").and_then(Value::as_str)?.to_string();
        let deepest = deepest(u);
        return Some(Tag {
            server,
            id,
            deepest,
        });
    }
    let c = rec.get("config")?.get(KEY)?;
    let server = c.as_str().map_or_else(|| c.to_string(), String::from);
    Some(Tag {
        server,
        id: String::new(),
        deepest: None,
    })
}

/// The deepest depth the `schedule` record `u` lets its server draft:
/// vLLM's `num_speculative_tokens`, SGLang's largest candidate.
pub fn deepest(u: &Value) -> Option<u32> {
    let vllm = u
        .get("speculative_config")
        .and_then(|c| c.get("num_speculative_tokens"))
        .and_then(Value::as_u64);
    let sglang = u
        .get("adaptive_config")
        .and_then(Value::as_object)
        .and_then(|slots| {
            slots
                .values()
                .filter_map(|s| s.get("candidate_steps")?.as_array())
                .flatten()
                .filter_map(Value::as_u64)
                .max()
        });
    vllm.or(sglang).map(|k| k.min(u32::MAX as u64) as u32)
}
