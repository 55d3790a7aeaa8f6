//! Workloads: what a bench record's level sent (`load.workload`: synthetic
//! prompts of a length, a prompts file, a trace by its digest, block size
//! and window). Two workloads are never pooled in one cell: results split
//! into one table (one pick) per workload, and `--by workload` adds the
//! best config per workload and level in one table (export/text.rs). The
//! best speculative depth depends on what is generated (issue 35's
//! figures), so a pick across workloads would answer no one's question.

use std::fmt::Write as _;

use serde_json::Value;

use crate::input::{Body, Obs};

/// The workload a bench record names, as one comparable label; records
/// from before `load.workload` are named from `load.prompts` and
/// `load.input_tokens`, which said the same. None when it names neither.
pub fn key_of(rec: &Value) -> Option<String> {
    let load = &rec["load"];
    let w = &load["workload"];
    let kind = w["kind"].as_str().or_else(|| {
        load["prompts"]
            .as_str()
            .map(|p| p.split(':').next().unwrap_or(p))
    })?;
    Some(named(load, w, kind))
}

/// The label of a workload of `kind`.
fn named(load: &Value, w: &Value, kind: &str) -> String {
    let mut key = kind.to_string();
    if kind == "synthetic" {
        if let Some(n) = load["input_tokens"].as_u64() {
            let _ = write!(key, " in={n}");
        }
        return key;
    }
    match (w["sha256"].as_str(), load["prompts"].as_str()) {
        (Some(d), _) => {
            let _ = write!(key, ":{}", &d[..d.len().min(12)]);
        }
        (None, Some(p)) => key = p.to_string(),
        (None, None) => {}
    }
    if let Some(b) = w["block_size"].as_u64() {
        let _ = write!(key, " block={b}");
    }
    if let Some(win) = w["window"].as_str().filter(|w| *w != "0s..") {
        let _ = write!(key, " window={win}");
    }
    key
}

/// What bench records that name no workload are called when they must
/// stand apart.
pub const UNNAMED: &str = "unnamed (records say nothing of their prompts)";

/// Split observations by workload, in first-seen order. Failure records
/// name no workload: each goes with every workload (a config that failed
/// stays failed in each table rather than look unmeasured). Bench records
/// that name none pool with the one named workload, else stand apart.
/// One workload: one part, named `None`.
pub fn partition(obs: Vec<Obs>) -> Vec<(Option<String>, Vec<Obs>)> {
    let mut parts: Vec<(String, Vec<Obs>)> = Vec::new();
    let mut failures = Vec::new();
    let mut unnamed = Vec::new();
    for o in obs {
        let Body::Bench(rec) = &o.body else {
            failures.push(o);
            continue;
        };
        let Some(key) = key_of(rec) else {
            unnamed.push(o);
            continue;
        };
        match parts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(o),
            None => parts.push((key, vec![o])),
        }
    }
    if parts.len() >= 2 && !unnamed.is_empty() {
        parts.push((UNNAMED.into(), unnamed));
    } else if let Some((_, v)) = parts.first_mut() {
        v.append(&mut unnamed);
    } else {
        parts.push((UNNAMED.into(), unnamed));
    }
    if parts.len() < 2 {
        let mut all: Vec<Obs> = parts.into_iter().flat_map(|(_, v)| v).collect();
        all.extend(failures);
        return vec![(None, all)];
    }
    parts
        .into_iter()
        .map(|(k, mut v)| {
            v.extend(failures.iter().cloned());
            (Some(k), v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_name_the_workload_and_old_records_keep_theirs() {
        let trace = json!({"load": {"prompts": "mooncake_trace:t.jsonl", "workload": {
            "kind": "mooncake_trace", "sha256": "0123456789abcdef", "block_size": 512,
            "window": "0s.."}}});
        let key = |v: &Value| key_of(v).unwrap();
        assert_eq!(key(&trace), "mooncake_trace:0123456789ab block=512");
        let win = json!({"load": {"workload": {"kind": "jsonl_trace", "sha256": "ff",
            "window": "10s..20s"}}});
        assert_eq!(key(&win), "jsonl_trace:ff window=10s..20s");
        let new_syn = json!({"load": {"prompts": "synthetic", "input_tokens": 128,
            "workload": {"kind": "synthetic", "requests": 40}}});
        let old_syn = json!({"load": {"prompts": "synthetic", "input_tokens": 128}});
        assert_eq!(key_of(&new_syn), key_of(&old_syn));
        assert_eq!(key(&old_syn), "synthetic in=128");
        let old_file = json!({"load": {"prompts": "jsonl:/x/p.jsonl"}});
        assert_eq!(key(&old_file), "jsonl:/x/p.jsonl");
        assert_eq!(key_of(&json!({"load": {"mode": "open"}})), None);
    }
}
