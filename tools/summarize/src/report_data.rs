//! What the HTML report reads from the raw records beyond the table:
//! every failure with its class, reason and log tail, the provenance
//! (hosts and hardware, server kind and version, launch commands, tool
//! versions, when), schedule records, and each config's timeline. Every
//! record is redacted (`sweepkit::redact::value`) as it is read, which
//! also teaches the redactor its secret values, so the final
//! `redact::text` over the page scrubs them wherever else they appear.

use std::collections::BTreeSet;

use serde_json::Value;
use sweepkit::redact;

use crate::group::Model;
use crate::metric::lookup;

/// A failure as the report lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub config: String,
    pub level: Option<String>,
    pub stage: String,
    pub kind: String,
    pub class: String,
    pub reason: String,
    pub exit_code: Option<i64>,
    pub log_tail: Vec<String>,
}

/// One row's timeline: medians of its starts and its total bench time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timeline {
    pub stop_s: Option<f64>,
    pub ready_s: Option<f64>,
    pub bench_s: f64,
}

/// Everything gathered.
#[derive(Debug, Clone, Default)]
pub struct Gathered {
    pub failures: Vec<Failure>,
    /// `name (hostname): fingerprint`, one per host.
    pub hosts: BTreeSet<String>,
    /// `kind version (model)`, one per server seen.
    pub servers: BTreeSet<String>,
    /// `tool version`, one per writer.
    pub tools: BTreeSet<String>,
    /// Per config label: its launch command as words (redacted).
    pub commands: Vec<(String, String)>,
    /// Schedule records: `server: flags`.
    pub schedules: Vec<String>,
    pub first: Option<String>,
    pub last: Option<String>,
    pub simulated: bool,
}

fn s(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(Value::as_str).map(String::from)
}

fn label(model: &Model, rec: &Value) -> String {
    match crate::startup::row_of(model, rec) {
        Some(r) => model.rows[r].label.clone(),
        None => {
            let cfg = rec.get("config").and_then(Value::as_object);
            let kv: Vec<String> = cfg
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("?")))
                .collect();
            if kv.is_empty() {
                "(no config)".into()
            } else {
                kv.join(" ")
            }
        }
    }
}

/// Read every record of `texts` (JSON Lines; other lines are skipped).
pub fn gather(model: &Model, texts: &[&str]) -> Gathered {
    let mut g = Gathered::default();
    for text in texts {
        for line in text.lines() {
            let Ok(mut rec) = serde_json::from_str::<Value>(line.trim()) else {
                continue;
            };
            redact::value(&mut rec);
            take(model, &rec, &mut g);
        }
    }
    g
}

fn take(model: &Model, rec: &Value, g: &mut Gathered) {
    let kind = rec.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(t) = s(rec, "/provenance/started_at") {
        if g.first.as_ref().is_none_or(|f| t < *f) {
            g.first = Some(t.clone());
        }
    }
    if let Some(t) = s(rec, "/provenance/finished_at") {
        if g.last.as_ref().is_none_or(|l| t > *l) {
            g.last = Some(t);
        }
    }
    if let (Some(tool), Some(v)) = (s(rec, "/provenance/tool"), s(rec, "/provenance/version")) {
        g.tools.insert(format!("{tool} {v}"));
    }
    if let Some(server) = rec.get("server").filter(|v| v.is_object()) {
        let kind = s(server, "/kind").unwrap_or_else(|| "unknown".into());
        let ver = s(server, "/version").unwrap_or_else(|| "version unknown".into());
        let model_name = s(server, "/model").map_or_else(String::new, |m| format!(" ({m})"));
        g.servers.insert(format!("{kind} {ver}{model_name}"));
        g.simulated |= server.get("simulated").and_then(Value::as_bool) == Some(true);
    }
    let host = rec
        .pointer("/server/host")
        .or_else(|| rec.get("host"))
        .filter(|h| h.is_object());
    if let Some(h) = host {
        let name = s(h, "/name").unwrap_or_else(|| "unknown".into());
        let hn = s(h, "/hostname").map_or_else(String::new, |x| format!(" ({x})"));
        let fp = s(h, "/fingerprint").unwrap_or_else(|| "unknown hardware".into());
        g.hosts.insert(format!("{name}{hn}: {fp}"));
    }
    match kind {
        "failure" => g.failures.push(failure(model, rec)),
        "swap" => {
            if let Some(words) = rec.get("exec_start").and_then(Value::as_array) {
                let cmd: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
                command(g, label(model, rec), cmd.join(" "));
            }
        }
        "bench" | "ready" => {
            if let Some(words) = rec.pointer("/server/argv").and_then(Value::as_array) {
                let cmd: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
                command(g, label(model, rec), cmd.join(" "));
            }
        }
        "schedule" => {
            let flags: Vec<&str> = rec
                .get("flags")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let server = s(rec, "/server").unwrap_or_default();
            g.schedules.push(format!("{server}: {}", flags.join(" ")));
        }
        _ => {}
    }
}

fn command(g: &mut Gathered, label: String, cmd: String) {
    if !cmd.is_empty() && !g.commands.iter().any(|(l, _)| *l == label) {
        g.commands.push((label, cmd));
    }
}

fn failure(model: &Model, rec: &Value) -> Failure {
    let text = |k: &str| s(rec, &format!("/{k}")).unwrap_or_else(|| "unknown".into());
    let kind = text("kind");
    let class = s(rec, "/class").unwrap_or_else(|| {
        // Older records: the kind's default class (records.rs).
        match kind.as_str() {
            "unreachable" | "host_dropped" | "upstream_missing" => "transport".into(),
            _ => "config".into(),
        }
    });
    Failure {
        config: label(model, rec),
        level: crate::level::Level::of_record(rec).map(|l| l.label()),
        stage: text("stage"),
        kind,
        class,
        reason: s(rec, "/reason").unwrap_or_default(),
        exit_code: rec.get("exit_code").and_then(Value::as_i64),
        log_tail: rec
            .get("log_tail")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
    }
}

/// Each row's timeline: stop and ready from `startup`, bench time the sum
/// of its bench records' `throughput.elapsed_s`.
pub fn timelines(
    model: &Model,
    records: &[Vec<Vec<Value>>],
    startup: &crate::startup::Startup,
) -> Vec<Timeline> {
    (0..model.rows.len())
        .map(|r| Timeline {
            stop_s: startup.stop_s.get(r).copied().flatten(),
            ready_s: startup.ready_s.get(r).copied().flatten(),
            bench_s: records[r]
                .iter()
                .flatten()
                .filter_map(|v| lookup(v, "throughput.elapsed_s"))
                .sum(),
        })
        .collect()
}
