//! What svc-swap needs from a service manager (systemd or the process
//! supervisor), so the stop-edit-restart loop in `swap.rs` is written once.

use std::time::Duration;

use sweepkit::records::{ServiceTarget, StartInfo, StopInfo};
use sweepkit::report::Exit;

use crate::execstart::ExecLine;

/// Knobs of the stop and start steps.
#[derive(Debug, Clone, Default)]
pub struct Opts {
    /// SIGKILL the service's own PIDs when a graceful stop did not end them.
    pub force_kill: bool,
    /// TCP port that must be free before the start.
    pub port: Option<u16>,
    /// Wait until no old PID holds GPU memory.
    pub gpu: bool,
    /// How long to wait for PIDs, port and GPU after the stop.
    pub wait: Duration,
    /// Overrides the spec's TimeoutStopSec (process manager).
    pub stop_timeout: Option<Duration>,
    /// Bound on the start command (systemd start blocks on ExecStartPost).
    pub start_timeout: Duration,
}

/// A file change: write `new` to `path` (or remove it when `None`).
#[derive(Debug, Clone)]
pub struct Plan {
    pub path: String,
    /// The file's text now (`None`: it does not exist).
    pub old: Option<String>,
    pub new: Option<String>,
    /// The ExecStart the change gives.
    pub line: ExecLine,
    /// `--restore`: the backup this plan puts back (removed once it took).
    pub restores: Option<String>,
    /// `drop-in`, `in-place` or `spec`.
    pub method: &'static str,
}

/// A service svc-swap can stop, edit and start.
pub trait Target {
    fn info(&self) -> ServiceTarget;
    /// The ExecStart in force now.
    fn current(&self) -> &ExecLine;
    /// The file change that makes `line` the ExecStart.
    fn plan_edit(&self, line: &ExecLine, in_place: bool) -> Result<Plan, Exit>;
    /// The file change that puts the previous config back.
    fn plan_restore(&self, in_place: bool) -> Result<Plan, Exit>;
    /// Make the manager see the written files (daemon-reload).
    fn reload(&mut self) -> Result<(), Exit>;
    /// Check the manager now carries `line`; `Err` says what differs.
    fn verify(&mut self, line: &ExecLine) -> Result<(), Exit>;
    fn stop(&mut self, o: &Opts) -> Result<StopInfo, Exit>;
    fn start(&mut self, o: &Opts, line: &ExecLine) -> Result<StartInfo, Exit>;
    /// Environment for `--ready-cmd` (main PID, unit, port).
    fn ready_env(&self) -> Vec<(String, String)>;
    /// Last log lines for a failure record.
    fn log_tail(&self) -> Vec<String>;
}

/// Compare a process's argv with the expected one; `None` when the line has
/// `$` variables or `%` specifiers that only systemd expands.
pub fn cmdline_matches(line: &ExecLine, argv: Option<&[String]>) -> Option<bool> {
    let raw = line
        .words
        .iter()
        .skip(usize::from(line.prefix.contains('@')));
    if raw.clone().any(|w| expands(w)) {
        return None;
    }
    let want: Vec<String> = raw.map(|w| crate::execstart::logical(w)).collect();
    let got = argv?;
    // The kernel keeps the program as exec'd; compare argv[1..] exactly and
    // argv[0] by file name (a PATH lookup or `@` changes its spelling).
    let base = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    Some(got.len() == want.len() && base(&got[0]) == base(&want[0]) && got[1..] == want[1..])
}

/// True when systemd would expand something in this unit-file word: a `$`
/// or `%` that is not doubled.
fn expands(raw: &str) -> bool {
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' || c == '%' {
            if chars.peek() != Some(&c) {
                return true;
            }
            chars.next();
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execstart::parse;

    #[test]
    fn cmdline_comparison() {
        let argv = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let l = parse("/opt/bin/sim --a \"x y\" 50%% $$HOME").unwrap();
        let got = argv(&["sim", "--a", "x y", "50%", "$HOME"]);
        assert_eq!(cmdline_matches(&l, Some(&got)), Some(true));
        assert_eq!(cmdline_matches(&l, Some(&got[..4])), Some(false));
        assert_eq!(cmdline_matches(&l, None), None);
        assert_eq!(
            cmdline_matches(&parse("/bin/s %i").unwrap(), Some(&got)),
            None
        );
        assert_eq!(
            cmdline_matches(&parse("/bin/s $FOO").unwrap(), Some(&got)),
            None
        );
    }
}
