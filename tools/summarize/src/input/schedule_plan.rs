//! The validated schedule as a person would apply it by hand: which depth
//! for which batch range (the `schedule` record its bench records carry
//! upstream), the flags that set it, and where its config file really is.
//! SGLang's `--speculative-adaptive-config` names a file that svc-swap
//! copied to a content-addressed far path (svc-swap(1) FILES, the swap
//! record's `files`), not the name `summarize --schedule` suggested, so
//! the path shown is the swap record's `far_path`.

use serde_json::Value;
use sweepkit::records::{upstream_chain, Record, ScheduleRecord};

/// SGLang's flag that names the adaptive config file.
const ADAPTIVE_FLAG: &str = "--speculative-adaptive-config";

/// One batch range of the schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    /// Inclusive batch sizes (requests scheduled in a step).
    pub from: u64,
    pub to: u64,
    /// Draft tokens (vLLM) or steps (SGLang); 0 is speculation off.
    pub k: u32,
    /// The level the depth was chosen at (`c=16`).
    pub level: String,
}

/// The schedule a row measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    pub ranges: Vec<Range>,
    /// The server's max batch (the last range's end) and where it came from.
    pub max_batch: u64,
    pub max_batch_source: String,
    /// The server flags that set it, as words.
    pub flags: Vec<String>,
    /// The config file's real path on the server (SGLang), and on the
    /// container's host when it ran in a container.
    pub file: Option<String>,
    pub file_on_host: Option<String>,
}

impl Plan {
    /// `1-3: 3, 4-15: 1, 16-48: 0` for one line of text.
    pub fn ranges_text(&self) -> String {
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|r| format!("batch {}: depth {}", range_text(r), r.k))
            .collect();
        parts.join(", ")
    }

    /// Where the config lives, for people: the real file, or the flag.
    pub fn where_text(&self) -> String {
        match (&self.file, &self.file_on_host) {
            (Some(f), Some(h)) => format!("{f} in the container ({h} on its host)"),
            (Some(f), None) => f.clone(),
            _ => "no file: the flags carry it".into(),
        }
    }
}

/// `4-15`, or `1` for a range of one batch size.
pub fn range_text(r: &Range) -> String {
    if r.from == r.to {
        r.from.to_string()
    } else {
        format!("{}-{}", r.from, r.to)
    }
}

/// The plan carried by the first of `records` (a schedule row's bench
/// records) that has a `schedule` record upstream.
pub fn of(records: &[&Value]) -> Option<Plan> {
    records.iter().find_map(|r| of_record(r))
}

fn of_record(rec: &Value) -> Option<Plan> {
    let up = || upstream_chain(rec).skip(1);
    let of_type = |r: &&Value, tag: &str| r.get("type").and_then(Value::as_str) == Some(tag);
    let s = up().filter(|r| of_type(r, "schedule")).find_map(typed)?;
    let file = up().filter(|r| of_type(r, "swap")).find_map(copied_file);
    let (file, file_on_host) = file.unwrap_or((None, None));
    // The flags as the server got them: the copied file, not the name
    // `summarize --schedule` suggested.
    let mut flags = s.flags.clone();
    if let (Some(f), Some(i)) = (&file, flags.iter().position(|w| w == ADAPTIVE_FLAG)) {
        if let Some(v) = flags.get_mut(i + 1) {
            v.clone_from(f);
        }
    }
    Some(Plan {
        ranges: s
            .per_level
            .iter()
            .map(|l| Range {
                from: l.batch_from,
                to: l.batch_to,
                k: l.k,
                level: l.level.clone(),
            })
            .collect(),
        max_batch: s.max_batch,
        max_batch_source: s.max_batch_source.clone(),
        flags,
        file,
        file_on_host,
    })
}

fn typed(u: &Value) -> Option<ScheduleRecord> {
    match serde_json::from_value::<Record>(u.clone()).ok()? {
        Record::Schedule(s) => Some(s),
        _ => None,
    }
}

/// The swap's copy of the adaptive config: (far path, host path).
fn copied_file(swap: &Value) -> Option<(Option<String>, Option<String>)> {
    let f = swap
        .get("files")?
        .as_array()?
        .iter()
        .find(|f| f.get("flag").and_then(Value::as_str) == Some(ADAPTIVE_FLAG))?;
    let text = |k: &str| f.get(k).and_then(Value::as_str).map(String::from);
    Some((text("far_path"), text("host_path")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schedule() -> Value {
        json!({"type": "schedule", "schema": 1, "metric": "throughput.output_tok_per_s",
            "per_level": [
                {"level": "c=1", "concurrency": 1, "batch_from": 1, "batch_to": 3, "k": 3,
                 "config": "speculative-num-steps=3", "score": 300.0, "close": [3],
                 "rival_k": null, "rival_score": null, "within_noise": false},
                {"level": "c=4", "concurrency": 4, "batch_from": 4, "batch_to": 48, "k": 1,
                 "config": "speculative-num-steps=1", "score": 900.0, "close": [1],
                 "rival_k": null, "rival_score": null, "within_noise": false}],
            "max_batch": 48, "max_batch_source": "SGLang's default", "replaces": [],
            "warnings": [], "simulated": true, "server": "sglang",
            "flags": ["--speculative-adaptive-config", "speculative-adaptive.json"],
            "adaptive_config": {"1": {"candidate_steps": [3]}, "4": {"candidate_steps": [1]}},
            "adaptive_config_file": "speculative-adaptive.json",
            "provenance": {"tool": "summarize", "version": "0", "started_at": "", "finished_at": ""}})
    }

    #[test]
    fn the_plan_names_the_copied_file_not_the_suggested_name() {
        let bench = json!({"type": "bench", "upstream": {"type": "ready", "upstream": {
            "type": "swap",
            "files": [{"flag": "--speculative-adaptive-config",
                       "local_path": "r.jsonl#adaptive_config",
                       "far_path": "/srv/s.spec.sweepkit-files/0123456789abcdef-speculative-adaptive.json",
                       "sha256": "00", "size": 2}],
            "upstream": schedule()}}});
        let p = of(&[&bench]).expect("a plan");
        assert_eq!(
            p.file.as_deref(),
            Some("/srv/s.spec.sweepkit-files/0123456789abcdef-speculative-adaptive.json")
        );
        assert_eq!(p.ranges_text(), "batch 1-3: depth 3, batch 4-48: depth 1");
        assert_eq!(p.max_batch, 48);
        assert_eq!(
            p.flags[1],
            p.file.clone().unwrap(),
            "the flag names the copy"
        );
    }

    #[test]
    fn no_schedule_upstream_is_no_plan() {
        assert_eq!(of(&[&json!({"type": "bench"})]), None);
    }
}
