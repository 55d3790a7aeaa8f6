//! `sweep-plan validation`: loadgen's records of sweep --validate-on's
//! replay, marked as such on their way to the results file (a
//! `validation` object), which keeps them out of every cell (summarize)
//! and every config's state (results.rs): they never change the pick.

use std::io::{BufRead, Write};

use serde_json::{json, Value};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::VALIDATION_FIELD;

use crate::out::Io;

/// Mark loadgen's records on stdin as sweep --validate-on's replay
/// (a `validation` object), for the results file: never one of the
/// sweep's results
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What was validated
    #[arg(long, value_parser = ["pick", "schedule"])]
    of: String,
    /// The trace replayed
    #[arg(long, value_name = "FILE")]
    trace: String,
    /// The objectives loadgen judged goodput by
    #[arg(long, value_name = "TERMS")]
    slo: Option<String>,
    /// The config replayed against (a JSON object), for records
    /// whose own `config` is empty (loadgen ran with no upstream)
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
}

/// Records streamed through, each flushed: not one answer.
pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let config = config_arg(a.config.as_deref())?;
    let to = Mark {
        of: &a.of,
        file: &a.trace,
        slo: a.slo.as_deref(),
        config,
    };
    mark(&mut *io.stdin, io.out.writer(), &to)?;
    Ok(())
}

/// What `sweep-plan validation` marks loadgen's records with.
struct Mark<'a> {
    /// "pick" or "schedule".
    pub of: &'a str,
    /// The trace replayed.
    pub file: &'a str,
    pub slo: Option<&'a str>,
    /// The config applied when the replay ran (the pick's `best_config`,
    /// or the schedule's `{"schedule": SERVER}`): loadgen ran with no
    /// upstream, so its records carry none of their own.
    pub config: Option<Value>,
}

/// `--config JSON`: an object, or a usage error naming it.
fn config_arg(text: Option<&str>) -> Result<Option<Value>, Exit> {
    let Some(t) = text else { return Ok(None) };
    match serde_json::from_str::<Value>(t) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        _ => Err(Exit::new(
            exit::USAGE,
            anyhow::anyhow!("--config: expected a JSON object, got {t}"),
        )),
    }
}

/// `sweep-plan validation`: each record loadgen wrote, marked as the
/// validation of `to.of` on `to.file` (and given `to.config` where its
/// own is empty), flushed per line.
fn mark(input: impl BufRead, out: &mut dyn Write, to: &Mark<'_>) -> std::io::Result<usize> {
    let mut n = 0;
    for line in input.lines() {
        let Ok(Value::Object(mut rec)) = serde_json::from_str::<Value>(&line?) else {
            continue; // loadgen writes records only; anything else is no result
        };
        rec.insert(
            VALIDATION_FIELD.into(),
            json!({"of": to.of, "trace": to.file, "slo": to.slo}),
        );
        let empty = rec
            .get("config")
            .and_then(Value::as_object)
            .is_none_or(|m| m.is_empty());
        if let (true, Some(c)) = (empty, &to.config) {
            rec.insert("config".into(), c.clone());
        }
        writeln!(out, "{}", Value::Object(rec))?;
        out.flush()?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results;

    #[test]
    fn marked_records_carry_the_validation_and_others_are_dropped() {
        let input = "{\"type\":\"bench\",\"config\":{\"k\":\"3\"}}\nnot a record\n{\"type\":\"bench\",\"config\":{}}\n";
        let mut out = Vec::new();
        let to = Mark {
            of: "pick",
            file: "t.jsonl",
            slo: None,
            config: Some(serde_json::json!({"k": "5"})),
        };
        let n = mark(input.as_bytes(), &mut out, &to).unwrap();
        assert_eq!(n, 2);
        let text = String::from_utf8(out).unwrap();
        let recs: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            recs[0]["validation"],
            serde_json::json!({"of": "pick", "trace": "t.jsonl", "slo": null})
        );
        // A record's own config stands; an empty one (loadgen with no
        // upstream) gets the config the replay ran against.
        assert_eq!(recs[0]["config"]["k"], "3");
        assert_eq!(recs[1]["config"]["k"], "5");
        // And the sweep's own reading of the file skips them.
        assert!(results::read(&text).is_empty());
    }
}
