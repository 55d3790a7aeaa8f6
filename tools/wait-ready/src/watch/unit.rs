//! `--unit NAME`: poll `systemctl show` (locally, behind an exec prefix, or
//! over SSH) for the unit's state. Failed is a crash; a new InvocationID, a
//! rising NRestarts or SubState auto-restart is a restart loop. When a crash
//! is seen, `journalctl -u NAME -n 20` gives the last lines.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::transport::{Transport, TransportError};

use super::pid::describe_status;
use super::{Event, CMD_TIMEOUT};

/// systemctl costs a fork and a D-Bus call: poll twice a second. A local
/// unit's MainPID is also watched through /proc at every tick.
pub const EVERY: Duration = Duration::from_millis(500);

const PROPS: &str =
    "LoadState,ActiveState,SubState,Result,NRestarts,InvocationID,ExecMainCode,ExecMainStatus,MainPID";

pub struct UnitWatch {
    pub unit: String,
    transport: Arc<dyn Transport>,
    next: Instant,
    /// NRestarts and InvocationID when the wait began.
    base: Option<(u64, String)>,
    /// From the swap record: the invocation svc-swap started.
    pub expect_invocation: Option<String>,
    /// The MainPID last seen (for a local /proc watch).
    pub main_pid: Option<u32>,
}

/// A unit's properties, as `systemctl show` prints them.
pub type Props = BTreeMap<String, String>;

/// `systemctl show` output as a map.
pub fn parse_show(s: &str) -> Props {
    s.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl UnitWatch {
    pub fn new(unit: &str, transport: Arc<dyn Transport>) -> Self {
        UnitWatch {
            unit: unit.to_string(),
            transport,
            next: Instant::now(),
            base: None,
            expect_invocation: None,
            main_pid: None,
        }
    }

    fn show(&self) -> Result<Props, Exit> {
        let argv = ["systemctl", "show", "-p", PROPS, &self.unit].map(String::from);
        let out = self
            .transport
            .run_idempotent(&argv, None, CMD_TIMEOUT)
            .map_err(|e| transport_error(&*self.transport, e))?;
        if !out.success() {
            return Err(Exit::new(
                exit::TRANSPORT_ERROR,
                anyhow::anyhow!(
                    "systemctl show {} ({}): {}",
                    self.unit,
                    self.transport.describe(),
                    out.stderr_str().trim()
                ),
            ));
        }
        Ok(parse_show(&out.stdout_str()))
    }

    pub fn poll(&mut self, now: Instant) -> Result<Option<Event>, Exit> {
        if now < self.next {
            return Ok(None);
        }
        self.next = now + EVERY;
        let m = self.show()?;
        let get = |k: &str| m.get(k).map(String::as_str).unwrap_or("");
        if get("LoadState") == "not-found" {
            return Err(Exit::new(
                exit::FAILURE,
                anyhow::anyhow!(
                    "unit {}: not found ({})",
                    self.unit,
                    self.transport.describe()
                ),
            ));
        }
        let nrestarts: u64 = get("NRestarts").parse().unwrap_or(0);
        let inv = get("InvocationID").to_string();
        self.main_pid = get("MainPID").parse().ok().filter(|&p| p > 0);
        let (base_n, base_inv) = self
            .base
            .get_or_insert_with(|| {
                let inv0 = self.expect_invocation.clone().unwrap_or(inv.clone());
                (nrestarts, inv0)
            })
            .clone();
        let active = get("ActiveState");
        let sub = get("SubState");
        let result = get("Result");
        let main = main_status(get("ExecMainCode"), get("ExecMainStatus"));
        if result == "start-limit-hit" {
            return Ok(Some(Event::RestartLoop {
                reason: format!(
                    "unit {} hit its start limit (restarted {nrestarts} times)",
                    self.unit
                ),
            }));
        }
        if active == "failed" {
            return Ok(Some(Event::Crashed {
                reason: format!("unit {} failed (Result={result}; {main})", self.unit),
                oom: result == "oom-kill",
            }));
        }
        if nrestarts > base_n || sub == "auto-restart" {
            return Ok(Some(Event::RestartLoop {
                reason: format!(
                    "unit {} is restarting (NRestarts {base_n} -> {nrestarts}, \
                     Result={result}; {main})",
                    self.unit
                ),
            }));
        }
        if !inv.is_empty() && !base_inv.is_empty() && inv != base_inv {
            return Ok(Some(Event::RestartLoop {
                reason: format!(
                    "unit {} was started again (new InvocationID {inv})",
                    self.unit
                ),
            }));
        }
        if matches!(active, "inactive" | "deactivating") {
            return Ok(Some(Event::Crashed {
                reason: format!(
                    "unit {} is {active} ({sub}; Result={result}; {main})",
                    self.unit
                ),
                oom: result == "oom-kill",
            }));
        }
        Ok(None)
    }

    /// Poll at once, whatever the schedule.
    pub fn poll_now(&mut self) -> Result<Option<Event>, Exit> {
        self.next = Instant::now();
        self.poll(Instant::now())
    }

    /// The unit's last journal lines; empty when journalctl fails.
    pub fn journal_tail(&self) -> Vec<String> {
        let argv = [
            "journalctl",
            "-u",
            &self.unit,
            "-n",
            "20",
            "--no-pager",
            "-o",
            "cat",
        ]
        .map(String::from);
        match self.transport.run_idempotent(&argv, None, CMD_TIMEOUT) {
            Ok(o) => o
                .stdout_str()
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with("-- "))
                .map(String::from)
                .collect(),
            Err(_) => Vec::new(),
        }
    }
}

/// ExecMainCode (1 exited, 2 killed, 3 dumped) and ExecMainStatus in words.
fn main_status(code: &str, status: &str) -> String {
    let s: i32 = status.parse().unwrap_or(0);
    match code {
        "1" => format!("main process exited with status {s}"),
        "2" | "3" => describe_status(Some(s)).replace("was", "main process was"),
        _ => "main process not exited".into(),
    }
}

fn transport_error(t: &dyn Transport, e: TransportError) -> Exit {
    Exit::new(
        exit::TRANSPORT_ERROR,
        anyhow::anyhow!("watching the unit ({}): {e}", t.describe()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use sweepkit::transport::CmdOutput;

    /// Answers `systemctl show` from a script of states.
    struct Fake(Mutex<Vec<&'static str>>);
    impl Transport for Fake {
        fn run(
            &self,
            argv: &[String],
            _: Option<&[u8]>,
            _: Duration,
        ) -> Result<CmdOutput, TransportError> {
            let mut v = self.0.lock().unwrap();
            let out = if argv[0] == "journalctl" {
                "line one\nKilled\n"
            } else if v.len() > 1 {
                v.remove(0)
            } else {
                v[0]
            };
            Ok(CmdOutput {
                status: Some(0),
                stdout: out.as_bytes().to_vec(),
                stderr: Vec::new(),
            })
        }
        fn describe(&self) -> String {
            "fake".into()
        }
    }

    fn watch(states: Vec<&'static str>) -> UnitWatch {
        UnitWatch::new("m.service", Arc::new(Fake(Mutex::new(states))))
    }

    fn poll_all(w: &mut UnitWatch, n: usize) -> Option<Event> {
        for _ in 0..n {
            w.next = Instant::now();
            if let Some(e) = w.poll(Instant::now()).unwrap() {
                return Some(e);
            }
        }
        None
    }

    const ACT: &str = "LoadState=loaded\nActiveState=activating\nSubState=start-post\nNRestarts=0\nInvocationID=aa\nResult=success\n";

    #[test]
    fn failed_unit_is_a_crash_with_journal() {
        let mut w = watch(vec![
            ACT,
            "ActiveState=failed\nSubState=failed\nResult=oom-kill\nNRestarts=0\nInvocationID=aa\nExecMainCode=2\nExecMainStatus=9\n",
        ]);
        match poll_all(&mut w, 3) {
            Some(Event::Crashed { reason, oom: true }) => {
                assert!(reason.contains("Result=oom-kill"), "{reason}");
                assert!(reason.contains("signal 9"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(w.journal_tail(), ["line one", "Killed"]);
    }

    #[test]
    fn rising_restarts_or_new_invocation_is_a_loop() {
        let mut w = watch(vec![
            ACT,
            "ActiveState=activating\nNRestarts=1\nInvocationID=bb\n",
        ]);
        assert!(matches!(
            poll_all(&mut w, 3),
            Some(Event::RestartLoop { .. })
        ));
        let mut w = watch(vec![
            ACT,
            "ActiveState=active\nNRestarts=0\nInvocationID=bb\n",
        ]);
        assert!(matches!(
            poll_all(&mut w, 3),
            Some(Event::RestartLoop { .. })
        ));
        let mut w = watch(vec![ACT]);
        w.expect_invocation = Some("zz".into());
        assert!(matches!(
            poll_all(&mut w, 1),
            Some(Event::RestartLoop { .. })
        ));
        let mut w = watch(vec![ACT]);
        assert_eq!(poll_all(&mut w, 3), None);
    }

    #[test]
    fn missing_unit_is_an_error() {
        let mut w = watch(vec!["LoadState=not-found\nActiveState=inactive\n"]);
        let e = w.poll(Instant::now()).unwrap_err();
        assert_eq!(e.code, exit::FAILURE);
        let msg = e.error.expect("a message").to_string();
        assert!(msg.contains("not found"), "{msg}");
    }
}
