//! Watching the server while waiting, so a crash ends the wait at once
//! instead of at the timeout: its process (`--pid`), its log (`--log`) and
//! its systemd unit (`--unit`), its container (`--container`), locally or
//! through the shared Transport.

pub mod container;
pub mod log;
pub mod pid;
pub mod unit;

use std::sync::Arc;
use std::time::{Duration, Instant};

use sweepkit::exit::Exit;
use sweepkit::transport::Transport;

/// Something a watcher saw that ends the wait.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The process exited, the unit failed, or the log shows a fatal line.
    Crashed { reason: String, oom: bool },
    /// systemd restarted the service (new invocation, NRestarts rising).
    RestartLoop { reason: String },
}

/// Where a watched thing lives.
#[derive(Clone)]
pub enum Place {
    Local,
    /// Through a transport (exec prefix or SSH): read with commands.
    Remote(Arc<dyn Transport>),
}

/// How long a far-side command may take.
pub const CMD_TIMEOUT: Duration = Duration::from_secs(5);

/// All watchers of one wait.
#[derive(Default)]
pub struct Watchers {
    pub pid: Option<pid::PidWatch>,
    pub log: Option<log::LogWatch>,
    pub unit: Option<unit::UnitWatch>,
    pub container: Option<container::ContainerWatch>,
}

impl Watchers {
    /// True when something is watched, so "refused" may mean "loading".
    pub fn any(&self) -> bool {
        self.pid.is_some() || self.log.is_some() || self.unit.is_some() || self.container.is_some()
    }

    /// Poll the watchers that are due. Errors are the watcher's own
    /// (cannot run systemctl): fatal, with the exit code given.
    pub fn poll(&mut self, now: Instant) -> Result<Option<Event>, Exit> {
        // The log first: when the process died of an OOM the log says so,
        // and its lines make the better reason.
        let log_event = match &mut self.log {
            Some(l) => l.poll(now),
            None => None,
        };
        let pid_event = match &mut self.pid {
            Some(p) => p.poll(now),
            None => None,
        };
        let mut unit_event = match &mut self.unit {
            Some(u) => u.poll(now)?,
            None => None,
        };
        // The process died but systemd may restart it: let the unit say
        // whether this is a crash or a restart loop (up to a second).
        if let (Some(_), None, Some(u)) = (&pid_event, &unit_event, &mut self.unit) {
            let until = Instant::now() + Duration::from_secs(1);
            while unit_event.is_none() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(100));
                unit_event = u.poll_now()?;
            }
        }
        let ctr_event = match &mut self.container {
            Some(c) => c.poll(now)?,
            None => None,
        };
        let ev = unit_event.or(ctr_event).or(pid_event).or(log_event);
        Ok(ev.map(|e| self.refine(e)))
    }

    /// A crash whose log tail shows an OOM is an OOM.
    fn refine(&mut self, e: Event) -> Event {
        match e {
            Event::Crashed { reason, oom } => {
                // A traceback is judged fatal at its first line; its
                // exception line (what was wrong) comes last.
                if let Some(l) = &mut self.log {
                    l.settle();
                }
                let tail = self.tail();
                let oom = oom || tail.iter().any(|l| log::is_oom(l));
                let reason = log::name_the_exception(reason, &tail);
                Event::Crashed { reason, oom }
            }
            other => other,
        }
    }

    /// The last log lines: the `--log` file's, else the unit's journal.
    pub fn tail(&mut self) -> Vec<String> {
        if let Some(l) = &mut self.log {
            // Read what the dying process wrote last.
            l.poll(Instant::now() + Duration::from_secs(3600));
            let t = l.tail();
            if !t.is_empty() {
                return t;
            }
        }
        if let Some(u) = &mut self.unit {
            return u.journal_tail();
        }
        if let Some(c) = &self.container {
            return c.logs_tail();
        }
        Vec::new()
    }
}
