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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_exit: Option<u8>,
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
}

/// Judge a run: `exits` are svc-swap's, wait-ready's and loadgen's
/// statuses, `retries` sweep's --retries (for the note).
pub fn judge(v: &mut Verdict, exits: [u8; 3], retries: usize) {
    let [swap, ready, load] = exits;
    let state = v.state.unwrap_or(State::Pending);
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
        judge(&mut v, exits, 3);
        v
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
