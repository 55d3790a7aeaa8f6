//! The end's swaps: --keep-winner's winner (the schedule or summarize's
//! pick), the original config and its retries after a transport failure,
//! and `done` with the exit status the sweep documents.

use serde::Serialize;
use sweepkit::exit;

use crate::results::Line;
use crate::schedule::{self, RecordError};

/// The swaps of the end, as `--after` names the one that ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Swap {
    /// --keep-winner's: the schedule or summarize's pick.
    Winner,
    /// The original config.
    Original,
    /// --validate-on's: the pick applied to be validated.
    PickToValidate,
    /// --validate-on's: the trace replayed against the pick.
    ValidatedPick,
    /// --validate-on's: the schedule applied to be validated.
    ScheduleToValidate,
    /// --validate-on's: the trace replayed against the schedule.
    ValidatedSchedule,
}

/// One answer of `end`.
#[derive(Debug, Default, PartialEq, Serialize)]
pub struct End {
    #[serde(rename = "type")]
    pub tag: &'static str,
    /// `swap` (run svc-swap with `to_swap`, wait-ready with `to_ready`)
    /// or `done`.
    pub action: &'static str,
    /// A warning to print first (the winner was not applied).
    pub warning: String,
    /// A line to say before the pause (a transport failure's retry).
    pub note: String,
    /// Seconds to wait before the swap.
    pub pause_s: u64,
    /// The line to say as the swap starts.
    pub line: String,
    pub to_swap: Vec<String>,
    pub to_ready: Vec<String>,
    /// With `validate`: loadgen's words, and `sweep-plan validation`'s
    /// (the records it marks go to the results file).
    pub to_load: Vec<String>,
    pub mark: Vec<String>,
    /// The words to ask again with, after the swap (`--after ...`).
    pub again: Vec<String>,
    /// With `done`: the error to print, and sweep's exit status (0 or 42).
    pub error: String,
    pub exit: u8,
}

/// What `--validate-on` hands `sweep-plan end`.
#[derive(Debug, Clone, Default)]
pub struct Validate {
    pub file: String,
    pub slo: Option<String>,
    /// loadgen's words for the replay (`--url ...`, the sweep's own load
    /// words without those that shape its levels).
    pub load: Vec<String>,
}

/// What `end` reads to decide.
pub struct Inputs<'a> {
    pub lines: &'a [Line],
    /// svc-swap's words that put the original back.
    pub original: Vec<String>,
    /// `--schedule`'s server.
    pub schedule: Option<&'a str>,
    /// summarize's summary (its path, its parsed record), when the end
    /// needs it (--keep-winner, --validate-on).
    pub winner: Option<(&'a str, serde_json::Value)>,
    /// --keep-winner: the winner stays applied.
    pub keep_winner: bool,
    /// --validate-on: replay a trace against the pick (and schedule).
    pub validate: Option<Validate>,
    pub summarize_exit: u8,
    pub retries: usize,
    /// Where the schedule record to apply is written.
    pub work: &'a str,
    /// The swept keys (the origin record restores those).
    pub keys: &'a [String],
    /// The sweep was interrupted: bound the restore's wait.
    pub interrupted: bool,
}

/// With no time to ready measured yet, the restore after an interrupt
/// waits this long.
const UNMEASURED_BOUND_S: u64 = 60;

/// The restore's wait after an interrupt, in seconds: twice the first
/// time to ready the results file measured (a ready record up some
/// record's upstream chain), plus 30 s for the restart itself; 60 s when
/// none was measured. Also that first time, for the note.
pub fn bound_s(lines: &[Line]) -> (u64, Option<f64>) {
    let first = lines.iter().find_map(|l| {
        let mut cur = Some(&l.raw);
        while let Some(r) = cur.filter(|r| r.is_object()) {
            if r["type"] == "ready" && r["outcome"] == "ready" {
                return r["time_to_ready_s"].as_f64();
            }
            cur = r.get("upstream");
        }
        None
    });
    let s = first.map_or(UNMEASURED_BOUND_S, |t| (t * 2.0 + 30.0).ceil() as u64);
    (s, first)
}

/// The answer after `after` (try `attempt`) ended with `exits`.
pub fn next(
    i: &Inputs<'_>,
    after: Option<Swap>,
    attempt: usize,
    exits: [u8; 2],
) -> Result<End, RecordError> {
    let why = |pre: &str| {
        format!(
            "{pre}svc-swap exit {}, wait-ready exit {}",
            exits[0], exits[1]
        )
    };
    let ok = exits == [exit::OK, exit::OK];
    match after {
        None if i.keep_winner => winner(i),
        None => Ok(original(i, 0)),
        Some(_) if ok => Ok(done(String::new(), exit::OK)),
        Some(Swap::Original)
            if i.interrupted
                && exits[0] == exit::OK
                && [exit::INTERRUPTED, exit::TIMEOUT].contains(&exits[1]) =>
        {
            let how = match exits[1] {
                exit::INTERRUPTED => "interrupted again".to_string(),
                _ => format!("not ready within {}s", bound_s(i.lines).0),
            };
            Ok(done(
                format!("the original config is back in place but was not ready yet ({how}); it may still be loading: check it (wait-ready URL --server KIND)"),
                exit::RESTORE_FAILED,
            ))
        }
        // Swapped back, and the server answers (HTTP 404 at the probed
        // path, or 401/403 for want of a key, which the sweep stopped
        // for): as ready as can be told.
        Some(Swap::Original)
            if exits[0] == exit::OK
                && [exit::NOT_FOUND, exit::AUTH_REFUSED].contains(&exits[1]) =>
        {
            Ok(done(String::new(), exit::OK))
        }
        Some(Swap::Winner | Swap::PickToValidate | Swap::ValidatedPick)
        | Some(Swap::ScheduleToValidate | Swap::ValidatedSchedule) => {
            let mut e = original(i, 0);
            e.warning = format!(
                "applying the winner failed ({}); restoring the original config",
                why(&format!("summarize exit {}, ", i.summarize_exit))
            );
            Ok(e)
        }
        Some(Swap::Original) if exit::is_transient(exits[0]) && attempt < i.retries => {
            let pause = 2u64 << attempt.min(5);
            let mut e = original(i, attempt + 1);
            e.note = format!(
                "  transport failure; retry {}/{} in {pause}s",
                attempt + 1,
                i.retries
            );
            e.pause_s = pause;
            Ok(e)
        }
        Some(Swap::Original) => Ok(done(
            format!(
                "the final swap did not end with a ready server ({}); check the server",
                why("")
            ),
            exit::RESTORE_FAILED,
        )),
    }
}

pub(crate) fn done(error: String, code: u8) -> End {
    End {
        tag: "end",
        action: "done",
        error,
        exit: code,
        ..End::default()
    }
}

/// svc-swap's words that undo the schedule step's own flags.
pub(crate) fn undo_schedule(i: &Inputs<'_>) -> Vec<String> {
    i.schedule
        .map(|s| schedule::restore_words(i.lines, s, i.keys))
        .unwrap_or_default()
}

/// Try `attempt` of the original config.
pub(crate) fn original(i: &Inputs<'_>, attempt: usize) -> End {
    let mut to_swap = vec!["--no-preflight".to_string()];
    to_swap.extend(i.original.iter().cloned());
    to_swap.extend(undo_schedule(i));
    let (mut to_ready, mut note) = (Vec::new(), String::new());
    if i.interrupted {
        let (s, first) = bound_s(i.lines);
        let why = match first {
            Some(t) => format!("its first time to ready was {t:.1}s"),
            None => "no time to ready measured yet".into(),
        };
        to_ready = vec!["--timeout".into(), format!("{s}s")];
        note = format!("after the interrupt the restore waits at most {s}s ({why}); Ctrl-C again stops waiting");
    }
    End {
        tag: "end",
        action: "swap",
        line: "restoring the original config".into(),
        note,
        to_ready,
        to_swap,
        again: vec![
            "--after".into(),
            "original".into(),
            "--attempt".into(),
            attempt.to_string(),
        ],
        ..End::default()
    }
}

/// Which winner an end applies: the schedule when it wins by the
/// objective, else summarize's pick when it picked one, else nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    Nothing,
    Pick,
    Schedule,
}

/// The winner `i` makes: [`Applied`].
pub(crate) fn winning(i: &Inputs<'_>) -> Applied {
    match (&i.winner, i.schedule) {
        (Some((_, sum)), Some(server))
            if schedule::keep(sum, server, schedule::step(i.lines, server, true).state)
                == "schedule" =>
        {
            Applied::Schedule
        }
        (Some(_), _) if i.summarize_exit == exit::OK => Applied::Pick,
        _ => Applied::Nothing,
    }
}

/// svc-swap's words that apply summarize's pick (`--apply-from` its
/// summary) and undo the schedule step's own flags.
pub(crate) fn pick_words(i: &Inputs<'_>, summary: &str) -> Vec<String> {
    let mut to_swap = vec!["--apply-from".to_string(), summary.to_string()];
    to_swap.extend(undo_schedule(i));
    to_swap
}

/// svc-swap's and wait-ready's words that apply the `server` schedule
/// the sweep measured (its record written into the work folder).
pub(crate) fn schedule_words(
    i: &Inputs<'_>,
    server: &str,
) -> Result<(Vec<String>, Vec<String>), RecordError> {
    let (file, rec) = schedule::write_record(i.lines, server, i.work)?;
    Ok((
        vec!["--apply-from".into(), file],
        schedule::expect_words(&rec.raw),
    ))
}

/// --keep-winner's swap: the schedule when it wins, else summarize's pick;
/// nothing picked: the original, with the warning.
pub(crate) fn winner(i: &Inputs<'_>) -> Result<End, RecordError> {
    let Some((path, _)) = &i.winner else {
        return Ok(original(i, 0));
    };
    let again = vec!["--after".to_string(), "winner".to_string()];
    match (winning(i), i.schedule) {
        (Applied::Schedule, Some(server)) => {
            let (to_swap, to_ready) = schedule_words(i, server)?;
            Ok(End {
                tag: "end",
                action: "swap",
                line: format!(
                    "applying the {server} schedule (it wins by the objective; see the table)"
                ),
                to_swap,
                to_ready,
                again,
                ..End::default()
            })
        }
        (Applied::Pick, _) => Ok(End {
            tag: "end",
            action: "swap",
            line: "applying summarize's pick".into(),
            to_swap: pick_words(i, path),
            again,
            ..End::default()
        }),
        _ => {
            let mut e = original(i, 0);
            e.warning = format!(
                "applying the winner failed (summarize exit {}); restoring the original config",
                i.summarize_exit
            );
            Ok(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results;

    const SG: &str = r#"{"type":"schedule","server":"sglang","flags":["--speculative-num-steps","5","--speculative-adaptive"]}"#;

    fn inputs<'a>(lines: &'a [Line], winner: Option<(&'a str, serde_json::Value)>) -> Inputs<'a> {
        Inputs {
            lines,
            original: vec!["--set".into(), "--k=1".into()],
            schedule: None,
            winner,
            summarize_exit: 0,
            retries: 2,
            work: "/nonexistent",
            keys: &[],
            interrupted: false,
            keep_winner: true,
            validate: None,
        }
    }

    #[test]
    fn after_an_interrupt_the_restore_waits_its_first_time_to_ready_plus_a_margin() {
        let text = r#"{"type":"origin"}
{"type":"bench","config":{"k":"2"},"upstream":{"type":"ready","outcome":"ready","time_to_ready_s":12.5}}
{"type":"bench","config":{"k":"3"},"upstream":{"type":"ready","outcome":"ready","time_to_ready_s":99.0}}
"#;
        let lines = results::read(text);
        let mut i = inputs(&lines, None);
        i.interrupted = true;
        let e = next(&i, None, 0, [0, 0]).unwrap();
        assert_eq!(e.to_ready, ["--timeout", "55s"]);
        assert!(
            e.note.contains("first time to ready was 12.5s"),
            "{}",
            e.note
        );
        assert!(e.note.contains("Ctrl-C again"), "{}", e.note);
        let again = next(&i, Some(Swap::Original), 0, [0, exit::INTERRUPTED]).unwrap();
        assert_eq!(again.exit, exit::RESTORE_FAILED);
        assert!(
            again
                .error
                .contains("back in place but was not ready yet (interrupted again)"),
            "{}",
            again.error
        );
        let late = next(&i, Some(Swap::Original), 0, [0, exit::TIMEOUT]).unwrap();
        assert!(
            late.error.contains("not ready within 55s"),
            "{}",
            late.error
        );
        let none = inputs(&[], None);
        assert_eq!(bound_s(none.lines), (UNMEASURED_BOUND_S, None));
        // Not interrupted: the stages' own --ready-timeout.
        assert!(next(&inputs(&lines, None), None, 0, [0, 0])
            .unwrap()
            .to_ready
            .is_empty());
    }

    #[test]
    fn without_keep_winner_the_original_goes_back_and_transport_is_retried() {
        let i = inputs(&[], None);
        let e = next(&i, None, 0, [0, 0]).unwrap();
        assert_eq!(
            (e.action, e.line.as_str()),
            ("swap", "restoring the original config")
        );
        assert_eq!(e.to_swap, ["--no-preflight", "--set", "--k=1"]);
        assert_eq!(e.again, ["--after", "original", "--attempt", "0"]);
        let r = next(&i, Some(Swap::Original), 0, [21, 4]).unwrap();
        assert_eq!((r.action, r.pause_s), ("swap", 2));
        assert_eq!(r.note, "  transport failure; retry 1/2 in 2s");
        assert_eq!(r.again[3], "1");
        let r = next(&i, Some(Swap::Original), 1, [21, 4]).unwrap();
        assert_eq!(
            (r.pause_s, r.note.as_str()),
            (4, "  transport failure; retry 2/2 in 4s")
        );
        let last = next(&i, Some(Swap::Original), 2, [21, 4]).unwrap();
        assert_eq!((last.action, last.exit), ("done", 42));
        assert_eq!(
            last.error,
            "the final swap did not end with a ready server (svc-swap exit 21, wait-ready exit 4); check the server"
        );
        // Not transport: no retry.
        assert_eq!(next(&i, Some(Swap::Original), 0, [24, 4]).unwrap().exit, 42);
        let ok = next(&i, Some(Swap::Original), 1, [0, 0]).unwrap();
        assert_eq!((ok.action, ok.exit, ok.error.as_str()), ("done", 0, ""));
    }

    /// Regression (issue 37): with the container engine down for 10 s the
    /// end swap failed with 28 inside the outage and was never tried again.
    #[test]
    fn an_engine_that_did_not_answer_is_retried_like_a_lost_session() {
        let i = inputs(&[], None);
        let r = next(&i, Some(Swap::Original), 0, [28, 4]).unwrap();
        assert_eq!((r.action, r.pause_s), ("swap", 2));
        assert_eq!(r.note, "  transport failure; retry 1/2 in 2s");
        let last = next(&i, Some(Swap::Original), 2, [28, 4]).unwrap();
        assert_eq!((last.action, last.exit), ("done", 42));
        // A container that is not there is the target's: no retry.
        assert_eq!(next(&i, Some(Swap::Original), 0, [20, 4]).unwrap().exit, 42);
    }

    #[test]
    fn the_pick_is_applied_and_a_failed_one_falls_back_with_a_warning() {
        let sum = serde_json::json!({"type": "summary"});
        let i = inputs(&[], Some(("/w/summary.json", sum.clone())));
        let e = next(&i, None, 0, [0, 0]).unwrap();
        assert_eq!(e.line, "applying summarize's pick");
        assert_eq!(e.to_swap, ["--apply-from", "/w/summary.json"]);
        let f = next(&i, Some(Swap::Winner), 0, [20, 0]).unwrap();
        assert_eq!(f.line, "restoring the original config");
        assert_eq!(
            f.warning,
            "applying the winner failed (summarize exit 0, svc-swap exit 20, wait-ready exit 0); restoring the original config"
        );
        let none = Inputs {
            summarize_exit: 1,
            ..inputs(&[], Some(("/w/s", sum)))
        };
        let e = next(&none, None, 0, [0, 0]).unwrap();
        assert_eq!(
            (e.warning.as_str(), e.to_swap[0].as_str()),
            (
                "applying the winner failed (summarize exit 1); restoring the original config",
                "--no-preflight"
            )
        );
    }

    #[test]
    fn a_winning_schedule_is_written_out_and_applied_with_its_checks() {
        let text = [
            SG.to_string(),
            r#"{"type":"bench","config":{"schedule":"sglang"},"partial":false,"upstream":{"type":"ready","upstream":{"type":"swap","changes":[{"flag":"--speculative-adaptive-config","old":null,"new":"/f"}]}}}"#.into(),
        ]
        .join("\n");
        let lines = results::read(&text);
        let dir = std::env::temp_dir().join(format!("sweep-plan-end-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let work = dir.to_string_lossy().to_string();
        let wins =
            serde_json::json!({"details": {"schedule": [{"server": "sglang", "wins": true}]}});
        let i = Inputs {
            schedule: Some("sglang"),
            work: &work,
            ..inputs(&lines, Some(("/w/s", wins)))
        };
        let e = next(&i, None, 0, [0, 0]).unwrap();
        assert!(
            e.line.starts_with("applying the sglang schedule"),
            "{}",
            e.line
        );
        let file = format!("{work}/schedule.json");
        assert_eq!(e.to_swap, ["--apply-from", file.as_str()]);
        assert!(std::fs::read_to_string(&file)
            .unwrap()
            .contains("\"--speculative-adaptive\""));
        assert_eq!(e.to_ready[1], "speculative-adaptive=true");
        // Restoring undoes the schedule's own flag too.
        let r = next(&i, Some(Swap::Winner), 0, [1, 0]).unwrap();
        assert_eq!(
            r.to_swap,
            [
                "--no-preflight",
                "--set",
                "--k=1",
                "--unset",
                "--speculative-adaptive-config"
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
