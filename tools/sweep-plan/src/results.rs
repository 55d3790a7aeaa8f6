//! The results file as sweep-plan reads it: each line a typed view of a
//! sweepkit record (`sweepkit::records`), read by its fields, never by the
//! order serde wrote them in; a line that is not a record is skipped. Only
//! the fields a decision needs are read, so a record of a newer tool (a
//! new field, a new failure kind) is still placed.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::records::{Config, FailureClass};

/// The record of type `tag` in `rec`'s upstream chain (itself included):
/// each stage keeps the record it read as `upstream`.
pub fn upstream_of<'a>(rec: &'a Value, tag: &str) -> Option<&'a Value> {
    let mut cur = rec;
    loop {
        if cur.get("type").and_then(Value::as_str) == Some(tag) {
            return Some(cur);
        }
        cur = cur.get("upstream")?;
    }
}

/// The config key of the schedule step's records that no upstream record
/// reached (`--pipeline-config schedule=SERVER`).
pub const SCHEDULE_KEY: &str = "schedule";

/// One line of the results file.
#[derive(Debug, Clone, Deserialize)]
pub struct Line {
    /// The record's `type` tag.
    #[serde(rename = "type")]
    pub tag: String,
    /// Absent or not text-valued: not any config's record.
    #[serde(default, deserialize_with = "lenient")]
    pub config: Option<Config>,
    #[serde(default)]
    pub partial: bool,
    /// Failure records: the kind, as text (a newer tool may add kinds).
    #[serde(default, deserialize_with = "lenient")]
    pub kind: Option<String>,
    /// The whole record, for what reads deeper (cost, origin).
    #[serde(skip)]
    pub raw: Value,
    /// 1-based line number in the file.
    #[serde(skip)]
    pub line: usize,
}

/// A field that does not read as `T` reads as absent, rather than making
/// the whole line no record.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// Where a config stands after its last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// No record of it yet.
    Pending,
    /// Bench records, the last one whole.
    Complete,
    /// A failure of the config's own (crash, OOM, mismatch...): a result.
    Failed,
    /// Only a transient failure so far: run it again.
    Transport,
    /// Cut short by an interrupt, or stopped by the command's mistake
    /// (a `usage` failure): run it again.
    Incomplete,
}

impl State {
    /// Has a result: `--resume` skips it.
    pub fn is_done(self) -> bool {
        matches!(self, State::Complete | State::Failed)
    }

    /// Its name, as records and `--state` spell it.
    pub fn word(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value()
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }
}

impl Line {
    /// The class of a failure record (sweepkit's one reading of it).
    pub fn failure_class(&self) -> FailureClass {
        sweepkit::records::failure_class(&self.raw)
    }

    /// A record of `sweep --schedule`'s step: its upstream chain holds the
    /// `schedule` record svc-swap applied, or (a stage whose upstream died
    /// without a record) its config is the step's own
    /// `schedule=SERVER`. These are no grid point's, even where the
    /// schedule sets a swept key to a swept value.
    pub fn is_schedule(&self) -> bool {
        if self
            .config
            .as_ref()
            .is_some_and(|c| c.contains_key(SCHEDULE_KEY))
        {
            return true;
        }
        self.raw
            .get("upstream")
            .and_then(|u| upstream_of(u, "schedule"))
            .is_some()
    }

    /// The state this record gives its config (`None`: not a result line).
    pub fn state(&self) -> Option<State> {
        match self.tag.as_str() {
            "bench" if self.partial => Some(State::Incomplete),
            "bench" => Some(State::Complete),
            "failure" if self.kind.as_deref() == Some("interrupted") => Some(State::Incomplete),
            "failure" if self.failure_class() == FailureClass::Transport => Some(State::Transport),
            // The command's mistake (a wrong readiness path): no result.
            "failure" if self.failure_class() == FailureClass::Usage => Some(State::Incomplete),
            "failure" => Some(State::Failed),
            _ => None,
        }
    }
}

/// Append `text` (whole lines, as a tool printed them) to the file at
/// `path` in one write (sweepkit's `append_text`).
pub fn append(path: &str, text: &str) -> Result<(), Exit> {
    sweepkit::io::append_text(Path::new(path), text.as_bytes())
        .with_context(|| format!("{path}: cannot append"))
        .code(exit::FAILURE)
}

/// Append `recs` to the file at `path` (a results or a tally file), one
/// JSON line each, in one write (sweepkit's `append_json_lines`): O_APPEND
/// keeps lines whole beside other writers' (a pool's jobs). The text
/// written.
pub fn append_records<T: Serialize>(path: &str, recs: &[T]) -> Result<String, Exit> {
    sweepkit::io::append_json_lines(Path::new(path), recs)
        .with_context(|| format!("{path}: cannot append"))
        .code(exit::FAILURE)
}

/// Every record line of `text`, numbered from 1.
pub fn read(text: &str) -> Vec<Line> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let raw: Value = serde_json::from_str(l).ok()?;
            // sweep --validate-on's replay: no config's result.
            if raw.get(sweepkit::records::VALIDATION_FIELD).is_some() {
                return None;
            }
            let mut line: Line = serde_json::from_value(raw.clone()).ok()?;
            line.raw = raw;
            line.line = i + 1;
            Some(line)
        })
        .collect()
}

/// The state of the config `matches` picks out: its last record decides.
pub fn state_of(lines: &[Line], matches: impl Fn(&Config) -> bool) -> State {
    lines
        .iter()
        .filter(|l| !l.is_schedule() && l.config.as_ref().is_some_and(&matches))
        .filter_map(Line::state)
        .last()
        .unwrap_or(State::Pending)
}

/// How many records of type `tag` the config `matches` picks out has.
pub fn count(lines: &[Line], tag: &str, matches: impl Fn(&Config) -> bool) -> usize {
    lines
        .iter()
        .filter(|l| l.tag == tag && !l.is_schedule() && l.config.as_ref().is_some_and(&matches))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(v: &str) -> impl Fn(&Config) -> bool + '_ {
        move |c: &Config| c.get("k").map(String::as_str) == Some(v)
    }

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
            r#"{"type":"failure","config":{"k":"6"},"kind":"a_kind_of_tomorrow"}"#,
        ]
        .join("\n");
        let lines = read(&text);
        let got: Vec<State> = ["1", "2", "3", "4", "5", "6", "7"]
            .iter()
            .map(|v| state_of(&lines, k(v)))
            .collect();
        use State::*;
        assert_eq!(
            got,
            [Complete, Failed, Failed, Transport, Incomplete, Failed, Pending]
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
            r#"{"config":{"k":5}, "type" : "bench"}"#,
            "not json",
        ]
        .join("\n");
        let lines = read(&text);
        use State::*;
        let got: Vec<State> = ["1", "2", "3", "4", "5"]
            .iter()
            .map(|v| state_of(&lines, k(v)))
            .collect();
        assert_eq!(got, [Complete, Transport, Failed, Incomplete, Complete]);
        // A config with a number in it is no config of a sweep's.
        assert_eq!(count(&lines, "bench", |_| true), 3);
        assert_eq!(count(&lines, "failure", |_| true), 2);
        assert_eq!(lines.len(), 6);
        assert_eq!(lines[5].line, 6);
    }

    /// Regression (issue 15): a fleet job counted its config's bench
    /// records in the file's tail, where other hosts append theirs too.
    #[test]
    fn count_of_one_config_ignores_the_other_configs_records() {
        let text = [
            r#"{"type":"bench","config":{"a":"1","b":"x y"}}"#,
            r#"{"type":"bench","config":{"a":"2","b":"x y"}}"#,
            r#"{"type":"bench","config":{"a":"1","b":"z"}}"#,
            r#"{"type":"bench","config":{"a":"1","b":"x y"}}"#,
            r#"{"type":"failure","config":{"a":"1","b":"x y"}}"#,
        ]
        .join("\n");
        let lines = read(&text);
        let of = |c: &Config| {
            c.get("a").is_some_and(|v| v == "1") && c.get("b").is_some_and(|v| v == "x y")
        };
        assert_eq!(count(&lines, "bench", of), 2);
        assert_eq!(count(&lines, "failure", of), 1);
    }
}
