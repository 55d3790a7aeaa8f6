//! The questions sweep(1) asks about a results file, answered in plain
//! text so the script never parses JSON (issue 16): each config's state
//! (`--config-states`), the original config to restore (`--origin`), the
//! origin record for a results file's first start (`--new-origin`), and how
//! many records of a type a stretch of the file holds (`--count`, of one
//! config with `--config`: a fleet's hosts append to one file). Records
//! are read by their fields, never by the order serde wrote them in.

use std::collections::BTreeMap;

use serde_json::Value;
use sweepkit::records::{
    is_record_type, Config, FailureClass, FailureKind, OriginRecord, Record, RECORD_TYPES,
    SCHEMA_VERSION,
};

/// Where a config stands after its last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Bench records, the last one whole.
    Complete,
    /// A failure of the config's own (crash, OOM, mismatch...): a result.
    Failed,
    /// Only a transient failure so far: run it again.
    Transport,
    /// Cut short by an interrupt: run it again.
    Incomplete,
}

impl State {
    fn word(self) -> &'static str {
        match self {
            State::Complete => "complete",
            State::Failed => "failed",
            State::Transport => "transport",
            State::Incomplete => "incomplete",
        }
    }
}

/// The state one bench or failure record gives its config.
fn state_of(rec: &Value) -> Option<State> {
    let s = |k: &str| rec.get(k).and_then(Value::as_str);
    match s("type")? {
        "bench" if rec.get("partial").and_then(Value::as_bool) == Some(true) => {
            Some(State::Incomplete)
        }
        "bench" => Some(State::Complete),
        "failure" => Some(match (s("kind"), failure_class(rec)) {
            (Some("interrupted"), _) => State::Incomplete,
            (_, FailureClass::Transport) => State::Transport,
            _ => State::Failed,
        }),
        _ => None,
    }
}

/// A failure record's class; records of older tools lack it: their kind's
/// default class.
pub fn failure_class(rec: &Value) -> FailureClass {
    if let Some(c) = rec
        .get("class")
        .and_then(|c| serde_json::from_value(c.clone()).ok())
    {
        return c;
    }
    rec.get("kind")
        .and_then(|k| serde_json::from_value::<FailureKind>(k.clone()).ok())
        .map_or(FailureClass::Config, FailureKind::default_class)
}

/// `STATE<TAB>KEY=VALUE...` per config, in order of first appearance; the
/// last record of a config decides its state. `keys` are the swept keys.
pub fn config_states(text: &str, keys: &[String]) -> String {
    let mut order: Vec<String> = Vec::new();
    let mut last: BTreeMap<String, State> = BTreeMap::new();
    for line in text.lines() {
        let Ok(rec) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let (Some(state), Some(cfg)) = (state_of(&rec), rec.get("config")) else {
            continue;
        };
        let mut words = Vec::new();
        for k in keys {
            match cfg.get(k).and_then(Value::as_str) {
                Some(v) => words.push(format!("{k}={v}")),
                None => break,
            }
        }
        if words.len() != keys.len() {
            continue; // not one of this sweep's configs
        }
        let key = words.join("\t");
        if last.insert(key.clone(), state).is_none() {
            order.push(key);
        }
    }
    order
        .iter()
        .map(|k| format!("{}\t{k}\n", last[k].word()))
        .collect()
}

/// clap's parser for `--count TYPE`: one of the record types.
pub fn parse_record_type(s: &str) -> Result<String, String> {
    if is_record_type(s) {
        return Ok(s.to_string());
    }
    let known: Vec<&str> = RECORD_TYPES.iter().map(|(t, _)| *t).collect();
    Err(format!(
        "unknown record type \"{s}\" (one of {})",
        known.join(", ")
    ))
}

/// How many lines of `text` are records of type `tag` (lines that are not
/// JSON objects are not records and are not counted).
pub fn count(text: &str, tag: &str, of: &[(String, String)]) -> usize {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("type").and_then(Value::as_str) == Some(tag))
        .filter(|v| {
            of.iter().all(|(k, want)| {
                v.pointer(&format!("/config/{k}")).and_then(Value::as_str) == Some(want)
            })
        })
        .count()
}

/// clap's parser for `--config KEY=V[,KEY=V]`: the config whose records
/// `--count` counts (keys as in records, leading dashes dropped; values
/// hold no comma, as in sweep's --values).
pub fn parse_config_filter(s: &str) -> Result<ConfigFilter, String> {
    let pairs = s
        .split(',')
        .map(sweepkit::upstream::parse_config_word)
        .collect::<Result<_, _>>()?;
    Ok(ConfigFilter(pairs))
}

/// `--config`'s KEY, VALUE pairs (a newtype: clap reads a bare Vec as a
/// repeated flag).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFilter(pub Vec<(String, String)>);

/// The restore arguments of the first origin record: `--set` and
/// `FLAG=VALUE`, or `--unset` and `FLAG`, one per line. Empty: none.
pub fn origin_args(text: &str) -> String {
    let Some(o) = text
        .lines()
        .find_map(|l| match serde_json::from_str::<Record>(l) {
            Ok(Record::Origin(o)) => Some(o),
            _ => None,
        })
    else {
        return String::new();
    };
    let mut out = String::new();
    for (flag, v) in &o.set {
        out.push_str(&format!("--set\n{flag}={v}\n"));
    }
    for flag in &o.unset {
        out.push_str(&format!("--unset\n{flag}\n"));
    }
    out
}

/// The origin record for a dry-run swap record: each changed flag's old
/// value is the original (`null`: the flag was absent).
pub fn new_origin(swap: &Value, started: std::time::SystemTime) -> Result<OriginRecord, String> {
    let rec: Record =
        serde_json::from_value(swap.clone()).map_err(|e| format!("not a record: {e}"))?;
    let Record::Swap(s) = rec else {
        return Err(format!(
            "expected a swap record, got a {} record",
            rec.kind()
        ));
    };
    if s.changes.is_empty() {
        return Err("the swap record lists no changes: nothing to restore".into());
    }
    let mut o = OriginRecord {
        schema: SCHEMA_VERSION,
        provenance: sweepkit::Provenance::new("summarize", started),
        target: s.target.clone(),
        upstream: Some(swap.clone()),
        config: Config::new(),
        ..OriginRecord::default()
    };
    for c in &s.changes {
        match &c.old {
            Some(v) => {
                o.set.insert(c.flag.clone(), v.clone());
                o.config
                    .insert(c.flag.trim_start_matches('-').into(), v.clone());
            }
            None => o.unset.push(c.flag.clone()),
        }
    }
    Ok(o)
}

/// The record of a host `sweep --hosts` stopped using: a failure with no
/// config (not any config's result) of class transport, whose upstream is
/// the host's origin record (`text`, may be empty), which names its target.
pub fn host_dropped(
    text: &str,
    reason: &str,
    started: std::time::SystemTime,
) -> Result<sweepkit::records::FailureRecord, String> {
    let upstream = match text.lines().find(|l| !l.trim().is_empty()) {
        None => None,
        Some(l) => match serde_json::from_str::<Record>(l) {
            Ok(Record::Origin(_)) => serde_json::from_str::<Value>(l).ok(),
            Ok(r) => {
                return Err(format!(
                    "expected an origin record, got a {} record",
                    r.kind()
                ))
            }
            Err(e) => return Err(format!("not a record: {e}")),
        },
    };
    Ok(sweepkit::records::failure(
        "summarize",
        started,
        Config::new(),
        sweepkit::records::Stage::Swap,
        FailureKind::HostDropped,
        reason,
        upstream,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_follow_the_last_record_and_transport_is_not_done() {
        let text = [
            r#"{"type":"origin","config":{}}"#,
            r#"{"type":"bench","config":{"k":"1"}}"#,
            r#"{"type":"failure","config":{"k":"2"},"kind":"unreachable","class":"transport"}"#,
            r#"{"type":"failure","config":{"k":"3"},"kind":"oom"}"#,
            r#"{"type":"failure","config":{"k":"4"},"kind":"unreachable"}"#,
            r#"{"type":"bench","config":{"k":"5"},"partial":true}"#,
            r#"{"type":"failure","config":{},"kind":"bench_failed"}"#,
            r#"{"type":"failure","config":{"k":"2"},"kind":"timeout","class":"config"}"#,
        ]
        .join("\n");
        let got = config_states(&text, &["k".into()]);
        assert_eq!(
            got,
            "complete\tk=1\nfailed\tk=2\nfailed\tk=3\ntransport\tk=4\nincomplete\tk=5\n"
        );
    }

    /// Regression (issue 16): sweep.sh once read records with regexes that
    /// assumed serde's field order. Fields in another order, a field no
    /// tool writes yet and a `"type"` that is not first change nothing.
    #[test]
    fn field_order_and_new_fields_do_not_matter() {
        let text = [
            r#"{"zz_new":{"a":1},"config":{"k":"1"},"partial":false,"type":"bench"}"#,
            r#"{"class":"transport","reason":"x","kind":"unreachable","config":{"k":"2"},"type":"failure","stage":"ready"}"#,
            r#"{"stage":"ready","kind":"oom","config":{"k":"3"},"type":"failure","new_field":[1,2]}"#,
            r#"{"partial":true,"config":{"k":"4"},"type":"bench"}"#,
            r#"{"config":{"k":"5"}, "type" : "bench"}"#,
            "not json",
        ]
        .join("\n");
        let got = config_states(&text, &["k".into()]);
        assert_eq!(
            got,
            "complete\tk=1\ntransport\tk=2\nfailed\tk=3\nincomplete\tk=4\ncomplete\tk=5\n"
        );
        assert_eq!(count(&text, "bench", &[]), 3);
        assert_eq!(count(&text, "failure", &[]), 2);
        assert_eq!(count(&text, "origin", &[]), 0);
        assert!(parse_record_type("bench").is_ok());
        assert!(parse_record_type("benches").unwrap_err().contains("origin"));
    }

    /// Regression (issue 15): a fleet job counted its config's bench
    /// records in the file's tail, where other hosts append theirs too.
    #[test]
    fn count_of_one_config_ignores_the_other_hosts_records() {
        let text = [
            r#"{"type":"bench","config":{"a":"1","b":"x y"}}"#,
            r#"{"type":"bench","config":{"a":"2","b":"x y"}}"#,
            r#"{"type":"bench","config":{"a":"1","b":"z"}}"#,
            r#"{"type":"bench","config":{"a":"1","b":"x y"}}"#,
            r#"{"type":"failure","config":{"a":"1","b":"x y"}}"#,
            r#"{"type":"bench","config":{"a":1,"b":"x y"}}"#,
        ]
        .join("\n");
        let of = parse_config_filter("--a=1,b=x y").unwrap().0;
        assert_eq!(of, [("a".into(), "1".into()), ("b".into(), "x y".into())]);
        assert_eq!(count(&text, "bench", &of), 2);
        assert_eq!(count(&text, "failure", &of), 1);
        assert_eq!(count(&text, "bench", &of[..1]), 3);
        assert_eq!(count(&text, "bench", &[]), 5);
        assert!(parse_config_filter("a=1,b").unwrap_err().contains("'b'"));
        assert!(parse_config_filter("=1").is_err());
        assert_eq!(parse_config_filter("a=").unwrap().0[0].1, "");
    }

    #[test]
    fn a_dropped_host_is_no_config_s_result() {
        let origin = r#"{"type":"origin","schema":1,"config":{"k":"1"},"provenance":{"tool":"summarize","version":"0","started_at":"x","finished_at":"x"},"target":{"manager":"systemd","unit":"sim","exec_prefix":"nsenter -t 7 -a"}}"#;
        let f = host_dropped(origin, "host h dropped", std::time::SystemTime::now()).unwrap();
        let v = serde_json::to_value(Record::Failure(f)).unwrap();
        assert_eq!(v["kind"], "host_dropped");
        assert_eq!(v["class"], "transport");
        assert_eq!(v["config"], serde_json::json!({}));
        assert_eq!(v["upstream"]["target"]["exec_prefix"], "nsenter -t 7 -a");
        let line = format!("{v}\n");
        assert_eq!(config_states(&line, &["k".into()]), "");
        assert!(host_dropped("", "r", std::time::SystemTime::now())
            .unwrap()
            .upstream
            .is_none());
        assert!(host_dropped(r#"{"type":"bench"}"#, "r", std::time::SystemTime::now()).is_err());
    }

    #[test]
    fn origin_from_a_dry_run_and_back() {
        let swap: Value = serde_json::from_str(
            r#"{"type":"swap","schema":1,"config":{"a":"4","b":"x"},
            "provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},
            "target":{"manager":"process","unit":"/s"},
            "changes":[{"flag":"--a","old":"2 3","new":"4"},{"flag":"--b","old":null,"new":"x"}],
            "exec_start":[],"stop":{"result":"","duration_s":0.0},
            "start":{"started_at":""},"method":"dry-run"}"#,
        )
        .unwrap();
        let o = new_origin(&swap, std::time::SystemTime::now()).unwrap();
        assert_eq!(o.config["a"], "2 3");
        let line = serde_json::to_string(&Record::Origin(o)).unwrap();
        assert!(line.starts_with(r#"{"type":"origin""#), "{line}");
        let text = format!("{line}\n{{\"type\":\"bench\"}}\n");
        assert_eq!(origin_args(&text), "--set\n--a=2 3\n--unset\n--b\n");
        assert_eq!(origin_args("{\"type\":\"bench\"}\n"), "");
        let e = new_origin(
            &serde_json::json!({"type": "bench"}),
            std::time::SystemTime::now(),
        );
        assert!(e.is_err());
    }
}
