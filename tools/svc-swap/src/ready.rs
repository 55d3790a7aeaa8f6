//! `--ready-cmd`: a user-given command line (typically `wait-ready ...`),
//! run locally with `sh -c` because the user wrote it as shell text. It gets
//! the swap record on stdin (so wait-ready can read it as upstream) and the
//! new instance in SWEEPKIT_* variables; its stdout goes to our stderr so
//! that our stdout keeps carrying one record.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The transport context a ready command needs to reach what svc-swap
/// reached: SWEEPKIT_SSH, SWEEPKIT_SSH_KEY (first key), SWEEPKIT_KNOWN_HOSTS,
/// SWEEPKIT_EXEC_PREFIX, SWEEPKIT_PORT. The record on stdin carries the
/// same in `target`, which is what wait-ready reads.
pub fn context_env(t: &sweepkit::records::ServiceTarget) -> Vec<(String, String)> {
    let mut v = Vec::new();
    let mut put = |k: &str, val: Option<String>| {
        if let Some(val) = val {
            v.push((format!("SWEEPKIT_{k}"), val));
        }
    };
    put("SSH", t.ssh.clone());
    put("SSH_KEY", t.ssh_key.first().cloned());
    put("KNOWN_HOSTS", t.known_hosts.clone());
    put("EXEC_PREFIX", t.exec_prefix.clone());
    put("PORT", t.port.map(|p| p.to_string()));
    v
}

/// Why the ready command did not say ready.
#[derive(Debug, thiserror::Error)]
pub enum NotReady {
    #[error("--ready-cmd: {0}")]
    Stderr(std::io::Error),
    #[error("--ready-cmd: cannot run sh: {0}")]
    Spawn(std::io::Error),
    #[error("{0}")]
    Wait(std::io::Error),
    #[error("ready command exited {0}")]
    Exited(i32),
    #[error("ready command was killed by a signal")]
    Killed,
    #[error("ready command still running after {0:?}")]
    TimedOut(Duration),
}

/// Run `cmd`; `Ok(())` when it exits 0.
pub fn run(
    cmd: &str,
    env: &[(String, String)],
    record: &[u8],
    timeout: Duration,
) -> Result<(), NotReady> {
    use std::os::unix::process::CommandExt;
    let stderr = std::os::fd::AsFd::as_fd(&std::io::stderr())
        .try_clone_to_owned()
        .map_err(NotReady::Stderr)?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::from(stderr))
        .process_group(0)
        .spawn()
        .map_err(NotReady::Spawn)?;
    if let Some(mut pipe) = child.stdin.take() {
        let bytes = record.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().map_err(NotReady::Wait)? {
            return match st.code() {
                Some(0) => Ok(()),
                Some(c) => Err(NotReady::Exited(c)),
                None => Err(NotReady::Killed),
            };
        }
        if t0.elapsed() >= timeout {
            // Its own process group: end the whole command line we started.
            // SAFETY: kill(2) with a negative pid signals that group only.
            unsafe {
                libc::kill(-(child.id() as i32), libc::SIGKILL);
            }
            let _ = child.wait();
            return Err(NotReady::TimedOut(timeout));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_env_and_stdin() {
        let env = [("SWEEPKIT_PORT".to_string(), "1234".to_string())];
        assert!(run(
            "read l; [ \"$l\" = rec ] && [ $SWEEPKIT_PORT = 1234 ]",
            &env,
            b"rec\n",
            Duration::from_secs(5)
        )
        .is_ok());
        assert_eq!(
            run("exit 7", &[], b"", Duration::from_secs(5))
                .unwrap_err()
                .to_string(),
            "ready command exited 7"
        );
        let t0 = Instant::now();
        assert!(run("sleep 5", &[], b"", Duration::from_millis(200)).is_err());
        assert!(t0.elapsed() < Duration::from_secs(3));
    }
}
