//! What a sweep spent, read back from its results file: config starts
//! (restarts), requests sent and wall time, and what the full grid would
//! have cost at the same precision (every value started as often as the
//! pick was, each start costing the mean of the starts measured).

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

/// Spent and full-grid figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cost {
    pub restarts: usize,
    pub requests: u64,
    pub wall_s: f64,
    pub grid_restarts: usize,
    pub grid_requests: u64,
    pub grid_wall_s: f64,
}

impl Cost {
    /// `KEY=VALUE` words, for sweep(1)'s cost line.
    pub fn words(&self) -> String {
        format!(
            "restarts={} requests={} wall_s={:.1} grid_restarts={} grid_requests={} grid_wall_s={:.1}",
            self.restarts,
            self.requests,
            self.wall_s,
            self.grid_restarts,
            self.grid_requests,
            self.grid_wall_s
        )
    }
}

/// One config start: its requests and its first and last time stamps.
#[derive(Debug, Default)]
struct Start {
    requests: u64,
    first: Option<SystemTime>,
    last: Option<SystemTime>,
    benched: bool,
}

fn time(v: Option<&Value>) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(v?.as_str()?.trim_end_matches('Z')).ok()
}

/// The swap a record descends from: its `swap_id` (or the swap record's
/// start time for older records) and that swap's start time.
fn swap_of(rec: &Value) -> Option<(String, Option<SystemTime>)> {
    let mut cur = rec;
    loop {
        if let Some(id) = cur.get("swap_id").and_then(Value::as_str) {
            let t = (cur.get("type").and_then(Value::as_str) == Some("swap"))
                .then(|| time(cur.pointer("/provenance/started_at")))
                .flatten();
            return Some((id.to_string(), t));
        }
        if cur.get("type").and_then(Value::as_str) == Some("swap") {
            let t = cur.pointer("/provenance/started_at")?;
            return Some((t.as_str()?.to_string(), time(Some(t))));
        }
        cur = cur.get("upstream")?;
    }
}

/// Cost of the records of a sweep over `key` in `text`; the full grid has
/// `n_values` values, each started `runs` times.
pub fn cost(text: &str, key: &str, n_values: usize, runs: usize) -> Cost {
    let mut starts: BTreeMap<String, Start> = BTreeMap::new();
    for line in text.lines() {
        let Ok(rec) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let kind = rec.get("type").and_then(Value::as_str).unwrap_or("");
        if !matches!(kind, "bench" | "failure") || rec.pointer(&format!("/config/{key}")).is_none()
        {
            continue;
        }
        let Some((id, t0)) = swap_of(&rec) else {
            continue;
        };
        let s = starts.entry(id).or_default();
        s.first = match (s.first, t0) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let end = time(rec.pointer("/provenance/finished_at"));
        s.last = s.last.max(end);
        if kind == "bench" {
            s.benched = true;
            let n = |p: &str| rec.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            s.requests += n("/counts/completed") + n("/counts/failed") + n("/load/warmup_requests");
        }
    }
    let wall = |s: &Start| match (s.first, s.last) {
        (Some(a), Some(b)) => b.duration_since(a).map_or(0.0, |d| d.as_secs_f64()),
        _ => 0.0,
    };
    let mut c = Cost {
        restarts: starts.len(),
        ..Cost::default()
    };
    for s in starts.values() {
        c.requests += s.requests;
        c.wall_s += wall(s);
    }
    let benched: Vec<&Start> = starts.values().filter(|s| s.benched).collect();
    c.grid_restarts = n_values * runs.max(1);
    if !benched.is_empty() {
        let n = benched.len() as f64;
        let req: u64 = benched.iter().map(|s| s.requests).sum();
        let w: f64 = benched.iter().map(|s| wall(s)).sum();
        c.grid_requests = (req as f64 / n * c.grid_restarts as f64).round() as u64;
        c.grid_wall_s = w / n * c.grid_restarts as f64;
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_are_counted_by_swap_and_the_grid_by_the_mean_start() {
        let swap = |id: &str, t: &str| {
            format!(
                r#"{{"type":"ready","upstream":{{"type":"swap","swap_id":"{id}","provenance":{{"started_at":"{t}"}}}}}}"#
            )
        };
        let bench = |v: &str, id: &str, t0: &str, t1: &str| {
            format!(
                r#"{{"type":"bench","config":{{"k":"{v}"}},"provenance":{{"finished_at":"{t1}"}},"counts":{{"completed":10,"failed":1}},"load":{{"warmup_requests":1}},"upstream":{}}}"#,
                swap(id, t0)
            )
        };
        let text = [
            bench(
                "1",
                "a",
                "2026-01-01T00:00:00.000Z",
                "2026-01-01T00:00:05.000Z",
            ),
            bench(
                "1",
                "a",
                "2026-01-01T00:00:00.000Z",
                "2026-01-01T00:00:10.000Z",
            ),
            bench(
                "2",
                "b",
                "2026-01-01T00:01:00.000Z",
                "2026-01-01T00:01:20.000Z",
            ),
            r#"{"type":"failure","config":{"k":"3"},"swap_id":"c","kind":"oom"}"#.into(),
            r#"{"type":"bench","config":{"other":"1"}}"#.into(),
        ]
        .join("\n");
        let c = cost(&text, "k", 10, 1);
        assert_eq!(c.restarts, 3);
        assert_eq!(c.requests, 36);
        assert!((c.wall_s - 30.0).abs() < 1e-9, "{c:?}");
        assert_eq!(c.grid_restarts, 10);
        assert_eq!(c.grid_requests, 180);
        assert!((c.grid_wall_s - 150.0).abs() < 1e-9);
        assert!(c.words().starts_with("restarts=3 requests=36 wall_s=30.0 "));
    }
}
