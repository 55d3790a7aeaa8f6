//! What svc-swap needs from a service manager (systemd or the process
//! supervisor), so the stop-edit-restart loop in `swap.rs` is written once.

use std::time::Duration;

use sweepkit::exit::Exit;
use sweepkit::records::{ServiceTarget, StartInfo, StopInfo, StopResult, SwapMethod};

use crate::execstart::ExecLine;
use crate::job::{ManagerJob, State};

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
    /// Re-send SIGTERM this often while the old instance outlives it
    /// (zero: never); vLLM loses a SIGTERM that arrives while it loads.
    pub resend_term: Duration,
}

impl Opts {
    /// How long a run follows one job (or waits for an earlier run's).
    pub fn job_limit(&self) -> Duration {
        self.start_timeout + self.wait * 2 + Duration::from_secs(900)
    }
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
    /// How the line is put in place (a systemd drop-in or the unit file,
    /// a spec file, a container, a Compose file).
    pub method: SwapMethod,
}

/// A service svc-swap can stop, edit and start. A manager states what is
/// its own; the defaults serve the managers that have nothing to add.
pub trait Target {
    fn info(&self) -> ServiceTarget;
    /// The ExecStart in force now.
    fn current(&self) -> &ExecLine;
    /// The file change that makes `line` the ExecStart.
    fn plan_edit(&self, line: &ExecLine, in_place: bool) -> Result<Plan, Exit>;
    /// The file change that puts the previous config back.
    fn plan_restore(&self, in_place: bool) -> Result<Plan, Exit>;
    /// Check the manager now carries `line`; `Err` says what differs. By
    /// default nothing is asked before the job: a container's command is
    /// read back from the engine once it runs (`finish`).
    fn verify(&mut self, _line: &ExecLine) -> Result<(), Exit> {
        Ok(())
    }
    /// True when the job must wait for `verify` before it stops anything
    /// (systemd: another drop-in may override ours).
    fn needs_verdict(&self) -> bool {
        false
    }
    /// Where the far-side jobs keep their state (`job.rs`).
    fn state_dir(&self) -> String;
    /// True when the live instance already runs `line` (a no-op swap).
    fn live_matches(&mut self, line: &ExecLine) -> Result<bool, Exit>;
    /// The manager's shell functions in the far-side job (`job/*.sh`).
    fn job_script(&self) -> &'static str;
    /// True when the job runs under `systemd-run` (a transient unit named
    /// after the job).
    fn under_systemd_run(&self) -> bool {
        false
    }
    /// The arguments of `job_script` for a job that stops the old instance
    /// and starts `new` (restarting `old` when `new` fails), and what is
    /// known of the old instance before it stops.
    fn job_args(
        &mut self,
        o: &Opts,
        new: &ExecLine,
        old: &ExecLine,
    ) -> Result<(Vec<String>, StopInfo), Exit>;
    /// The manager's part of that far-side job.
    fn job(
        &mut self,
        o: &Opts,
        new: &ExecLine,
        old: &ExecLine,
    ) -> Result<(ManagerJob, StopInfo), Exit> {
        let (args, info) = self.job_args(o, new, old)?;
        let m = ManagerJob {
            script: self.job_script(),
            args,
            systemd_run: self.under_systemd_run(),
        };
        Ok((m, info))
    }
    /// How the stop and the start went, from the job's state; `line` is
    /// what should be running now.
    fn finish(
        &mut self,
        st: &State,
        line: &ExecLine,
        stop: &mut StopInfo,
    ) -> Result<StartInfo, Exit>;
    /// Add what only the manager knows once the new instance runs (the
    /// new container's ID, warnings about it) to the record.
    fn finish_record(&mut self, _rec: &mut sweepkit::records::SwapRecord) {}
    /// Environment for `--ready-cmd` (main PID, unit, port).
    fn ready_env(&self) -> Vec<(String, String)>;
    /// Last log lines for a failure record.
    fn log_tail(&self) -> Vec<String>;
}

/// The job's settle arguments: wait (s), port, gpu, force-kill.
pub fn settle_args(o: &Opts, port: Option<u16>) -> Vec<String> {
    vec![
        o.wait.as_secs().max(1).to_string(),
        port.map_or(String::new(), |p| p.to_string()),
        u8::from(o.gpu).to_string(),
        u8::from(o.force_kill).to_string(),
        resend_ms(o.resend_term).to_string(),
    ]
}

/// The job polls every 50 ms: a shorter non-zero period would re-send on
/// every poll.
fn resend_ms(d: Duration) -> u128 {
    match d.as_millis() {
        0 => 0,
        ms => ms.max(50),
    }
}

/// What every job's state tells of the stop: its result as the job wrote
/// it (none: there was nothing to stop; systemd reads its own unit's
/// result over it), the SIGTERMs re-sent after the first, the GPU wait,
/// the time to the start.
pub fn stop_facts(st: &State, info: &mut StopInfo) {
    info.result = st
        .get("stop_result")
        .map_or(StopResult::AlreadyStopped, StopResult::from);
    info.term_resent = term_resent(st);
    info.gpu = st.get("gpu").map(String::from);
    info.duration_s = st.span_s("t_stop", "t_start").unwrap_or_default();
}

/// `term_resent` in the stop report: how many SIGTERMs followed the first.
pub fn term_resent(st: &State) -> u32 {
    st.get("term_resent")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// RFC 3339 of a `date +%s%N` stamp in the job's state (now if absent).
pub fn stamp_of(st: &State, key: &str) -> String {
    let t = st
        .get(key)
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(std::time::SystemTime::now(), |ns| {
            std::time::UNIX_EPOCH + Duration::from_nanos(ns)
        });
    sweepkit::time::rfc3339(t)
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
