//! Opening an SSH session: a TCP connect, or a direct-tcpip channel through
//! a ProxyJump host (a session of its own, pumped by forward.rs onto one
//! end of a socketpair whose other end this session uses as its socket);
//! then handshake, host key and authentication. Transient faults (refused,
//! reset, timed out) are retried with bounded exponential backoff until a
//! budget runs out; authentication and host-key failures never are.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use ssh2::Session;

use super::forward::Forwarder;
use super::{auth, known_hosts, nonblocking, Conn, Sock, SshConfig, SshTarget};
use crate::transport::TransportError;

/// The longest pause between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// `open_session`, retried while it fails transiently and `until` allows
/// another attempt (250 ms, doubling to 2 s). One line on stderr when the
/// first attempt fails, one when a later attempt succeeds.
pub(crate) fn open_retrying(cfg: &SshConfig, until: Instant) -> Result<Conn, TransportError> {
    let t0 = Instant::now();
    let mut delay = Duration::from_millis(250);
    let mut failures = 0;
    loop {
        match open_session(cfg) {
            Ok(c) => {
                if failures > 0 {
                    crate::diag::line(format!(
                        "sweepkit: ssh {}: connected after {} attempts ({:.1}s)",
                        cfg.target,
                        failures + 1,
                        t0.elapsed().as_secs_f64()
                    ));
                }
                return Ok(c);
            }
            Err(e) if e.is_transient() && Instant::now() + delay < until => {
                if failures == 0 {
                    let left = until.saturating_duration_since(Instant::now());
                    crate::diag::warn(format!(
                        "{e}; retrying for up to {:.0}s",
                        left.as_secs_f64()
                    ));
                }
                failures += 1;
                std::thread::sleep(delay);
                delay = (delay * 2).min(MAX_BACKOFF);
            }
            Err(e) => return Err(e),
        }
    }
}

/// A stream to the target through `j` (itself perhaps behind another
/// jump): the jump's own session is opened, host-key checked and
/// authenticated under its own name, then asked for a direct-tcpip channel
/// to the target's host:port as the jump host resolves it.
fn via_jump(cfg: &SshConfig, j: &SshConfig) -> Result<(UnixStream, Forwarder), TransportError> {
    let t = &cfg.target;
    let pre = format!("ProxyJump {} for {t}: ", j.target);
    let fwd = Forwarder::start(j.clone()).map_err(|e| context(e, &pre))?;
    let opening = fwd.request(&t.host, t.port).map_err(|e| context(e, &pre))?;
    let s = opening.wait(cfg.connect_timeout).map_err(|e| match e {
        TransportError::Timeout(d) => TransportError::Connect(format!(
            "{pre}no channel to {}:{} within {d:?}",
            t.host, t.port
        )),
        e => context(e, &pre),
    })?;
    Ok((s, fwd))
}

/// `e` with `pre` in front of its message, of the same kind.
fn context(e: TransportError, pre: &str) -> TransportError {
    use TransportError as E;
    match e {
        E::Connect(m) => E::Connect(format!("{pre}{m}")),
        E::Auth(m) => E::Auth(format!("{pre}{m}")),
        E::HostKey(m) => E::HostKey(format!("{pre}{m}")),
        E::Config(m) => E::Config(format!("{pre}{m}")),
        E::Resolve(m) => E::Resolve(format!("{pre}{m}")),
        E::Io(e) => E::Connect(format!("{pre}{e}")),
        other => other,
    }
}

/// Connect, pin the host-key method, handshake, check known_hosts,
/// authenticate; the session comes back non-blocking.
pub(crate) fn open_session(cfg: &SshConfig) -> Result<Conn, TransportError> {
    let t = &cfg.target;
    let deadline = Instant::now() + cfg.connect_timeout;
    let (sock, jump) = match &cfg.jump {
        None => {
            let s = tcp_connect(t, cfg.connect_timeout)?;
            let _ = s.set_nodelay(true);
            (Sock::Tcp(s), None)
        }
        Some(j) => {
            let (s, fwd) = via_jump(cfg, j)?;
            (Sock::Unix(s), Some(fwd))
        }
    };
    let mut sess = Session::new().map_err(|e| TransportError::Connect(format!("ssh: {e}")))?;
    sess.set_tcp_stream(sock.try_clone()?);
    sess.set_timeout(ms(cfg.connect_timeout));
    let files = cfg.host_key_files();
    let on_file = known_hosts::load(&sess, &files, &t.host, t.port)
        .map_err(|e| TransportError::HostKey(format!("{t}: reading known_hosts: {e}")))?;
    let pinned = known_hosts::pin_host_key_methods(&sess, &on_file.types);
    if let Err(e) = sess.handshake() {
        let why = if e.code() == ssh2::ErrorCode::Session(nonblocking::TIMEOUT) {
            format!(
                "ssh {t}: handshake timed out after {:?}",
                cfg.connect_timeout
            )
        } else {
            format!("ssh {t}: handshake failed: {e}")
        };
        if pinned && e.code() == ssh2::ErrorCode::Session(-5) {
            // KEX failure with the methods pinned: the server no longer has a
            // key of the type on file, which is a changed host key.
            return Err(TransportError::HostKey(format!(
                "{t}: the server offers no host key of the type on file ({}) in {}; \
                 if the host was reinstalled, remove its line (ssh-keygen -R '{}' -f {})",
                on_file.types.join(", "),
                files.user.display(),
                known_hosts::host_pattern(&t.host, t.port),
                files.user.display()
            )));
        }
        return Err(TransportError::Connect(why));
    }
    known_hosts::check_host_key(cfg, &sess, &on_file, &files)?;
    auth::authenticate(cfg, &sess, deadline)?;
    sess.set_timeout(0);
    sess.set_blocking(false);
    Ok(Conn {
        sess,
        sock,
        _jump: jump,
    })
}

fn ms(d: Duration) -> u32 {
    d.as_millis().clamp(1, u32::MAX as u128) as u32
}

fn tcp_connect(t: &SshTarget, timeout: Duration) -> Result<TcpStream, TransportError> {
    let addrs: Vec<SocketAddr> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| TransportError::Resolve(format!("ssh {t}: cannot resolve host: {e}")))?
        .collect();
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(TransportError::Connect(match last {
        Some(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            format!("ssh {t}: connect timed out after {timeout:?}")
        }
        Some(e) => format!("ssh {t}: connect: {e}"),
        None => format!("ssh {t}: host has no address"),
    }))
}
