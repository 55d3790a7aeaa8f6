//! `sweep --schedule SERVER`'s step after the grid: whether the schedule
//! is still to be derived, to be run, or done, and the words each tool
//! takes for it. The derived schedule record (`summarize --schedule`) is
//! appended to the results file, so a resumed sweep applies that same
//! schedule again instead of deriving another from a file that now holds
//! the schedule's own records; the step's records are those after it that
//! carry it (results.rs, `Line::is_schedule`).

use serde::Serialize;
use serde_json::Value;

use crate::results::{Line, State, SCHEDULE_KEY};

/// The step's answer.
#[derive(Debug, Serialize)]
pub struct Step {
    pub tag: &'static str,
    pub server: String,
    /// `derive` (no schedule record yet, or not --resume), `run` (derived,
    /// not yet measured to the end), `done`.
    pub action: &'static str,
    /// The schedule's records' state (from its last record).
    pub state: State,
    pub bench_records: usize,
    /// 1-based line of the schedule record in the file, 0: none.
    pub schedule_line: usize,
    /// wait-ready's words: the live server must run the schedule.
    pub expect: Vec<String>,
    /// wait-ready's and loadgen's words: a stage whose upstream died
    /// without a record records the schedule step's failure.
    pub stage: Vec<String>,
}

/// `--keep-winner`'s choice from summarize's `summary` record: the
/// schedule only when its records are whole (`state` complete) and
/// `details.schedule` has it winning (summarize's schedule_row.rs decides;
/// this only reads the verdict).
pub fn keep(summary: &Value, server: &str, state: State) -> &'static str {
    let wins = summary
        .pointer("/details/schedule")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|s| s.get("server").and_then(Value::as_str) == Some(server))
        // The latest schedule: the one --emit-record hands svc-swap.
        .filter(|s| s.get("current").and_then(Value::as_bool) != Some(false))
        .any(|s| s.get("wins").and_then(Value::as_bool) == Some(true));
    if wins && state == State::Complete {
        "schedule"
    } else {
        "static"
    }
}

/// The last schedule record for `server` in `lines`.
pub fn last_schedule<'a>(lines: &'a [Line], server: &str) -> Option<&'a Line> {
    lines.iter().rfind(|l| {
        l.tag == "schedule" && l.raw.get("server").and_then(Value::as_str) == Some(server)
    })
}

/// Write the last schedule record for `server` to `work`/schedule.json,
/// as svc-swap --apply-from reads it: its path and the record.
pub fn write_record<'a>(
    lines: &'a [Line],
    server: &str,
    work: &str,
) -> Result<(String, &'a Line), RecordError> {
    let rec = last_schedule(lines, server).ok_or_else(|| RecordError::None(server.into()))?;
    let file = format!("{work}/schedule.json");
    std::fs::write(&file, format!("{}\n", rec.raw)).map_err(|why| RecordError::Write {
        file: file.clone(),
        why,
    })?;
    Ok((file, rec))
}

/// Why the schedule record to apply could not be written out.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("no schedule record for {0}")]
    None(String),
    #[error("{file}: {why}")]
    Write { file: String, why: std::io::Error },
}

/// The flag's value word in a schedule record's `flags`.
fn flag_value<'a>(flags: &'a [Value], flag: &str) -> Option<&'a str> {
    let i = flags.iter().position(|w| w.as_str() == Some(flag))?;
    flags.get(i + 1).and_then(Value::as_str)
}

/// wait-ready's `--expect-config` words for a schedule record: vLLM's
/// parsed ranges (`speculative-config.num_speculative_tokens_per_batch_size`,
/// the key wait-ready reads from the live `--speculative-config`); SGLang's
/// `speculative_adaptive` on and the steps it starts with (the far file's
/// checksum is checked from the swap record's `files`).
pub fn expect_words(rec: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let flags = rec
        .get("flags")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut push = |kv: String| out.extend(["--expect-config".to_string(), kv]);
    match rec.get("server").and_then(Value::as_str) {
        Some("vllm") => {
            if let Some(r) = rec
                .get("speculative_config")
                .and_then(|c| c.get("num_speculative_tokens_per_batch_size"))
            {
                push(format!(
                    "speculative-config.num_speculative_tokens_per_batch_size={r}"
                ));
            }
        }
        Some("sglang") => {
            push("speculative-adaptive=true".into());
            if let Some(n) = flag_value(&flags, "--speculative-num-steps") {
                push(format!("speculative-num-steps={n}"));
            }
        }
        _ => {}
    }
    out
}

/// The step's answer for `server` from the results file's `lines`.
/// Without `resume` a schedule is always derived anew.
pub fn step(lines: &[Line], server: &str, resume: bool) -> Step {
    let sched = last_schedule(lines, server);
    let line = sched.map_or(0, |l| l.line);
    let mine: Vec<&Line> = lines
        .iter()
        .filter(|l| l.line > line && l.is_schedule())
        .collect();
    let state = mine
        .iter()
        .filter_map(|l| l.state())
        .next_back()
        .unwrap_or(State::Pending);
    let bench_records = mine.iter().filter(|l| l.tag == "bench").count();
    let action = match sched {
        None => "derive",
        Some(_) if !resume => "derive",
        Some(_) if state.is_done() => "done",
        Some(_) => "run",
    };
    Step {
        tag: "schedule_step",
        server: server.to_string(),
        action,
        state,
        bench_records,
        schedule_line: line,
        expect: sched.map(|l| expect_words(&l.raw)).unwrap_or_default(),
        stage: vec![
            "--pipeline-config".into(),
            format!("{SCHEDULE_KEY}={server}"),
        ],
    }
}

/// svc-swap's words that undo the schedule step's changes to flags outside
/// the grid (`keys`; the origin record restores those): each flag the
/// first swap of the step (after the schedule record) changed goes back to
/// its old value, or is removed where it had none.
pub fn restore_words(lines: &[Line], server: &str, keys: &[String]) -> Vec<String> {
    let Some(line) = last_schedule(lines, server).map(|l| l.line) else {
        return Vec::new();
    };
    let swap = lines
        .iter()
        .filter(|l| l.line > line && l.is_schedule())
        .find_map(|l| {
            let mut v = Some(&l.raw);
            while let Some(r) = v {
                if r.get("type").and_then(Value::as_str) == Some("swap") {
                    return Some(r);
                }
                v = r.get("upstream");
            }
            None
        });
    let mut out = Vec::new();
    let changes = swap
        .and_then(|s| s.get("changes"))
        .and_then(Value::as_array);
    for c in changes.into_iter().flatten() {
        let Some(flag) = c.get("flag").and_then(Value::as_str) else {
            continue;
        };
        let swept = keys
            .iter()
            .flat_map(|k| k.split(','))
            .any(|k| k.trim_start_matches('-') == flag.trim_start_matches('-'));
        if swept {
            continue;
        }
        match c.get("old").and_then(Value::as_str) {
            Some(old) => out.extend(["--set".to_string(), format!("{flag}={old}")]),
            None => out.extend(["--unset".to_string(), flag.to_string()]),
        }
    }
    out
}

/// What the step left after `since` lines (one run of it).
pub fn since(lines: &[Line], since: usize) -> (State, usize) {
    let mine: Vec<&Line> = lines
        .iter()
        .filter(|l| l.line > since && l.is_schedule())
        .collect();
    let state = mine
        .iter()
        .filter_map(|l| l.state())
        .next_back()
        .unwrap_or(State::Pending);
    (state, mine.iter().filter(|l| l.tag == "bench").count())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results;

    const SG: &str = r#"{"type":"schedule","server":"sglang","flags":["--speculative-eagle-topk","1","--speculative-num-steps","5","--speculative-adaptive"]}"#;

    fn bench(steps: &str, partial: bool, sched: bool) -> String {
        let up = if sched {
            format!(
                r#","upstream":{{"type":"ready","upstream":{{"type":"swap","upstream":{SG}}}}}"#
            )
        } else {
            String::new()
        };
        format!(
            r#"{{"type":"bench","config":{{"speculative-num-steps":"{steps}"}},"partial":{partial}{up}}}"#
        )
    }

    #[test]
    fn the_step_is_derived_run_again_when_cut_and_done_once_measured() {
        let grid = [bench("4", false, false), bench("5", false, false)].join("\n");
        let s = step(&results::read(&grid), "sglang", true);
        assert_eq!(s.action, "derive");
        let cut = [grid.clone(), SG.into(), bench("5", true, true)].join("\n");
        let lines = results::read(&cut);
        let s = step(&lines, "sglang", true);
        assert_eq!((s.action, s.state), ("run", State::Incomplete));
        assert_eq!(s.schedule_line, 3);
        assert_eq!(
            s.expect,
            [
                "--expect-config",
                "speculative-adaptive=true",
                "--expect-config",
                "speculative-num-steps=5"
            ]
        );
        // The schedule's steps=5 records are not the grid's steps=5.
        let p = |c: &sweepkit::records::Config| c.get("speculative-num-steps").unwrap() == "5";
        assert_eq!(results::state_of(&lines, p), State::Complete);
        assert_eq!(step(&lines, "sglang", false).action, "derive");
        let done = [cut, bench("5", false, true)].join("\n");
        let s = step(&results::read(&done), "sglang", true);
        assert_eq!((s.action, s.bench_records), ("done", 2));
        assert_eq!(step(&results::read(&done), "vllm", true).action, "derive");
    }

    #[test]
    fn the_schedule_is_kept_only_when_it_wins_and_was_measured_whole() {
        let sum = |wins: bool| -> Value {
            serde_json::json!({"type": "summary", "details": {"schedule": [
                {"server": "vllm", "wins": !wins}, {"server": "sglang", "wins": wins}]}})
        };
        assert_eq!(keep(&sum(true), "sglang", State::Complete), "schedule");
        assert_eq!(keep(&sum(false), "sglang", State::Complete), "static");
        assert_eq!(keep(&sum(true), "sglang", State::Incomplete), "static");
        assert_eq!(keep(&sum(true), "sglang", State::Failed), "static");
        assert_eq!(keep(&sum(false), "vllm", State::Complete), "schedule");
        let old = serde_json::json!({"details": {"schedule": [
            {"server": "sglang", "wins": true, "current": false},
            {"server": "sglang", "wins": false, "current": true}]}});
        assert_eq!(keep(&old, "sglang", State::Complete), "static");
        let none = serde_json::json!({"type": "summary", "details": {}});
        assert_eq!(keep(&none, "sglang", State::Complete), "static");
    }

    #[test]
    fn a_failure_with_no_upstream_is_the_steps_by_its_config() {
        let text = [
            SG.to_string(),
            r#"{"type":"failure","config":{"schedule":"sglang"},"kind":"crashed_at_load"}"#.into(),
        ]
        .join("\n");
        let s = step(&results::read(&text), "sglang", true);
        assert_eq!((s.action, s.state), ("done", State::Failed));
    }

    #[test]
    fn vllm_expects_its_ranges_in_the_live_speculative_config() {
        let rec: Value = serde_json::from_str(
            r#"{"type":"schedule","server":"vllm","speculative_config":{"method":"ngram","num_speculative_tokens_per_batch_size":[[1,3,5],[4,256,2]]}}"#,
        )
        .unwrap();
        assert_eq!(
            expect_words(&rec),
            [
                "--expect-config",
                "speculative-config.num_speculative_tokens_per_batch_size=[[1,3,5],[4,256,2]]"
            ]
        );
    }
}
