//! CSV for records: one generic flattening of a record's JSON form into
//! dotted column names (`ttft_ms.p99`, `config.speculative-num-steps`), so
//! no tool writes CSV headers or rows by hand, and `unflatten` reads them back.

use std::io::Write;

use serde_json::{Map, Value};

/// Flatten nested objects into dotted keys. Arrays become JSON text; the
/// `upstream` record is left out (CSV is for people and spreadsheets).
pub fn flatten(value: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // CSV is a record written out too: no secret in it (see `redact`).
    walk("", &crate::redact::redacted(value.clone()), &mut out);
    out
}

fn walk(prefix: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if prefix.is_empty() && k == "upstream" {
                    continue;
                }
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                walk(&key, v, out);
            }
        }
        Value::Null => out.push((prefix.to_string(), String::new())),
        Value::String(s) => out.push((prefix.to_string(), s.clone())),
        Value::Array(_) => out.push((prefix.to_string(), value.to_string())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}

/// Write records as CSV with a header from the union of their columns, in
/// first-seen order.
pub fn write_csv<W: Write>(w: W, records: &[Value]) -> csv::Result<()> {
    let rows: Vec<Vec<(String, String)>> = records.iter().map(flatten).collect();
    let mut header: Vec<String> = Vec::new();
    for row in &rows {
        for (k, _) in row {
            if !header.contains(k) {
                header.push(k.clone());
            }
        }
    }
    let mut wr = csv::Writer::from_writer(w);
    wr.write_record(&header)?;
    for row in rows {
        let cells = header.iter().map(|h| {
            row.iter()
                .find(|(k, _)| k == h)
                .map(|(_, v)| v.as_str())
                .unwrap_or("")
        });
        wr.write_record(cells)?;
    }
    wr.flush()?;
    Ok(())
}

/// Rebuild a nested JSON object from dotted CSV columns. Cells that parse as
/// JSON numbers, booleans or arrays become those; empty cells are left out.
/// Keys under `config.` always stay strings.
pub fn unflatten(header: &[String], cells: &[String]) -> Value {
    let mut root = Map::new();
    for (key, cell) in header.iter().zip(cells) {
        if cell.is_empty() {
            continue;
        }
        let value = if key.starts_with("config.") {
            Value::String(cell.clone())
        } else {
            match serde_json::from_str::<Value>(cell) {
                Ok(v @ (Value::Number(_) | Value::Bool(_) | Value::Array(_))) => v,
                _ => Value::String(cell.clone()),
            }
        };
        insert(&mut root, key, value);
    }
    Value::Object(root)
}

fn insert(map: &mut Map<String, Value>, key: &str, value: Value) {
    match key.split_once('.') {
        None => {
            map.insert(key.to_string(), value);
        }
        Some((head, rest)) => {
            let child = map
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = child {
                insert(m, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_through_csv() {
        let rec = json!({"type": "bench", "config": {"speculative-num-steps": "4"},
            "ttft_ms": {"p50": 1.5, "p99": 3.0}, "warnings": ["a"], "upstream": {"x": 1}});
        let mut buf = Vec::new();
        write_csv(&mut buf, std::slice::from_ref(&rec)).unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.starts_with("type,config.speculative-num-steps,ttft_ms.p50,ttft_ms.p99"));
        assert!(!text.contains("upstream"));
        let mut rd = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> = rd.headers().unwrap().iter().map(String::from).collect();
        let row: Vec<String> = rd
            .records()
            .next()
            .unwrap()
            .unwrap()
            .iter()
            .map(String::from)
            .collect();
        let back = unflatten(&header, &row);
        assert_eq!(back["config"]["speculative-num-steps"], json!("4"));
        assert_eq!(back["ttft_ms"]["p99"], json!(3.0));
        assert_eq!(back["warnings"], json!(["a"]));
    }
}
