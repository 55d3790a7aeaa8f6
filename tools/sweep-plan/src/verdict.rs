//! One run of one config, judged: what it left in the results file (its
//! state, its bench records) and, given the three stages' exit statuses,
//! what sweep does next: count it measured or failed, stop the sweep (a
//! tool rejected its arguments), take it as interrupted, or not count it
//! as a swap (pre-flight refused it), with the line to say.

use serde::Serialize;
use sweepkit::exit;

use crate::results::State;

/// bash's own statuses for a tool that could not be run.
const SHELL_CANNOT_EXEC: u8 = 126;
const SHELL_NOT_FOUND: u8 = 127;

/// A run's verdict, as `verdict` answers.
#[derive(Debug, Default, Serialize)]
pub struct Verdict {
    #[serde(rename = "type")]
    pub tag: &'static str,
    pub index: usize,
    pub label: String,
    /// The state of its last record; `pending`: it wrote none.
    pub state: Option<State>,
    pub bench_records: usize,
    /// With --exits: `ok` (count it measured), `failed`, or `none` (cut
    /// short by an interrupt: neither).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tally: Option<&'static str>,
    /// A stage's usage error or unrunnable tool (2, 126, 127): every
    /// config would fail alike, so the sweep stops.
    /// Also wait-ready's "no such path" (14): the probe's path is wrong
    /// for every config alike.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_exit: Option<u8>,
    /// With `usage_exit`: the line sweep stops with, saying what to fix.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_note: Option<String>,
    /// A stage ended by an interrupt (130).
    pub interrupted: bool,
    /// svc-swap's pre-flight refused the config (26): the server was not
    /// touched, so this was no swap.
    pub refused: bool,
    /// A warning for sweep to print (nothing arrived).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// The line sweep says about it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A transport failure with retries left: run the config again after
    /// this pause ([`retry`]), saying `retry_note`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_in_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_note: Option<String>,
    /// svc-swap's pre-flight notes of this run that no earlier verdict of
    /// the sweep (its tally file) said: a note that does not depend on the
    /// value (SGLang's 48-request cap) is said once per sweep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preflight: Vec<String>,
}

/// The pre-flight notes of the swap records in `lines` (up each record's
/// upstream chain) that the tally text `said` does not hold yet.
pub fn new_notes(lines: &[crate::results::Line], said: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Said {
        #[serde(default)]
        preflight: Vec<String>,
    }
    let old: Vec<String> = said
        .lines()
        .filter_map(|l| serde_json::from_str::<Said>(l).ok())
        .flat_map(|s| s.preflight)
        .collect();
    let mut out: Vec<String> = Vec::new();
    for swap in lines
        .iter()
        .filter_map(|l| crate::results::upstream_of(&l.raw, "swap"))
    {
        for n in swap["preflight"].as_array().into_iter().flatten() {
            let n = n.as_str().unwrap_or_default().to_string();
            if !n.is_empty() && !old.contains(&n) && !out.contains(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// After try `attempt` (from 0) left `state`: a transport failure (SSH
/// lost, host unreachable) says nothing about the config, so it runs
/// again, up to `retries` times, after a pause backing off 2 s, 4 s, 8 s...
/// (at most 30 s): the pause and the line to say, or `None`.
pub fn retry(state: State, attempt: usize, retries: usize) -> Option<(u64, String)> {
    if state != State::Transport || attempt >= retries {
        return None;
    }
    let pause = (2u64 << attempt.min(5)).min(30);
    let n = attempt + 1;
    Some((
        pause,
        format!("  transport failure (recorded, not a result); retry {n}/{retries} in {pause}s"),
    ))
}

/// Judge try `attempt` (from 0) of a run: `exits` are svc-swap's,
/// wait-ready's and loadgen's statuses, `retries` sweep's --retries.
pub fn judge(v: &mut Verdict, exits: [u8; 3], retries: usize, attempt: usize) {
    let [swap, ready, load] = exits;
    let state = v.state.unwrap_or(State::Pending);
    (v.retry_in_s, v.retry_note) = retry(state, attempt, retries).unzip();
    let n = v.bench_records;
    if state == State::Pending {
        v.warning = Some(format!(
            "{}: no record arrived (exit codes: svc-swap {swap}, wait-ready {ready}, loadgen {load})",
            v.label
        ));
    }
    v.usage_exit = exits
        .into_iter()
        .find(|&rc| rc == exit::USAGE || rc == SHELL_CANNOT_EXEC || rc == SHELL_NOT_FOUND);
    if ready == exit::NOT_FOUND && v.usage_exit.is_none() {
        v.usage_exit = Some(ready);
    }
    // A key the server wants is missing for every config alike (issue 46:
    // it was retried as a transport failure, then every config failed).
    if v.usage_exit.is_none() {
        v.usage_exit = [ready, load]
            .into_iter()
            .find(|&rc| rc == exit::AUTH_REFUSED);
    }
    v.stop_note = v.usage_exit.map(|rc| match rc {
        exit::NOT_FOUND => format!("wait-ready's probe got HTTP 404/405 (no such path) from a listening server: give --server KIND ({}) so it probes the server's health path", sweepkit::server_kind::list()),
        exit::AUTH_REFUSED => format!("the server answered HTTP 401/403: it wants an API key (or another one); set {} in the environment (every tool reads it) and run the sweep again", sweepkit::api::KEY_ENV),
        _ => format!("a tool rejected its arguments (exit {rc}); fix the pass-through options"),
    });
    v.interrupted = exits.contains(&exit::INTERRUPTED);
    v.refused = swap == exit::PREFLIGHT_REJECTED;
    let (tally, note) = match state {
        State::Transport => (
            "failed",
            Some(format!(
                "  failed (transport, after {retries} retries) (recorded)"
            )),
        ),
        State::Failed => ("failed", Some("  failed (recorded)".to_string())),
        _ if n > 0 && load == exit::OK => ("ok", Some(format!("  {n} bench record(s)"))),
        _ if n > 0 && load == exit::INTERRUPTED => (
            "none",
            Some(format!(
                "  {n} bench record(s), the last cut short by the interrupt"
            )),
        ),
        // Failed requests are data: counted in each record's errors.
        _ if n > 0 => (
            "ok",
            Some(format!(
                "  {n} bench record(s); some requests failed (loadgen exit {load}; see errors)"
            )),
        ),
        _ => ("failed", None),
    };
    v.tally = Some(tally);
    v.note = note;
}

/// The schedule step's run, judged as a config's (its retry, usage error,
/// interrupt, warning) but counted only when it failed: it adds no config
/// to the measured count.
pub fn judge_schedule(v: &mut Verdict) {
    let state = v.state.unwrap_or(State::Pending);
    let (tally, note) = match state {
        State::Complete => (
            "none",
            format!("  {} bench record(s) of the schedule", v.bench_records),
        ),
        _ => (
            "failed",
            format!("  the schedule failed ({}, recorded)", state.word()),
        ),
    };
    v.tally = Some(tally);
    v.note = Some(note);
}

/// The counts in a tally file (`verdict --tally`, `step --tally`): each
/// finished run's tally (`ok` measured, `failed`; `none` neither) and each
/// step's skipped configs, as (measured, failed, skipped).
pub fn count(text: &str) -> (usize, usize, usize) {
    /// What a tally file's line says: a verdict's `tally`, a step's
    /// `skipped`.
    #[derive(serde::Deserialize)]
    struct Line {
        #[serde(rename = "type")]
        tag: String,
        tally: Option<String>,
        #[serde(default)]
        skipped: usize,
    }
    let mut n = (0, 0, 0);
    for l in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
    {
        match l.tally.as_deref() {
            Some("ok") => n.0 += 1,
            Some("failed") => n.1 += 1,
            _ => {}
        }
        if l.tag == "step" {
            n.2 += l.skipped;
        }
    }
    n
}

/// A single-host sweep's end, as `tally` answers: its counts, the line
/// sweep says, and the exit status sweep(1) documents.
#[derive(Debug, Serialize, PartialEq)]
pub struct Tally {
    #[serde(rename = "type")]
    pub tag: &'static str,
    pub measured: usize,
    pub failed: usize,
    pub skipped: usize,
    pub done: String,
    /// 41 every config failed (none measured or skipped), 40 some, else 0.
    pub exit: u8,
}

/// The end of a sweep that measured, failed and skipped so many configs.
pub fn tally(measured: usize, failed: usize, skipped: usize) -> Tally {
    let exit = match failed {
        0 => exit::OK,
        _ if measured + skipped == 0 => exit::ALL_CONFIGS_FAILED,
        _ => exit::SOME_CONFIGS_FAILED,
    };
    Tally {
        tag: "tally",
        measured,
        failed,
        skipped,
        done: format!("done: {measured} measured, {failed} failed, {skipped} skipped"),
        exit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(state: State, n: usize, exits: [u8; 3]) -> Verdict {
        let mut v = Verdict {
            tag: "verdict",
            label: "k=1".into(),
            state: Some(state),
            bench_records: n,
            ..Verdict::default()
        };
        judge(&mut v, exits, 3, 0);
        v
    }

    #[test]
    fn a_pre_flight_note_is_said_once_per_sweep() {
        let rec = |steps: u32| {
            format!(
                r#"{{"type":"bench","config":{{"k":"{steps}"}},"upstream":{{"type":"ready","upstream":{{"type":"swap","preflight":["cap 48","steps {steps} draft {}"]}}}}}}"#,
                steps + 1
            )
        };
        let first = crate::results::read(&format!("{}\n{}\n", rec(1), rec(1)));
        assert_eq!(new_notes(&first, ""), ["cap 48", "steps 1 draft 2"]);
        let said = r#"{"type":"verdict","preflight":["cap 48","steps 1 draft 2"]}"#;
        let second = crate::results::read(&format!("{}\n", rec(2)));
        assert_eq!(new_notes(&second, said), ["steps 2 draft 3"]);
    }

    #[test]
    fn a_wrong_probe_path_stops_the_sweep_saying_give_server() {
        let v = judged(
            State::Incomplete,
            0,
            [0, exit::NOT_FOUND, exit::UPSTREAM_FAILED],
        );
        assert_eq!(v.usage_exit, Some(exit::NOT_FOUND));
        let note = v.stop_note.unwrap();
        assert!(note.contains("give --server KIND"), "{note}");
        let v = judged(State::Pending, 0, [exit::USAGE, 4, 4]);
        assert!(v
            .stop_note
            .unwrap()
            .contains("fix the pass-through options"));
        assert_eq!(judged(State::Complete, 1, [0, 0, 0]).stop_note, None);
    }

    #[test]
    fn a_key_the_server_wants_stops_the_sweep_naming_the_variable() {
        for exits in [[0, 0, exit::AUTH_REFUSED], [0, exit::AUTH_REFUSED, 4]] {
            let v = judged(State::Incomplete, 0, exits);
            assert_eq!(v.usage_exit, Some(exit::AUTH_REFUSED), "{exits:?}");
            assert_eq!(v.retry_in_s, None, "not retried");
            let note = v.stop_note.unwrap();
            assert!(note.contains("set SWEEPKIT_API_KEY"), "{note}");
        }
    }

    #[test]
    fn a_sweep_fails_as_a_whole_only_when_nothing_stands() {
        let t = tally(2, 1, 0);
        assert_eq!(t.done, "done: 2 measured, 1 failed, 0 skipped");
        assert_eq!(t.exit, exit::SOME_CONFIGS_FAILED);
        assert_eq!(tally(0, 3, 0).exit, exit::ALL_CONFIGS_FAILED);
        // A resumed sweep whose rest all failed: the skipped stand.
        assert_eq!(tally(0, 1, 2).exit, exit::SOME_CONFIGS_FAILED);
        assert_eq!(tally(0, 0, 0).exit, exit::OK);
        assert_eq!(tally(3, 0, 1).exit, exit::OK);
    }

    #[test]
    fn the_tally_file_counts_finished_runs_and_skips() {
        let text = r#"{"type":"step","action":"run","skipped":2}
{"type":"verdict","tally":"ok"}
{"type":"verdict","tally":"failed"}
{"type":"verdict","tally":"none"}
{"type":"verdict","tally":"ok"}
"#;
        assert_eq!(count(text), (2, 1, 2));
        assert_eq!(count(""), (0, 0, 0));
    }

    #[test]
    fn the_schedule_counts_only_when_it_failed() {
        let mut v = judged(State::Complete, 2, [0, 0, 0]);
        judge_schedule(&mut v);
        assert_eq!(
            (v.tally, v.note.as_deref()),
            (Some("none"), Some("  2 bench record(s) of the schedule"))
        );
        let mut v = judged(State::Incomplete, 1, [0, 0, 0]);
        judge_schedule(&mut v);
        assert_eq!(
            (v.tally, v.note.as_deref()),
            (
                Some("failed"),
                Some("  the schedule failed (incomplete, recorded)")
            )
        );
    }

    #[test]
    fn a_transport_failure_is_retried_backing_off_to_30s() {
        let pauses: Vec<_> = (0..7)
            .map(|a| retry(State::Transport, a, 6).map(|r| r.0))
            .collect();
        assert_eq!(
            pauses,
            [
                Some(2),
                Some(4),
                Some(8),
                Some(16),
                Some(30),
                Some(30),
                None
            ]
        );
        assert_eq!(
            retry(State::Transport, 1, 3).unwrap().1,
            "  transport failure (recorded, not a result); retry 2/3 in 4s"
        );
        assert_eq!(retry(State::Failed, 0, 3), None);
        assert_eq!(retry(State::Transport, 0, 0), None);
        assert_eq!(judged(State::Transport, 0, [21, 4, 4]).retry_in_s, Some(2));
        assert_eq!(judged(State::Complete, 1, [0, 0, 0]).retry_in_s, None);
    }

    #[test]
    fn each_outcome_is_counted_once_and_said() {
        let v = judged(State::Complete, 2, [0, 0, 0]);
        assert_eq!(
            (v.tally, v.note.as_deref()),
            (Some("ok"), Some("  2 bench record(s)"))
        );
        let v = judged(State::Complete, 1, [0, 0, 31]);
        assert_eq!(v.tally, Some("ok"));
        assert!(v.note.unwrap().contains("loadgen exit 31"));
        let v = judged(State::Incomplete, 1, [0, 0, 130]);
        assert!(v.interrupted && v.tally == Some("none"));
        let v = judged(State::Transport, 0, [21, 4, 4]);
        assert_eq!(
            v.note.as_deref(),
            Some("  failed (transport, after 3 retries) (recorded)")
        );
        let v = judged(State::Failed, 0, [26, 4, 4]);
        assert!(v.refused && v.tally == Some("failed"));
        let v = judged(State::Pending, 0, [0, 0, 2]);
        assert_eq!(v.usage_exit, Some(2));
        assert!(v.warning.unwrap().contains("loadgen 2"));
        assert_eq!(judged(State::Pending, 0, [127, 1, 1]).usage_exit, Some(127));
    }
}
