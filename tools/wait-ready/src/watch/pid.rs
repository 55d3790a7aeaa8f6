//! `--pid`: is the process still there? Read from /proc/PID/stat, because
//! kill(pid, 0) succeeds on a zombie, and a zombie's stat also carries its
//! exit status (field 52), which is how we report "exited with status 1"
//! for a process that is not our child.

use std::time::{Duration, Instant};

use sweepkit::proc_stat::ProcStat;

use super::{Event, Place, CMD_TIMEOUT};

/// Local checks are a file read: cheap enough for every tick.
const LOCAL_EVERY: Duration = Duration::from_millis(0);
/// Remote checks run a command: twice a second.
const REMOTE_EVERY: Duration = Duration::from_millis(500);

pub struct PidWatch {
    pub pid: u32,
    place: Place,
    next: Instant,
}

/// What /proc said about a process.
#[derive(Debug, PartialEq)]
pub enum State {
    Alive,
    /// Gone or a zombie; the wait status when a zombie showed it.
    Dead(Option<i32>),
}

impl PidWatch {
    pub fn new(pid: u32, place: Place) -> Self {
        PidWatch {
            pid,
            place,
            next: Instant::now(),
        }
    }

    pub fn poll(&mut self, now: Instant) -> Option<Event> {
        if now < self.next {
            return None;
        }
        let (state, every) = match &self.place {
            Place::Local => (local_state(self.pid), LOCAL_EVERY),
            Place::Remote(t) => {
                let argv = ["cat".to_string(), format!("/proc/{}/stat", self.pid)];
                let st = match t.run_idempotent(&argv, None, CMD_TIMEOUT) {
                    Ok(o) if o.success() => parse_stat(&o.stdout_str()),
                    Ok(o) if o.stderr_str().contains("No such file") => State::Dead(None),
                    // The transport hiccuped: no verdict this time.
                    _ => State::Alive,
                };
                (st, REMOTE_EVERY)
            }
        };
        self.next = now + every;
        match state {
            State::Alive => None,
            State::Dead(status) => Some(Event::Crashed {
                reason: format!("process {} {}", self.pid, describe_status(status)),
                // SIGKILL is often the OOM killer, but not always: the log decides.
                oom: false,
            }),
        }
    }
}

fn local_state(pid: u32) -> State {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => parse_stat(&s),
        Err(_) if std::path::Path::new("/proc/self/stat").exists() => State::Dead(None),
        // No /proc: fall back to kill(pid, 0).
        Err(_) => {
            // SAFETY: signal 0 only checks that the pid exists.
            let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
            if r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
                State::Alive
            } else {
                State::Dead(None)
            }
        }
    }
}

/// What /proc/PID/stat says: a text that is no stat is no verdict, one
/// cut after the command name is a process gone.
pub fn parse_stat(s: &str) -> State {
    let Some(stat) = ProcStat::parse(s) else {
        return State::Alive;
    };
    match stat.state() {
        Some(_) if stat.is_dead() => State::Dead(stat.exit_code()),
        Some(_) => State::Alive,
        None => State::Dead(None),
    }
}

/// "exited with status 1", "was killed by signal 9", "exited".
pub fn describe_status(status: Option<i32>) -> String {
    match status {
        None => "exited".into(),
        Some(w) if w & 0x7f == 0 => format!("exited with status {}", (w >> 8) & 0xff),
        Some(w) => format!("was killed by signal {}", w & 0x7f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_states() {
        let alive = "123 (python3 (x) y) S 1 2 3";
        assert_eq!(parse_stat(alive), State::Alive);
        let mut zombie = String::from("9 (llm-sim) Z");
        for i in 4..=51 {
            zombie.push_str(&format!(" {i}"));
        }
        zombie.push_str(" 256\n");
        assert_eq!(parse_stat(&zombie), State::Dead(Some(256)));
        assert_eq!(describe_status(Some(256)), "exited with status 1");
        assert_eq!(describe_status(Some(9)), "was killed by signal 9");
    }

    #[test]
    fn own_process_is_alive_and_a_reaped_child_is_not() {
        let mut w = PidWatch::new(std::process::id(), Place::Local);
        assert_eq!(w.poll(Instant::now()), None);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let mut w = PidWatch::new(pid, Place::Local);
        assert!(matches!(
            w.poll(Instant::now()),
            Some(Event::Crashed { .. })
        ));
    }

    #[test]
    fn zombie_child_reports_its_exit_status() {
        let child = std::process::Command::new("sh")
            .args(["-c", "exit 3"])
            .spawn()
            .unwrap();
        let pid = child.id();
        // Not reaped: it stays a zombie until we wait.
        let t0 = Instant::now();
        let mut w = PidWatch::new(pid, Place::Local);
        loop {
            if let Some(Event::Crashed { reason, .. }) = w.poll(Instant::now()) {
                assert_eq!(reason, format!("process {pid} exited with status 3"));
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "never died");
            std::thread::sleep(Duration::from_millis(10));
        }
        drop(child);
    }
}
