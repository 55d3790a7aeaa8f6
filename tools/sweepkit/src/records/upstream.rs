//! Walking a record's `upstream` chain: each stage keeps the record it
//! read from stdin whole in `upstream` (svc-swap's swap record inside
//! wait-ready's ready record inside loadgen's bench record), so what an
//! earlier stage said is found by walking down, once, here.

use serde_json::Value;

/// `rec` and every record it carries upstream, nearest first.
pub fn upstream_chain(rec: &Value) -> impl Iterator<Item = &Value> {
    std::iter::successors(Some(rec), |r| r.get("upstream"))
}

/// The first record of type `tag` in `rec`'s upstream chain, `rec`
/// itself included.
pub fn upstream_of<'a>(rec: &'a Value, tag: &str) -> Option<&'a Value> {
    upstream_chain(rec).find(|r| r.get("type").and_then(Value::as_str) == Some(tag))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_chain_runs_from_the_record_down_to_the_first_stage() {
        let bench = json!({"type": "bench", "upstream": {"type": "ready",
            "upstream": {"type": "swap", "n": 1, "upstream": {"type": "swap", "n": 2}}}});
        let types: Vec<&str> = upstream_chain(&bench)
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["bench", "ready", "swap", "swap"]);
        assert_eq!(upstream_of(&bench, "swap").unwrap()["n"], 1, "the nearest");
        assert_eq!(
            upstream_of(&bench, "bench"),
            Some(&bench),
            "itself included"
        );
        assert_eq!(upstream_of(&bench, "schedule"), None);
        assert_eq!(upstream_chain(&json!({"type": "swap"})).count(), 1);
    }
}
