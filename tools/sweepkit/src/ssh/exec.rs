//! One far-side command on its own channel of the shared session, run
//! non-blocking: stdin written while stdout and stderr are read in turn (a
//! full stderr can never stall a stdout read), bounded by a deadline, and the
//! exit status taken from a sentinel the far side's shell prints after the
//! command, read only once the channel has closed. A shell that died by a
//! signal counts as the command's answer only on a session still alive.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use super::nonblocking::{self, Stop};
use super::Conn;
use crate::transport::{CmdOutput, TransportError};

/// Printed on stderr after the command by the far side's shell; libssh2
/// reads a missing exit status as 0, a missing sentinel cannot pass as 0.
const SENTINEL: &[u8] = b"\n__sweepkit_rc=";

/// Run `line` (already shell-quoted) and collect its output and status;
/// `started` is set once the far side has accepted the command.
pub(crate) fn run(
    conn: &Conn,
    line: &str,
    stdin: Option<&[u8]>,
    deadline: Instant,
    timeout: Duration,
    started: &mut bool,
) -> Result<CmdOutput, TransportError> {
    if line.trim().is_empty() {
        return Err(TransportError::Spawn {
            program: String::new(),
            err: std::io::Error::new(ErrorKind::InvalidInput, "empty argv"),
        });
    }
    let (sess, fd) = (&conn.sess, conn.fd());
    let stop = |what: &str, s: Stop| match s {
        Stop::Deadline => TransportError::Timeout(timeout),
        Stop::Err(e) => TransportError::Connect(format!("{what}: {e}")),
    };
    let mut ch = nonblocking::retry(sess, fd, deadline, || sess.channel_session())
        .map_err(|s| stop("opening a channel", s))?;
    let full = format!("{line}; printf '\\n__sweepkit_rc=%d\\n' \"$?\" >&2");
    nonblocking::retry(sess, fd, deadline, || ch.exec(&full)).map_err(|s| stop("exec", s))?;
    *started = true;

    let mut pending: &[u8] = stdin.unwrap_or(&[]);
    let mut eof_sent = false;
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (mut out_done, mut err_done) = (false, false);
    let mut errs = ch.stderr();
    let mut buf = vec![0u8; 64 * 1024];
    while !(out_done && err_done) {
        let mut progress = false;
        if !eof_sent && !pending.is_empty() {
            match ch.write(pending) {
                Ok(n) => {
                    pending = &pending[n..];
                    progress = true;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                // The command exited without reading all of its stdin.
                Err(_) => pending = &[],
            }
        }
        if !eof_sent && pending.is_empty() {
            match ch.send_eof() {
                Ok(()) => {
                    eof_sent = true;
                    progress = true;
                }
                Err(e) if nonblocking::is_again(&e) => {}
                Err(_) => eof_sent = true,
            }
        }
        progress |= drain(&mut ch, &mut buf, &mut out, &mut out_done)?;
        progress |= drain(&mut errs, &mut buf, &mut err, &mut err_done)?;
        let now = Instant::now();
        if now >= deadline {
            return Err(TransportError::Timeout(timeout));
        }
        if !progress {
            nonblocking::wait_session(sess, fd, (deadline - now).min(Duration::from_millis(200)));
        }
    }
    nonblocking::retry(sess, fd, deadline, || ch.close())
        .map_err(|s| stop("closing the channel", s))?;
    nonblocking::retry(sess, fd, deadline, || ch.wait_close())
        .map_err(|s| stop("closing the channel", s))?;
    let status = match split_status(&mut err) {
        Some(rc) => Some(rc),
        None => {
            // No sentinel: the shell was replaced (`exec`) or killed, or the
            // connection dropped. Only a real non-zero status or a signal
            // says anything; a bare 0 may be libssh2's default.
            let signal = ch.exit_signal().ok().and_then(|s| s.exit_signal);
            match (ch.exit_status(), signal) {
                (Ok(rc), _) if rc != 0 => Some(rc),
                (_, Some(sig)) => {
                    killed_on_a_live_session(sess, fd, &sig)?;
                    None
                }
                _ => {
                    return Err(TransportError::Connect(
                        "the command ended without an exit status (connection lost \
                         or the far side's shell died)"
                            .into(),
                    ))
                }
            }
        }
    };
    Ok(CmdOutput {
        status,
        stdout: out,
        stderr: err,
    })
}

/// How long a live sshd may take to answer the probe of
/// `killed_on_a_live_session`: it answers a channel open at once.
const PROBE: Duration = Duration::from_secs(5);
/// libssh2's LIBSSH2_ERROR_CHANNEL_FAILURE: the server refused a channel.
const CHANNEL_FAILURE: i32 = -21;

/// A command whose shell died by `sig` is the command's own answer only if
/// the session outlived it. When sshd goes down (`systemctl stop ssh`
/// signals the whole cgroup; a kill of its processes), the far side's shell
/// dies with it and sshd may report that signal just before the socket
/// closes: that is a lost session, which an idempotent command rides out
/// by reconnecting. So ask the session for a new channel (a round trip to
/// sshd) and close it: an error or no answer in `PROBE` is a lost session.
fn killed_on_a_live_session(
    sess: &ssh2::Session,
    fd: std::os::unix::io::RawFd,
    sig: &str,
) -> Result<(), TransportError> {
    let deadline = Instant::now() + PROBE;
    let probe =
        nonblocking::retry(sess, fd, deadline, || sess.channel_session()).and_then(|mut ch| {
            nonblocking::retry(sess, fd, deadline, || ch.close())?;
            nonblocking::retry(sess, fd, deadline, || ch.wait_close())
        });
    let why = match probe {
        Ok(()) => return Ok(()),
        // sshd refused the channel (MaxSessions): an answer all the same.
        Err(Stop::Err(e)) if e.code() == ssh2::ErrorCode::Session(CHANNEL_FAILURE) => return Ok(()),
        Err(Stop::Deadline) => format!("no answer in {PROBE:?}"),
        Err(Stop::Err(e)) => e.to_string(),
    };
    Err(TransportError::Connect(format!(
        "session lost: the command ended by signal {sig} and the session \
         did not answer after it ({why})"
    )))
}

/// Read what one stream has now; true if anything happened.
fn drain(
    r: &mut impl Read,
    buf: &mut [u8],
    into: &mut Vec<u8>,
    done: &mut bool,
) -> Result<bool, TransportError> {
    if *done {
        return Ok(false);
    }
    let mut progress = false;
    loop {
        match r.read(buf) {
            Ok(0) => {
                *done = true;
                return Ok(true);
            }
            Ok(n) => {
                into.extend_from_slice(&buf[..n]);
                progress = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(progress),
            Err(e) => return Err(TransportError::Connect(format!("reading output: {e}"))),
        }
    }
}

/// Take the sentinel off the end of stderr and return the status it carries.
fn split_status(stderr: &mut Vec<u8>) -> Option<i32> {
    let pos = stderr
        .windows(SENTINEL.len())
        .rposition(|w| w == SENTINEL)?;
    let tail = stderr[pos + SENTINEL.len()..].strip_suffix(b"\n")?;
    let rc = std::str::from_utf8(tail).ok()?.parse::<i32>().ok()?;
    stderr.truncate(pos);
    Some(rc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinel_is_split_off_exactly() {
        let mut e = b"warn: x\n__sweepkit_rc=3\n".to_vec();
        assert_eq!(split_status(&mut e), Some(3));
        assert_eq!(e, b"warn: x");
        let mut e = b"no newline at end\n\n__sweepkit_rc=0\n".to_vec();
        assert_eq!(split_status(&mut e), Some(0));
        assert_eq!(e, b"no newline at end\n");
        let mut e = b"\n__sweepkit_rc=1\ntrailing".to_vec();
        assert_eq!(split_status(&mut e), None, "sentinel must be last");
        let mut e = b"nothing".to_vec();
        assert_eq!(split_status(&mut e), None);
    }
}
