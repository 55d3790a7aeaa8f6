//! Non-blocking libssh2 helpers: recognise EAGAIN, wait on the session's
//! socket with poll(2) in the direction libssh2 is blocked on, and retry an
//! operation until a deadline. A blocking libssh2 call holds the session for
//! as long as it waits (and forever without a timeout), so every command and
//! tunnel here runs non-blocking.

use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

use ssh2::{BlockDirections, ErrorCode, Session};

/// libssh2's LIBSSH2_ERROR_EAGAIN.
const EAGAIN: i32 = -37;
/// libssh2's LIBSSH2_ERROR_TIMEOUT (blocking calls under `set_timeout`).
pub(crate) const TIMEOUT: i32 = -9;

/// True when libssh2 would block: try again after the socket is ready.
pub(crate) fn is_again(e: &ssh2::Error) -> bool {
    e.code() == ErrorCode::Session(EAGAIN)
}

/// Why a retried operation stopped.
pub(crate) enum Stop {
    Deadline,
    Err(ssh2::Error),
}

/// Wait until `fd` is ready for what libssh2 waits on (reading when unsure),
/// at most `max`.
pub(crate) fn wait_session(sess: &Session, fd: RawFd, max: Duration) {
    let events = match sess.block_directions() {
        BlockDirections::Outbound => libc::POLLOUT,
        BlockDirections::Both => libc::POLLIN | libc::POLLOUT,
        _ => libc::POLLIN,
    };
    let mut fds = [libc::pollfd {
        fd,
        events,
        revents: 0,
    }];
    poll(&mut fds, max);
    quickack(fd);
}

/// Acknowledge the next segments at once. sshd leaves Nagle on for
/// sessions without a pty, so each small packet after the first waits for
/// our ACK, which Linux delays by up to 40 ms: that alone made a tunnelled
/// request take 50 ms instead of well under 1. The flag does not stick, so
/// it is set again after every wait.
pub(crate) fn quickack(fd: RawFd) {
    let one: libc::c_int = 1;
    // SAFETY: a plain setsockopt on a socket fd we own, with a pointer to a
    // live c_int and its size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_QUICKACK,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// poll(2) over `fds` for at most `max` (EINTR counts as a wake-up).
pub(crate) fn poll(fds: &mut [libc::pollfd], max: Duration) {
    let ms = max.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `fds` is a valid, exclusively borrowed slice of pollfd for the
    // duration of the call, and its length is passed alongside.
    unsafe {
        libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms);
    }
}

/// Run `op` until it stops returning EAGAIN or `deadline` passes.
pub(crate) fn retry<T>(
    sess: &Session,
    fd: RawFd,
    deadline: Instant,
    mut op: impl FnMut() -> Result<T, ssh2::Error>,
) -> Result<T, Stop> {
    loop {
        match op() {
            Ok(v) => return Ok(v),
            Err(e) if is_again(&e) => {}
            Err(e) => return Err(Stop::Err(e)),
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(Stop::Deadline);
        }
        wait_session(sess, fd, (deadline - now).min(Duration::from_millis(100)));
    }
}
