//! The SSH transport (feature `ssh`): far-side commands over one libssh2
//! session (a channel per command), checked against known_hosts, key auth
//! only (every agent identity, then key files; never a password prompt), and
//! TCP tunnels over direct-tcpip for probes of ports that listen only on the
//! far side's localhost. ANCHORS.md's "ssh2 (0.9) pitfalls" are the spec.
//! `~/.ssh/config` (config.rs) and ProxyJump (connect.rs) as OpenSSH does
//! them; transient faults retried within `SshConfig::retry`.

mod auth;
mod config;
mod connect;
mod dest;
mod exec;
mod forward;
mod known_hosts;
mod nonblocking;

use std::fmt;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ssh2::Session;

pub use config::ConfigFile;
pub(crate) use connect::open_session;
pub use dest::{local_user, DestError, SshDest};

use crate::transport::{shell_join, CmdOutput, Stream, Transport, TransportError};

/// Where to connect: `user@host[:port]` (`user@[v6addr]:port` for IPv6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: String,
    pub host: String,
    pub port: u16,
}

impl FromStr for SshTarget {
    type Err = DestError;

    /// Parse `[user@]host[:port]` as written, without a config file:
    /// the local user and port 22 when not given (as ssh does).
    fn from_str(s: &str) -> Result<Self, DestError> {
        let d: SshDest = s.parse()?;
        let user = d
            .user
            .or_else(local_user)
            .ok_or_else(|| DestError::NoUser(s.into()))?;
        Ok(SshTarget {
            user,
            host: d.host,
            port: d.port.unwrap_or(22),
        })
    }
}

impl fmt::Display for SshTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 22 {
            write!(f, "{}@{host}", self.user)
        } else {
            write!(f, "{}@{host}:{}", self.user, self.port)
        }
    }
}

/// Default budget for retrying transient faults: rides out an sshd
/// restart or a short network outage.
pub const DEFAULT_RETRY: Duration = Duration::from_secs(30);

/// Everything needed to open (and reopen) a session.
#[derive(Debug, Clone)]
pub struct SshConfig {
    pub target: SshTarget,
    /// Private key files tried after the agent's keys; empty means the
    /// defaults `~/.ssh/id_ed25519`, `~/.ssh/id_ecdsa`, `~/.ssh/id_rsa`.
    pub key_files: Vec<PathBuf>,
    /// The known_hosts file checked and (with `accept_new_host_key`) added
    /// to; `None` means `~/.ssh/known_hosts` (plus the read-only
    /// `/etc/ssh/ssh_known_hosts`).
    pub known_hosts: Option<PathBuf>,
    /// OpenSSH's `StrictHostKeyChecking accept-new`: record an unknown
    /// host's key; a changed key is still refused.
    pub accept_new_host_key: bool,
    /// Bounds TCP connect, handshake and authentication.
    pub connect_timeout: Duration,
    /// Try the agent's identities (`$SSH_AUTH_SOCK`, or `agent_socket`).
    pub use_agent: bool,
    pub agent_socket: Option<PathBuf>,
    /// Words run before every argv on the far side (`pct exec 129 --`).
    pub prefix: Vec<String>,
    /// ProxyJump: reach `target` through a direct-tcpip channel of a
    /// session to this host (itself perhaps behind another jump).
    pub jump: Option<Box<SshConfig>>,
    /// Total time spent retrying transient faults (connect refused, reset
    /// or timed out; a session lost) before giving up; zero: one attempt,
    /// and one reconnect for a session found dead before a command started.
    pub retry: Duration,
}

impl SshConfig {
    pub fn new(target: SshTarget) -> Self {
        SshConfig {
            target,
            key_files: Vec::new(),
            known_hosts: None,
            accept_new_host_key: false,
            connect_timeout: Duration::from_secs(10),
            use_agent: true,
            agent_socket: None,
            prefix: Vec::new(),
            jump: None,
            retry: DEFAULT_RETRY,
        }
    }

    fn host_key_files(&self) -> known_hosts::HostKeyFiles {
        match &self.known_hosts {
            Some(p) => known_hosts::HostKeyFiles {
                user: p.clone(),
                system: Vec::new(),
            },
            None => known_hosts::HostKeyFiles {
                user: home().join(".ssh/known_hosts"),
                system: vec![PathBuf::from("/etc/ssh/ssh_known_hosts")],
            },
        }
    }
}

pub(crate) fn home() -> PathBuf {
    std::env::var_os("HOME").map_or_else(|| PathBuf::from("/"), PathBuf::from)
}

/// A session's socket: TCP, or our end of a socketpair whose other end a
/// ProxyJump host's channel is pumped onto.
pub(crate) enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    pub fn try_clone(&self) -> std::io::Result<Sock> {
        Ok(match self {
            Sock::Tcp(s) => Sock::Tcp(s.try_clone()?),
            Sock::Unix(s) => Sock::Unix(s.try_clone()?),
        })
    }
    fn shutdown(&self) {
        let _ = match self {
            Sock::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Sock::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
}

impl AsRawFd for Sock {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Sock::Tcp(s) => s.as_raw_fd(),
            Sock::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// An authenticated session and a handle on its socket (for poll and
/// shutdown); the session itself owns another handle. Through a ProxyJump
/// it also owns the jump host's session and pump (dropped after it).
pub(crate) struct Conn {
    pub sess: Session,
    pub sock: Sock,
    pub _jump: Option<forward::Forwarder>,
}

impl Conn {
    pub fn fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Close the socket first so nothing in libssh2's teardown can wait
        // on a dead or stuck peer.
        self.sock.shutdown();
    }
}

/// A far side reached over SSH. Commands share one session (each is its own
/// channel, run one at a time); tunnels use a second session pumped by a
/// background thread so a long download never stalls a command.
pub struct Ssh {
    cfg: SshConfig,
    conn: Mutex<Option<Conn>>,
    fwd: Mutex<Option<forward::Forwarder>>,
    /// When the current outage's retry budget ends: set at its first
    /// fault, shared by every later command and tunnel, cleared once one
    /// gets through. One budget per stage and outage: a failure record
    /// written after the budget ran out is not followed by another whole
    /// budget for the next command (svc-swap's clean-up waited 30 s more
    /// after its record; issue 21).
    outage: Mutex<Option<Instant>>,
}

impl Ssh {
    /// Connect, check the host key and authenticate now, so a wrong key or
    /// host shows up before any work starts.
    /// Transient faults are retried for up to `cfg.retry`.
    pub fn connect(cfg: SshConfig) -> Result<Ssh, TransportError> {
        let conn = connect::open_retrying(&cfg, Instant::now() + cfg.retry)?;
        Ok(Ssh {
            cfg,
            conn: Mutex::new(Some(conn)),
            fwd: Mutex::new(None),
            outage: Mutex::new(None),
        })
    }

    /// The end of the current outage's budget, starting it now if none
    /// runs.
    fn budget_end(&self) -> Instant {
        let mut g = self.outage.lock().unwrap_or_else(|p| p.into_inner());
        *g.get_or_insert_with(|| Instant::now() + self.cfg.retry)
    }

    /// The far side answered: a later fault starts a budget of its own.
    fn outage_over(&self) {
        *self.outage.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub fn config(&self) -> &SshConfig {
        &self.cfg
    }

    /// The argv as the far side's shell will run it, the exec prefix first.
    fn command_line(&self, argv: &[String]) -> String {
        let full: Vec<String> = self.cfg.prefix.iter().chain(argv).cloned().collect();
        shell_join(&full)
    }

    fn conn(&self) -> MutexGuard<'_, Option<Conn>> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn forwarder(&self) -> Result<MutexGuard<'_, Option<forward::Forwarder>>, TransportError> {
        let mut g = self.fwd.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            // Rides out an outage like a command's connect does, on the
            // same budget.
            let conn = connect::open_retrying(&self.cfg, self.budget_end())?;
            self.outage_over();
            *g = Some(forward::Forwarder::start_on(self.cfg.clone(), conn)?);
        }
        Ok(g)
    }

    /// A listener on 127.0.0.1 (port chosen by the OS) whose every connection
    /// is tunnelled to `host:port` as the far side resolves it. For HTTP
    /// clients: rewrite the URL's authority to the returned address. A port
    /// refused on the far side shows up as a reset connection here; use
    /// `connect_tcp` to tell refused apart.
    pub fn forward(&self, host: &str, port: u16) -> Result<SocketAddr, TransportError> {
        let g = self.forwarder()?;
        g.as_ref().expect("started").listen(host, port)
    }

    /// Run on the shared session, reconnecting when it is found dead; a
    /// command lost mid-run is run again only when `idempotent`. This is
    /// the one SSH retry layer (svc-swap and wait-ready alike): its budget
    /// `cfg.retry` (`--ssh-retry`) counts from the first fault of this
    /// outage (see `outage`), so a long command lost near its end still
    /// gets the whole budget to ride out the outage, and the commands after
    /// it never get more.
    fn run_with(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
        idempotent: bool,
    ) -> Result<CmdOutput, TransportError> {
        let line = self.command_line(argv);
        let mut g = self.conn();
        let mut pause = Duration::from_millis(250);
        for attempt in 0.. {
            if g.is_none() {
                // The last command broke or timed out the session: start
                // afresh, riding out an outage within the budget.
                *g = Some(connect::open_retrying(&self.cfg, self.budget_end())?);
            }
            let conn = g.as_ref().expect("just set");
            let mut started = false;
            let deadline = Instant::now() + timeout;
            let e = match exec::run(conn, &line, stdin, deadline, timeout, &mut started) {
                Ok(out) => {
                    self.outage_over();
                    return Ok(out);
                }
                Err(e) => e,
            };
            // After a timeout or a transport error the channel may still be
            // open on a session libssh2 is half-way through using; dropping
            // the whole session is the one state that is certainly clean.
            // (A timed-out far-side command is not killed: like ssh without a
            // pty, it runs on until it exits or writes to its closed pipes.)
            *g = None;
            let by = self.budget_end();
            if !retry_again(
                &e,
                started,
                idempotent,
                attempt,
                Instant::now() + pause < by,
            ) {
                return Err(match e {
                    TransportError::Connect(m) => {
                        TransportError::Connect(format!("ssh {}: {m}", self.cfg.target))
                    }
                    other => other,
                });
            }
            if started {
                crate::diag::warn(format!(
                    "ssh {}: session lost while running {}; \
                     reconnecting to run it again ({e})",
                    self.cfg.target,
                    argv.first().map_or("", String::as_str)
                ));
            }
            if attempt > 0 {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_secs(2));
            }
        }
        unreachable!("the loop returns")
    }
}

/// Whether a command that failed with `e` is tried again. Only a transient
/// fault (`is_transient`: the same test the connect retry uses) is. An idle
/// session the server dropped fails before anything ran: reconnect at once,
/// whatever the budget. A command lost after it `started` has an unknown
/// outcome: it is re-run only when the caller said it is `idempotent` (a
/// read, a converging write, a launch that checks its own lock), else the
/// caller gets the error and must re-check the far side itself. `in_budget`:
/// another pause still ends before the budget does.
fn retry_again(
    e: &TransportError,
    started: bool,
    idempotent: bool,
    attempt: u32,
    in_budget: bool,
) -> bool {
    e.is_transient() && ((!started && attempt == 0) || ((!started || idempotent) && in_budget))
}

impl fmt::Debug for Ssh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ssh({})", self.describe())
    }
}

impl Transport for Ssh {
    fn run(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, TransportError> {
        self.run_with(argv, stdin, timeout, false)
    }

    fn run_idempotent(
        &self,
        argv: &[String],
        stdin: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<CmdOutput, TransportError> {
        self.run_with(argv, stdin, timeout, true)
    }

    fn describe(&self) -> String {
        let mut d = format!("ssh {}", self.cfg.target);
        let mut hop = self.cfg.jump.as_deref();
        while let Some(j) = hop {
            d += &format!(" (ProxyJump {})", j.target);
            hop = j.jump.as_deref();
        }
        if !self.cfg.prefix.is_empty() {
            d += &format!(" via '{}'", shell_join(&self.cfg.prefix));
        }
        d
    }

    fn connect_tcp(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Box<dyn Stream>, TransportError> {
        let opening = {
            let g = self.forwarder()?;
            g.as_ref().expect("started").request(host, port)?
        };
        Ok(Box::new(opening.wait(timeout)?))
    }

    fn forward(&self, host: &str, port: u16) -> Result<SocketAddr, TransportError> {
        Ssh::forward(self, host, port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_faults_of_safe_commands_are_run_again() {
        let lost = TransportError::Connect("session lost".into());
        let auth = TransportError::Auth("denied".into());
        let slow = TransportError::Timeout(Duration::from_secs(1));
        // A dead idle session: once, even with no budget (--ssh-retry 0).
        assert!(retry_again(&lost, false, false, 0, false));
        assert!(!retry_again(&lost, false, false, 1, false));
        // Lost mid-command: a non-idempotent command is never re-run.
        assert!(!retry_again(&lost, true, false, 0, true));
        assert!(retry_again(&lost, true, true, 3, true));
        assert!(!retry_again(&lost, true, true, 3, false), "budget spent");
        // Permanent faults and a command's own timeout: never.
        assert!(!retry_again(&auth, false, true, 0, true));
        assert!(!retry_again(&slow, true, true, 0, true));
    }
}
