//! vLLM's dotted form of a JSON-valued flag (`--speculative-config.method
//! eagle`), read the way vllm/utils/argparse_utils.py
//! `FlexibleArgumentParser.parse_args` (vLLM 0.32.0+cpu wheel) reads it:
//! each value `json.loads`ed, else `human_readable_int` (`1k`, `2K`), else
//! the text; `FIELD+ a,b` a list of the comma-separated strings;
//! `create_nested_dict` + `recursive_dict_update` merge the fields of one
//! flag into one object (lists given twice concatenated, objects merged,
//! anything else replaced). Shared by llm-sim's `vllm` personality (which
//! parses like vLLM) and svc-swap (which folds dotted fields into a whole
//! JSON it sets, so vLLM does not drop that JSON).

use serde_json::{Map, Value};

/// The field path of a dotted flag name `--HEAD.PATH` (no value), when its
/// HEAD is `flag` (given without dashes): vLLM reads `_` as `-` in a
/// flag's name up to its first `.`.
pub fn field_path<'a>(name: &'a str, flag: &str) -> Option<&'a str> {
    let (head, path) = name.strip_prefix("--")?.split_once('.')?;
    (head.replace('_', "-") == flag).then_some(path)
}

/// One dotted value as vLLM reads it: `json.loads`, else a human-readable
/// integer, else the text.
pub fn parse_value(s: &str) -> Value {
    if let Ok(v) = serde_json::from_str(s) {
        return v;
    }
    human_int(s).map_or_else(|| Value::String(s.to_string()), Value::from)
}

/// `--flag.key+ a,b`: the comma-separated words as a JSON list of
/// strings (vLLM: `json.dumps(list(value_str.split(",")))`).
pub fn list_value(s: &str) -> Value {
    Value::Array(s.split(',').map(|w| Value::String(w.into())).collect())
}

/// The value of the dotted field `path` (after the flag's first `.`), its
/// `+` suffix included: the keys and the value to merge.
pub fn field(path: &str, value: &str) -> (Vec<String>, Value) {
    let (path, value) = match path.strip_suffix('+') {
        Some(p) => (p, list_value(value)),
        None => (path, parse_value(value)),
    };
    (path.split('.').map(String::from).collect(), value)
}

/// vLLM's `human_readable_int`: `1k` = 1000, `1K` = 1024 (no decimals
/// with a binary suffix).
fn human_int(s: &str) -> Option<i64> {
    let s = s.trim();
    if !s.is_ascii() {
        return None;
    }
    let (num, suffix) = s.split_at(s.len().checked_sub(1)?);
    let mult: f64 = match suffix {
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        "K" => 1024.0,
        "M" => 1024f64.powi(2),
        "G" => 1024f64.powi(3),
        "T" => 1024f64.powi(4),
        _ => return None,
    };
    if suffix.chars().all(char::is_uppercase) {
        return num.parse::<i64>().ok().map(|n| n * mult as i64);
    }
    num.parse::<f64>().ok().map(|n| (n * mult) as i64)
}

/// `recursive_dict_update(into, create_nested_dict(keys, value))`: lists
/// given twice are concatenated, objects merged, anything else replaced.
pub fn merge(into: &mut Map<String, Value>, keys: &[String], value: Value) {
    let Some((first, rest)) = keys.split_first() else {
        return;
    };
    if rest.is_empty() {
        match (into.get_mut(first), value) {
            (Some(Value::Array(old)), Value::Array(new)) => old.extend(new),
            (_, v) => {
                into.insert(first.clone(), v);
            }
        }
        return;
    }
    let slot = into
        .entry(first.clone())
        .or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let Value::Object(m) = slot {
        merge(m, rest, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_as_vllm_reads_them() {
        assert_eq!(parse_value("3"), json!(3));
        assert_eq!(parse_value("true"), json!(true));
        assert_eq!(parse_value("[[1,1,4]]"), json!([[1, 1, 4]]));
        assert_eq!(parse_value("eagle"), json!("eagle"));
        assert_eq!(parse_value("/m/draft"), json!("/m/draft"));
        assert_eq!(parse_value("1k"), json!(1000));
        assert_eq!(parse_value("2K"), json!(2048));
        assert_eq!(parse_value("1.5K"), json!("1.5K"));
        assert_eq!(
            field("l+", "a,b"),
            (vec!["l".to_string()], json!(["a", "b"]))
        );
    }

    #[test]
    fn merge_nests_concatenates_lists_and_replaces_the_rest() {
        let mut m = Map::new();
        let keys = |p: &str| p.split('.').map(String::from).collect::<Vec<_>>();
        merge(&mut m, &keys("a.b"), json!(1));
        merge(&mut m, &keys("a.c"), json!(2));
        merge(&mut m, &keys("l"), json!(["x"]));
        merge(&mut m, &keys("l"), json!(["y"]));
        merge(&mut m, &keys("a.b"), json!(3));
        assert_eq!(
            Value::Object(m),
            json!({"a": {"b": 3, "c": 2}, "l": ["x", "y"]})
        );
    }
}
