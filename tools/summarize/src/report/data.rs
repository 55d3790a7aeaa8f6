//! What the HTML report reads from the raw records beyond the table:
//! every failure with its class, reason and log tail, the provenance
//! (hosts and hardware, server kind and version, launch commands, tool
//! versions, when), schedule records, and each config's timeline. Every
//! record is redacted (`sweepkit::redact::value`) as it is read, which
//! also teaches the redactor its secret values, so the final
//! `redact::text` over the page scrubs them wherever else they appear.

use std::collections::BTreeSet;

use serde_json::Value;
use sweepkit::records::upstream_chain;
use sweepkit::redact;

use crate::analysis::group::Model;
use crate::analysis::Analysis;
use crate::input::record_view::{words, Head, Lenient};
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
    pub first: Option<String>,
    pub last: Option<String>,
    pub simulated: bool,
}

fn label(model: &Model, rec: &Value) -> String {
    match crate::views::startup::row_of(model, rec) {
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

/// Read every record of `texts` (JSON Lines; other lines are skipped) and
/// every record each carries upstream, once each: a sweep's results file
/// holds bench records whose swap and ready records (launch command, the
/// tools that wrote them) are only upstream.
pub fn gather(model: &Model, texts: &[&str]) -> Gathered {
    let mut g = Gathered::default();
    let mut seen = std::collections::HashSet::new();
    for text in texts {
        for line in text.lines() {
            let Ok(mut rec) = serde_json::from_str::<Value>(line.trim()) else {
                continue;
            };
            redact::value(&mut rec);
            let sched = crate::input::schedule_tag::server_of(&rec)
                .map(|t| format!("schedule ({})", t.server));
            // A record upstream without a config is the outer one's.
            let who = |r: &Value| {
                let r = if r.get("config").is_some() { r } else { &rec };
                sched.clone().unwrap_or_else(|| label(model, r))
            };
            // Deepest first: a swap's command line before a server's argv.
            let chain: Vec<&Value> = upstream_chain(&rec).skip(1).collect();
            for u in chain.into_iter().rev() {
                if seen.insert(u.to_string()) {
                    take_upstream(u, who(u), &mut g);
                }
            }
            take(model, &rec, who(&rec), &mut g);
        }
    }
    g
}

/// A record carried upstream: its provenance, server, host and launch
/// command (its failures are counted where they stand).
fn take_upstream(rec: &Value, who: String, g: &mut Gathered) {
    let head = Head::of(rec);
    common(&head, g);
    launch_command(&head, who, g);
}

fn take(model: &Model, rec: &Value, who: String, g: &mut Gathered) {
    let head = Head::of(rec);
    common(&head, g);
    match head.record_type().unwrap_or("") {
        "failure" => g.failures.push(failure(model, rec, &head)),
        _ => launch_command(&head, who, g),
    }
}

/// A swap's new command line, else the argv a server reported.
fn launch_command(head: &Head, who: String, g: &mut Gathered) {
    match head.record_type().unwrap_or("") {
        "swap" if head.exec_start.0.is_some() => {
            command(g, who, words(&head.exec_start).join(" "));
        }
        "bench" | "ready" => {
            if let Some(argv) = head
                .server_info()
                .map(|s| &s.argv)
                .filter(|a| a.0.is_some())
            {
                command(g, who, words(argv).join(" "));
            }
        }
        _ => {}
    }
}

/// Provenance, server and host: what every record may say.
fn common(head: &Head, g: &mut Gathered) {
    let prov = head.provenance.0.clone().unwrap_or_default();
    if let Some(t) = prov.started_at.0 {
        if g.first.as_ref().is_none_or(|f| t < *f) {
            g.first = Some(t.clone());
        }
    }
    if let Some(t) = prov.finished_at.0 {
        if g.last.as_ref().is_none_or(|l| t > *l) {
            g.last = Some(t);
        }
    }
    if let (Some(tool), Some(v)) = (prov.tool.0, prov.version.0) {
        g.tools.insert(format!("{tool} {v}"));
    }
    if let Some(server) = head.server_info() {
        let text = |f: &Lenient<String>, or: &str| f.0.clone().unwrap_or_else(|| or.into());
        let kind = text(&server.kind, "unknown");
        let ver = text(&server.version, "version unknown");
        let model_name = server
            .model
            .0
            .as_ref()
            .map_or_else(String::new, |m| format!(" ({m})"));
        // llm-sim reports its version as `llm-sim 0.1.0`: said once.
        let name = if ver.starts_with(&kind) {
            ver
        } else {
            format!("{kind} {ver}")
        };
        g.servers.insert(format!("{name}{model_name}"));
        g.simulated |= server.simulated.0 == Some(true);
    }
    if let Some(h) = head.host() {
        let name = h.name.0.clone().unwrap_or_else(|| "unknown".into());
        let hn = h
            .hostname
            .0
            .as_ref()
            .map_or_else(String::new, |x| format!(" ({x})"));
        let fp = h
            .fingerprint
            .0
            .clone()
            .unwrap_or_else(|| "unknown hardware".into());
        g.hosts.insert(format!("{name}{hn}: {fp}"));
    }
}

/// What every launch command shares, as one command line: each flag with
/// its value (or a word that is no flag) found in all of them, in the
/// first command's order. Empty when there are none.
pub fn common_words(commands: &[(String, String)]) -> Option<String> {
    let parts = |cmd: &str| -> Vec<String> {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let takes = words[i].starts_with("--")
                && !words[i].contains('=')
                && words.get(i + 1).is_some_and(|w| !w.starts_with("--"));
            let n = if takes { 2 } else { 1 };
            out.push(words[i..i + n].join(" "));
            i += n;
        }
        out
    };
    let (first, rest) = commands.split_first()?;
    let others: Vec<Vec<String>> = rest.iter().map(|(_, c)| parts(c)).collect();
    let shared: Vec<String> = parts(&first.1)
        .into_iter()
        .filter(|p| others.iter().all(|o| o.contains(p)))
        .collect();
    (!shared.is_empty()).then(|| shared.join(" "))
}

fn command(g: &mut Gathered, label: String, cmd: String) {
    if !cmd.is_empty() && !g.commands.iter().any(|(l, _)| *l == label) {
        g.commands.push((label, cmd));
    }
}

fn failure(model: &Model, rec: &Value, head: &Head) -> Failure {
    let text = |f: &Lenient<String>| f.0.clone().unwrap_or_else(|| "unknown".into());
    let kind = text(&head.kind);
    let class = head.class.0.clone().unwrap_or_else(|| {
        // Older records: the kind's default class (records/failure.rs).
        match kind.as_str() {
            "unreachable" | "host_dropped" | "upstream_missing" => "transport".into(),
            _ => "config".into(),
        }
    });
    Failure {
        config: label(model, rec),
        level: crate::input::level::Level::of_record(rec).map(|l| l.label()),
        stage: text(&head.stage),
        kind,
        class,
        reason: head.reason.0.clone().unwrap_or_default(),
        exit_code: head.exit_code.0,
        log_tail: words(&head.log_tail)
            .into_iter()
            .map(String::from)
            .collect(),
    }
}

/// Each row's timeline, labelled, then each schedule's: stop and ready
/// from `startup` (the schedule's from its records' upstream), bench time
/// the sum of its bench records' `throughput.elapsed_s`.
pub fn timelines(
    a: &Analysis,
    startup: &crate::views::startup::Startup,
) -> Vec<(String, Timeline)> {
    let bench = |cells: &mut dyn Iterator<Item = &Vec<Value>>| -> f64 {
        cells
            .flatten()
            .filter_map(|v| lookup(v, "throughput.elapsed_s"))
            .sum()
    };
    let mut out: Vec<(String, Timeline)> = (0..a.model.rows.len())
        .map(|r| {
            let t = Timeline {
                stop_s: startup.stop_s.get(r).copied().flatten(),
                ready_s: startup.ready_s.get(r).copied().flatten(),
                bench_s: bench(&mut a.records[r].iter()),
            };
            (a.model.rows[r].label.clone(), t)
        })
        .collect();
    for s in &a.schedule {
        let recs: Vec<&Value> = s.cells.iter().flat_map(|c| &c.records).collect();
        let (stop_s, ready_s) =
            crate::views::startup::medians(&crate::views::startup::schedule_starts(&recs));
        let t = Timeline {
            stop_s,
            ready_s,
            bench_s: bench(&mut s.cells.iter().map(|c| &c.records)),
        };
        out.push((s.label.clone(), t));
    }
    out
}
