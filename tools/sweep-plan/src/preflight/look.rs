//! The one look at the target that every path takes before its first stop
//! (a sweep here, a pool's first host and each host's first job, `--slurm`
//! before it submits, containers, and `--dry-run`, which touches nothing
//! but refuses what the run would): svc-swap --dry-run reads the launch
//! line with config 1's words, changing nothing, and [`super::check`] says
//! what would fail every config alike. A check added there holds on every
//! path.

use std::process::{Command, Stdio};

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::SwapRecord;

use super::{check, Checks, Refusal};
use crate::origin;

/// What the look needs: svc-swap's words for the target and for config 1,
/// and what the checks compare the launch line with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ask {
    /// svc-swap's target words (`--spec FILE`, `--ssh DEST`, ...).
    pub target: Vec<String>,
    /// Config 1's own words (`--set KEY=VALUE` ...).
    pub config: Vec<String>,
    /// The URL the stages reach the server at; `None` under `--slurm`,
    /// where each job's server has a node and a port of its own.
    pub url: Option<String>,
    /// The keys `--param-new` declares absent from the launch line.
    pub new: Vec<String>,
    /// The keys `--param` sweeps, which must be on it.
    pub swept: Vec<String>,
    /// wait-ready probes the URL as given (no `--server`).
    pub probe: bool,
    /// loadgen gets `--api-key` as an argument (else the environment
    /// must hold a key for a launch line with `--api-key`).
    pub key_given: bool,
}

/// The launch line as the dry run read it: its swap record, and that
/// record's JSON (the origin record's upstream).
#[derive(Debug, Clone)]
pub struct Seen {
    pub swap: SwapRecord,
    pub raw: Value,
}

/// Why the sweep cannot start on what the look saw.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    /// A mistake that would fail every config alike (exit 2).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// svc-swap could not read the launch line (no such spec, a host out
    /// of reach, no such container): its exit status and its own lines.
    #[error("svc-swap --dry-run failed (exit {code}); the target was not touched")]
    Unread { code: u8, said: String },
}

impl Stop {
    /// The sweep's end on it: the refusal (exit 2), or svc-swap's own
    /// lines, passed through to stderr here, then why (its exit status).
    pub fn into_exit(self) -> Exit {
        let code = match &self {
            Stop::Refused(_) => exit::USAGE,
            Stop::Unread { code, said } => {
                if !said.is_empty() {
                    sweepkit::diag::line(said);
                }
                *code
            }
        };
        Exit::new(code, anyhow!(self))
    }

    /// How `--dry-run` says a look it could not take: the plan it prints
    /// is unchecked (the run would stop here too, or drop a pool's host).
    pub fn unread_note(&self) -> Option<String> {
        let Stop::Unread { code, said } = self else {
            return None;
        };
        let last = said.lines().rev().find(|l| !l.trim().is_empty());
        Some(format!(
            "the launch line could not be read (svc-swap --dry-run exit {code}{}): the plan below is not checked against it",
            last.map(|l| format!(": {l}")).unwrap_or_default()
        ))
    }
}

/// Read the target's launch line with svc-swap (`svc_swap`, its path) as
/// `ask` says, and check it: what the run would see before its first stop.
pub fn look(svc_swap: &str, ask: &Ask) -> Result<Seen, Stop> {
    let unread = |code: u8, said: String| Stop::Unread { code, said };
    let out = Command::new(svc_swap)
        .args(&ask.target)
        .args(["--dry-run", "--no-preflight"])
        .args(&ask.config)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unread(exit::FAILURE, format!("sweep: error: {svc_swap}: {e}")))?;
    let said = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    if !out.status.success() {
        let code = out.status.code().and_then(|c| u8::try_from(c).ok());
        return Err(unread(code.unwrap_or(exit::FAILURE), said));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let not_a_swap = |why: String| unread(exit::BAD_INPUT, format!("sweep: error: {why}"));
    let raw: Value = serde_json::from_str(line)
        .map_err(|e| not_a_swap(format!("svc-swap --dry-run printed no record: {e}")))?;
    let swap = origin::swap_of(&raw).map_err(|e| not_a_swap(format!("svc-swap --dry-run: {e}")))?;
    let c = Checks {
        url: ask.url.as_deref(),
        new: &ask.new,
        swept: &ask.swept,
        probe: ask.probe,
        key_given: ask.key_given || sweepkit::api::key_in_env(),
    };
    check(&swap, &c)?;
    Ok(Seen { swap, raw })
}

/// `--dry-run`'s look, which touches nothing: it refuses what the run
/// would refuse before its first stop, with the run's line and status; a
/// look it could not take is a warning (the plan it prints is unchecked).
/// A results file whose origin lacks a swept key (`keys`) is refused, as
/// the run refuses it.
pub fn dry_look(svc_swap: &str, ask: &Ask, results: &str, keys: &[String]) -> Result<(), Exit> {
    match look(svc_swap, ask) {
        Ok(_) => {}
        Err(s @ Stop::Refused(_)) => return Err(s.into_exit()),
        Err(s) => {
            if let Some(note) = s.unread_note() {
                sweepkit::diag::warning("sweep", note);
            }
        }
    }
    origin::fits(results, keys).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_look_that_could_not_be_taken_says_svc_swap_s_last_line() {
        let s = Stop::Unread {
            code: 21,
            said: "svc-swap: error: ssh gpu9: no route\n\n".into(),
        };
        let note = s.unread_note().unwrap();
        assert!(
            note.contains("(svc-swap --dry-run exit 21: svc-swap: error: ssh gpu9: no route)"),
            "{note}"
        );
        assert_eq!(
            s.to_string(),
            "svc-swap --dry-run failed (exit 21); the target was not touched"
        );
        let r = Stop::Refused(Refusal::AbsentFlag {
            key: "k".into(),
            closest: String::new(),
        });
        assert!(r.unread_note().is_none());
        assert_eq!(r.into_exit().code, exit::USAGE);
    }

    #[test]
    fn a_missing_svc_swap_is_a_look_not_taken() {
        let ask = Ask::default();
        let Err(Stop::Unread { code, said }) = look("/nonexistent/svc-swap", &ask) else {
            panic!("no svc-swap, no look");
        };
        assert_eq!(code, exit::FAILURE);
        assert!(said.contains("/nonexistent/svc-swap"), "{said}");
    }
}
