//! Reading results: JSON Lines of records, or loadgen's CSV (dotted columns
//! read back with `sweepkit::flat::unflatten`). Bench and failure records
//! become observations; everything else is skipped with a note saying what
//! and why, with file and line. Only input that is not results at all (a
//! line that is not JSON, an object with no `type`, a CSV without a `type`
//! column) is an error.
//!
//! Records are read leniently from their JSON form rather than through the
//! strict serde structs, so records from older or newer tool versions with
//! missing or extra fields still count as far as they go: the fields read
//! here are typed once in `record_view::Head`, each absent when it is of
//! another type.

pub(crate) mod histogram;
pub(crate) mod host_id;
pub(crate) mod hosts;
pub(crate) mod level;
pub(crate) mod partial;
pub(crate) mod record_view;
pub(crate) mod schedule_plan;
pub(crate) mod schedule_tag;
pub(crate) mod workload;

use std::collections::BTreeMap;
use std::io::Write;

use serde_json::Value;
use sweepkit::io::InputError;
use sweepkit::records::{Config, FailureClass, SCHEMA_VERSION};
use sweepkit::redact;

use crate::input::level::Level;
use crate::input::record_view::Head;

/// Why a config could not be measured, as the failure record said.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureInfo {
    pub stage: String,
    pub kind: String,
    pub reason: String,
}

/// What a record contributes.
#[derive(Debug, Clone)]
pub enum Body {
    /// The whole bench record (metrics are looked up by path later).
    Bench(Value),
    Failure(FailureInfo),
}

/// One bench or failure record, located.
#[derive(Debug, Clone)]
pub struct Obs {
    pub source: String,
    pub line: usize,
    pub config: Config,
    /// `None` for a failure that stopped the whole config (no level).
    pub level: Option<Level>,
    pub body: Body,
    /// The record (or one it carries upstream) came from a simulated server.
    pub simulated: bool,
    /// A bench record of a level cut short (`"partial": true`).
    pub partial: bool,
    /// The host the record ran on, when it says (see `hosts`).
    pub host: Option<crate::input::host_id::HostId>,
    /// The validated schedule this measured (`sweep --schedule`;
    /// schedule/row.rs): its own row, never a static value.
    pub schedule: Option<crate::input::schedule_tag::Tag>,
}

impl Obs {
    pub fn at(&self) -> String {
        format!("{}: line {}", self.source, self.line)
    }
}

/// Everything read, plus the notes for stderr.
#[derive(Debug, Default)]
pub struct Input {
    pub obs: Vec<Obs>,
    pub notes: Vec<String>,
    /// `sweep --validate-on`'s replays (validation.rs): reported apart,
    /// never observations.
    pub validations: Vec<Value>,
}

/// Read one source (a file's whole text) into `input`. `Err` is an input
/// error (`FILE: line N: ...`, the core's one type for it), exit 3.
pub fn read_source(name: &str, text: &str, input: &mut Input) -> Result<(), InputError> {
    let first = text.lines().find(|l| !l.trim().is_empty());
    let Some(first) = first else {
        input
            .notes
            .push(format!("{name}: no records (empty input)"));
        return Ok(());
    };
    let is_csv = name.ends_with(".csv") || !first.trim_start().starts_with('{');
    let mut skipped: BTreeMap<String, usize> = BTreeMap::new();
    let mut newer_schema = None;
    let mut handle = |line: usize, rec: Value, input: &mut Input| {
        if let Some(s) = Head::of(&rec).schema.0 {
            if s > u64::from(SCHEMA_VERSION) && newer_schema.is_none() {
                newer_schema = Some((line, s));
            }
        }
        take_record(name, line, rec, input, &mut skipped);
    };
    if is_csv {
        read_csv(name, text, input, &mut handle)?;
    } else {
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let rec: Value =
                serde_json::from_str(raw).map_err(|e| bad(name, line, format!("not JSON: {e}")))?;
            if !rec.is_object() {
                return Err(bad(
                    name,
                    line,
                    "not a JSON object (expected sweepkit records)",
                ));
            }
            if Head::of(&rec).record_type().is_none() {
                return Err(bad(
                    name,
                    line,
                    "record has no \"type\" field: not a sweepkit results file",
                ));
            }
            handle(line, rec, input);
        }
    }
    if let Some((line, s)) = newer_schema {
        input.notes.push(format!(
            "{name}: line {line}: schema {s} is newer than this summarize \
             ({SCHEMA_VERSION}); reading the fields it knows"
        ));
    }
    for (what, n) in skipped {
        input.notes.push(format!(
            "{name}: skipped {n} {what} record{} (only bench and failure records are summarized)",
            if n == 1 { "" } else { "s" }
        ));
    }
    Ok(())
}

/// An input error at `name`, line `line`.
fn bad(name: &str, line: usize, message: impl Into<String>) -> InputError {
    InputError::Malformed {
        source_name: name.to_string(),
        line,
        message: message.into(),
    }
}

fn read_csv(
    name: &str,
    text: &str,
    input: &mut Input,
    handle: &mut impl FnMut(usize, Value, &mut Input),
) -> Result<(), InputError> {
    let mut rd = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut header: Vec<String> = rd
        .headers()
        .map_err(|e| bad(name, 1, format!("not CSV: {e}")))?
        .iter()
        .map(String::from)
        .collect();
    if !header.iter().any(|h| h == "type") {
        return Err(bad(
            name,
            1,
            "neither JSON Lines records nor a sweepkit CSV (no \"type\" column)",
        ));
    }
    for row in rd.records() {
        let row = row.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            bad(name, line, format!("bad CSV row: {e}"))
        })?;
        let line = row.position().map_or(0, |p| p.line() as usize);
        let cells: Vec<String> = row.iter().map(String::from).collect();
        if cells.iter().all(|c| c.trim().is_empty()) {
            continue;
        }
        // `loadgen -f csv >> results.csv` appends a header per run: a row
        // whose type cell reads "type" starts a new header.
        if cells.iter().any(|c| c == "type") && cells.iter().all(|c| !c.is_empty()) {
            header = cells;
            continue;
        }
        let mut rec = sweepkit::flat::unflatten(&header, &cells);
        // An empty config flattens to no columns at all: not a missing one.
        if let Some(obj) = rec.as_object_mut() {
            obj.entry("config")
                .or_insert_with(|| Value::Object(Default::default()));
        }
        if Head::of(&rec).record_type().is_none() {
            return Err(bad(name, line, "row has an empty \"type\" cell"));
        }
        handle(line, rec, input);
    }
    Ok(())
}

fn take_record(
    name: &str,
    line: usize,
    rec: Value,
    input: &mut Input,
    skipped: &mut BTreeMap<String, usize>,
) {
    if rec.get(sweepkit::records::VALIDATION_FIELD).is_some() {
        input.validations.push(rec);
        return;
    }
    let head = Head::of(&rec);
    let kind = head.record_type().unwrap_or("").to_string();
    let at = format!("{name}: line {line}");
    match kind.as_str() {
        "bench" | "failure" => {}
        // A sweep's bookkeeping (sweep(1)), not results: no note.
        "origin" | "skipped" => return,
        // Other tools' records (svc-swap's, wait-ready's, a summary).
        k if sweepkit::records::is_record_type(k) => {
            *skipped.entry(kind).or_default() += 1;
            return;
        }
        other => {
            input.notes.push(format!(
                "{at}: unknown record type \"{other}\" (from a newer tool?); ignored"
            ));
            return;
        }
    }
    let config = match rec.get("config") {
        Some(Value::Object(map)) => map
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| {
                let s = v.as_str().map_or_else(|| v.to_string(), String::from);
                (k.clone(), s)
            })
            .collect(),
        Some(_) => {
            input
                .notes
                .push(format!("{at}: \"config\" is not an object; ignored"));
            return;
        }
        None => {
            input.notes.push(format!(
                "{at}: {kind} record has no \"config\"; counted as an empty config"
            ));
            Config::new()
        }
    };
    let class = sweepkit::records::failure_class(&rec);
    if kind == "failure" && class != FailureClass::Config {
        // Transient (SSH lost, host unreachable) or the command's mistake
        // (a wrong readiness path): says nothing about the config, so it
        // is neither a data point nor a baseline.
        let what = match class {
            FailureClass::Usage => "the command's failure",
            _ if head.kind.0.as_deref() == Some("interrupted") => "an interruption",
            _ => "transport failure",
        };
        input.notes.push(format!(
            "{at}: {what} (not the config's own); not a result, ignored"
        ));
        return;
    }
    let simulated = any_simulated(&rec);
    let partial = kind == "bench" && head.partial.0 == Some(true);
    let level = Level::of_record(&rec);
    let host = crate::input::host_id::of_record(&rec);
    let schedule = crate::input::schedule_tag::server_of(&rec);
    let body = if kind == "bench" {
        if level.is_none() {
            input.notes.push(format!(
                "{at}: bench record has no load level (load.concurrency or \
                 load.rate_rps); ignored"
            ));
            return;
        }
        // Whether a partial record counts is decided once every file is
        // read (see `partial::resolve`): a complete one may come later.
        Body::Bench(rec)
    } else {
        let text = |f: Option<String>| f.unwrap_or_else(|| "unknown".into());
        Body::Failure(FailureInfo {
            stage: text(head.stage.0),
            kind: text(head.kind.0),
            reason: head.reason.0.unwrap_or_default(),
        })
    };
    input.obs.push(Obs {
        source: name.to_string(),
        line,
        config,
        level,
        body,
        simulated,
        partial,
        host,
        schedule,
    });
}

/// Drop the orphans: bench and failure records with no config when other
/// records have one. They cannot be placed in any row (an empty config
/// would read as "every parameter unset", i.e. a baseline "speculation off"
/// that was never measured); a stage whose upstream died without a record
/// wrote them (issue 21). One warning counts them per source. When no
/// record has a config (a standalone `loadgen`), they are the one config.
pub fn drop_unplaceable(input: &mut Input) {
    if input.obs.iter().all(|o| o.config.is_empty()) {
        return;
    }
    // Per source, in order: (bench, failure) counts and the lines.
    let mut orphans: Vec<(String, usize, usize, Vec<usize>)> = Vec::new();
    input.obs.retain(|o| {
        if !o.config.is_empty() {
            return true;
        }
        let i = match orphans.iter().position(|(s, ..)| *s == o.source) {
            Some(i) => i,
            None => {
                orphans.push((o.source.clone(), 0, 0, Vec::new()));
                orphans.len() - 1
            }
        };
        let entry = &mut orphans[i];
        match o.body {
            Body::Bench(_) => entry.1 += 1,
            Body::Failure(_) => entry.2 += 1,
        }
        entry.3.push(o.line);
        false
    });
    for (source, benches, failures, lines) in orphans {
        const SHOWN: usize = 8;
        let mut at: Vec<String> = lines.iter().take(SHOWN).map(usize::to_string).collect();
        if lines.len() > SHOWN {
            at.push("...".into());
        }
        input.notes.push(format!(
            "{source}: {} orphan record(s) with no config ({benches} bench, {failures} \
             failure; line {}): the config is unknown (a stage got no record from the one \
             before it, or ran standalone); not placed in any row",
            benches + failures,
            at.join(", ")
        ));
    }
}

/// True when the record or anything it carries (its `upstream` chain, its
/// `server`) says `"simulated": true`.
fn any_simulated(v: &Value) -> bool {
    match v {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| (k == "simulated" && v.as_bool() == Some(true)) || any_simulated(v)),
        Value::Array(items) => items.iter().any(any_simulated),
        _ => false,
    }
}

/// Notes about ignored input, capped so a huge file cannot flood stderr.
pub fn print_notes(stderr: &mut impl Write, notes: &[String]) {
    const CAP: usize = 20;
    for n in notes.iter().take(CAP) {
        let _ =
            sweepkit::diag::write_line(stderr, &format!("summarize: warning: {}", redact::text(n)));
    }
    if notes.len() > CAP {
        let _ = sweepkit::diag::write_line(
            stderr,
            &format!(
                "summarize: warning: ... and {} more like these",
                notes.len() - CAP
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(name: &str, text: &str) -> Result<Input, String> {
        let mut input = Input::default();
        read_source(name, text, &mut input)
            .map(|_| input)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bench_failure_and_skips() {
        let text = r#"{"type":"swap","config":{}}
{"type":"bench","config":{"k":"1"},"load":{"mode":"closed","concurrency":4},"server":{"simulated":true}}

{"type":"failure","config":{"k":2},"stage":"ready","kind":"oom","reason":"CUDA"}
{"type":"mystery"}
"#;
        let input = read("r.jsonl", text).unwrap();
        assert_eq!(input.obs.len(), 2);
        assert!(input.obs[0].simulated);
        assert_eq!(input.obs[1].config["k"], "2");
        assert_eq!(input.obs[1].line, 4);
        assert!(input
            .notes
            .iter()
            .any(|n| n.contains("line 5: unknown record type")));
        assert!(input
            .notes
            .iter()
            .any(|n| n.contains("skipped 1 swap record")));
    }

    #[test]
    fn transport_failures_and_configless_failures_are_not_results() {
        // The issue-12 file: an SSH outage left a transport failure and a
        // loadgen failure with `config: {}`; neither may become a row (the
        // empty one read as "unset", the baseline "speculation off").
        let text = r#"{"type":"origin","config":{"k":"1"}}
{"type":"bench","config":{"k":"1"},"load":{"mode":"closed","concurrency":4}}
{"type":"failure","config":{"k":"2"},"stage":"ready","kind":"unreachable","class":"transport","reason":"ssh"}
{"type":"failure","config":{},"stage":"bench","kind":"bench_failed","reason":"connect"}
{"type":"failure","config":{"k":"3"},"stage":"ready","kind":"oom","class":"config","reason":"CUDA"}
"#;
        let mut input = read("r.jsonl", text).unwrap();
        drop_unplaceable(&mut input);
        let keys: Vec<_> = input
            .obs
            .iter()
            .map(|o| o.config.get("k").cloned())
            .collect();
        assert_eq!(keys, [Some("1".into()), Some("3".into())]);
        assert!(input
            .notes
            .iter()
            .any(|n| n.contains("line 3: transport failure")));
        assert!(
            input
                .notes
                .iter()
                .any(|n| n
                    .contains("1 orphan record(s) with no config (0 bench, 1 failure; line 4)")),
            "{:?}",
            input.notes
        );
        assert!(
            !input.notes.iter().any(|n| n.contains("origin")),
            "{:?}",
            input.notes
        );
    }

    /// Issue 21: a killed svc-swap left loadgen without an upstream record;
    /// its bench records (`config: {}`) became the "unset (speculation
    /// off)" baseline row. They are orphans now, counted, in no row.
    #[test]
    fn configless_bench_records_are_orphans_not_a_config() {
        let text = r#"{"type":"bench","config":{"k":"1"},"load":{"mode":"closed","concurrency":1}}
{"type":"bench","config":{},"load":{"mode":"closed","concurrency":1}}
{"type":"bench","config":{},"load":{"mode":"closed","concurrency":4}}
{"type":"failure","config":{},"stage":"ready","kind":"config_mismatch","reason":"x"}
{"type":"bench","load":{"mode":"closed","concurrency":4}}
"#;
        let mut input = read("r.jsonl", text).unwrap();
        drop_unplaceable(&mut input);
        assert_eq!(input.obs.len(), 1);
        assert_eq!(input.obs[0].config["k"], "1");
        let orphan: Vec<_> = input
            .notes
            .iter()
            .filter(|n| n.contains("orphan"))
            .collect();
        assert_eq!(orphan.len(), 1, "{:?}", input.notes);
        assert!(
            orphan[0].contains(
                "4 orphan record(s) with no config (3 bench, 1 failure; line 2, 3, 4, 5)"
            ),
            "{}",
            orphan[0]
        );
        // A standalone loadgen run: every record config-less, one config.
        let alone =
            "{\"type\":\"bench\",\"config\":{},\"load\":{\"mode\":\"closed\",\"concurrency\":1}}\n";
        let mut input = read("l.jsonl", alone).unwrap();
        drop_unplaceable(&mut input);
        assert_eq!(input.obs.len(), 1);
    }

    #[test]
    fn malformed_and_wrong_kind_are_errors_with_line() {
        let e = read("r.jsonl", "{\"type\":\"bench\"}\n{oops\n").unwrap_err();
        assert!(e.starts_with("r.jsonl: line 2: not JSON"), "{e}");
        let e = read("pkg.json", "{\"name\":\"x\"}\n").unwrap_err();
        assert!(e.contains("line 1: record has no \"type\""), "{e}");
        let e = read("notes.txt", "hello world\n").unwrap_err();
        assert!(e.contains("line 1: neither JSON Lines"), "{e}");
    }

    #[test]
    fn csv_rows_are_read_back() {
        let text = "type,config.k,load.mode,load.concurrency,throughput.output_tok_per_s\n\
                    bench,3,closed,16,1596.5\n";
        let input = read("r.csv", text).unwrap();
        assert_eq!(input.obs.len(), 1);
        assert_eq!(input.obs[0].level, Some(Level::Concurrency(16)));
        assert_eq!(input.obs[0].line, 2);
        // Appended runs repeat the header, with other columns.
        let appended = format!("{text}type,load.concurrency,config.k\nbench,32,4\n");
        let input = read("r.csv", &appended).unwrap();
        assert_eq!(input.obs.len(), 2, "{:?}", input.notes);
        assert_eq!(input.obs[1].level, Some(Level::Concurrency(32)));
        assert_eq!(input.obs[1].config["k"], "4");
    }

    #[test]
    fn bench_without_level_is_noted_not_fatal() {
        let input = read("r.jsonl", "{\"type\":\"bench\",\"config\":{}}\n").unwrap();
        assert!(input.obs.is_empty());
        assert!(input.notes[0].contains("line 1: bench record has no load level"));
    }
}
