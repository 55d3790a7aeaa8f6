//! The SSH transport (feature `ssh`): far-side commands over one libssh2
//! session (a channel per command), checked against known_hosts, key auth
//! only (every agent identity, then key files; never a password prompt), and
//! TCP tunnels over direct-tcpip for probes of ports that listen only on the
//! far side's localhost. ANCHORS.md's "ssh2 (0.9) pitfalls" are the spec.

mod auth;
mod exec;
mod forward;
mod known_hosts;
mod nb;

use std::fmt;
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::io::AsRawFd;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ssh2::{CheckResult, HashType, MethodType, Session};

use crate::transport::{shell_join, CmdOutput, Stream, Transport, TransportError};

/// Where to connect: `user@host[:port]` (`user@[v6addr]:port` for IPv6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshTarget {
    pub user: String,
    pub host: String,
    pub port: u16,
}

impl FromStr for SshTarget {
    type Err = String;

    /// Parse `user@host[:port]`; without `user@`, `$USER` (as ssh does).
    fn from_str(s: &str) -> Result<Self, String> {
        let (user, rest) = match s.rsplit_once('@') {
            Some((u, r)) => (u.to_string(), r),
            None => (
                std::env::var("USER")
                    .or_else(|_| std::env::var("LOGNAME"))
                    .map_err(|_| format!("'{s}': no user: write USER@HOST"))?,
                s,
            ),
        };
        let (host, port) = if let Some(r) = rest.strip_prefix('[') {
            let (h, after) = r
                .split_once(']')
                .ok_or_else(|| format!("'{s}': missing ']' after IPv6 address"))?;
            match after {
                "" => (h, None),
                p => (
                    h,
                    Some(p.strip_prefix(':').ok_or_else(|| {
                        format!("'{s}': expected ':PORT' after ']', found '{p}'")
                    })?),
                ),
            }
        } else if rest.matches(':').count() == 1 {
            let (h, p) = rest.split_once(':').expect("one colon");
            (h, Some(p))
        } else {
            (rest, None) // a bare IPv6 address has several colons and no port
        };
        let port = match port {
            None => 22,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|&p| p != 0)
                .ok_or_else(|| format!("'{s}': port '{p}' is not a number in 1..65535"))?,
        };
        let bad = |w: &str| w.is_empty() || w.starts_with('-') || w.contains(char::is_whitespace);
        if bad(&user) || bad(host) {
            return Err(format!("'{s}': expected USER@HOST[:PORT]"));
        }
        Ok(SshTarget {
            user,
            host: host.to_string(),
            port,
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

/// An authenticated session and a handle on its socket (for poll and
/// shutdown); the session itself owns another handle.
pub(crate) struct Conn {
    pub sess: Session,
    pub sock: TcpStream,
}

impl Conn {
    pub fn fd(&self) -> std::os::unix::io::RawFd {
        self.sock.as_raw_fd()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Close the socket first so nothing in libssh2's teardown can wait
        // on a dead or stuck peer.
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}

/// A far side reached over SSH. Commands share one session (each is its own
/// channel, run one at a time); tunnels use a second session pumped by a
/// background thread so a long download never stalls a command.
pub struct Ssh {
    cfg: SshConfig,
    conn: Mutex<Option<Conn>>,
    fwd: Mutex<Option<forward::Forwarder>>,
}

impl Ssh {
    /// Connect, check the host key and authenticate now, so a wrong key or
    /// host shows up before any work starts.
    pub fn connect(cfg: SshConfig) -> Result<Ssh, TransportError> {
        let conn = open_session(&cfg)?;
        Ok(Ssh {
            cfg,
            conn: Mutex::new(Some(conn)),
            fwd: Mutex::new(None),
        })
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
            *g = Some(forward::Forwarder::start(self.cfg.clone())?);
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
        let deadline = Instant::now() + timeout;
        let line = self.command_line(argv);
        let mut g = self.conn();
        let mut res = Err(TransportError::Timeout(timeout));
        for attempt in 0..2 {
            if g.is_none() {
                // The last command broke or timed out the session: start
                // afresh.
                *g = Some(open_session(&self.cfg)?);
            }
            let conn = g.as_ref().expect("just set");
            let mut started = false;
            res = exec::run(conn, &line, stdin, deadline, timeout, &mut started);
            match &res {
                // An idle session the server dropped fails before anything
                // ran: reconnect and try once more.
                Err(TransportError::Connect(_)) if !started && attempt == 0 => *g = None,
                _ => break,
            }
        }
        if res.is_err() {
            // After a timeout or a transport error the channel may still be
            // open on a session libssh2 is half-way through using; dropping
            // the whole session is the one state that is certainly clean.
            // (A timed-out far-side command is not killed: like ssh without a
            // pty, it runs on until it exits or writes to its closed pipes.)
            *g = None;
        }
        res.map_err(|e| match e {
            TransportError::Connect(m) => {
                TransportError::Connect(format!("ssh {}: {m}", self.cfg.target))
            }
            other => other,
        })
    }

    fn describe(&self) -> String {
        if self.cfg.prefix.is_empty() {
            format!("ssh {}", self.cfg.target)
        } else {
            format!(
                "ssh {} via '{}'",
                self.cfg.target,
                shell_join(&self.cfg.prefix)
            )
        }
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

/// Connect, pin the host-key method, handshake, check known_hosts,
/// authenticate; the session comes back non-blocking.
pub(crate) fn open_session(cfg: &SshConfig) -> Result<Conn, TransportError> {
    let t = &cfg.target;
    let deadline = Instant::now() + cfg.connect_timeout;
    let sock = tcp_connect(t, cfg.connect_timeout)?;
    let _ = sock.set_nodelay(true);
    let mut sess = Session::new().map_err(|e| TransportError::Connect(format!("ssh: {e}")))?;
    sess.set_tcp_stream(sock.try_clone()?);
    sess.set_timeout(ms(cfg.connect_timeout));
    let files = cfg.host_key_files();
    let on_file = known_hosts::load(&sess, &files, &t.host, t.port)
        .map_err(|e| TransportError::HostKey(format!("{t}: reading known_hosts: {e}")))?;
    let pinned = pin_host_key_methods(&sess, &on_file.types);
    if let Err(e) = sess.handshake() {
        let why = if e.code() == ssh2::ErrorCode::Session(nb::TIMEOUT) {
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
    check_host_key(cfg, &sess, &on_file, &files)?;
    auth::authenticate(cfg, &sess, deadline)?;
    sess.set_timeout(0);
    sess.set_blocking(false);
    Ok(Conn { sess, sock })
}

fn ms(d: Duration) -> u32 {
    d.as_millis().clamp(1, u32::MAX as u128) as u32
}

fn tcp_connect(t: &SshTarget, timeout: Duration) -> Result<TcpStream, TransportError> {
    let addrs: Vec<SocketAddr> = (t.host.as_str(), t.port)
        .to_socket_addrs()
        .map_err(|e| TransportError::Connect(format!("ssh {t}: cannot resolve host: {e}")))?
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

/// Restrict the host-key methods to the key types on file, so the server
/// offers a key `check_port` can compare (it ignores types). Returns whether
/// anything was pinned.
fn pin_host_key_methods(sess: &Session, types: &[String]) -> bool {
    let supported = sess.supported_algs(MethodType::HostKey).unwrap_or_default();
    let prefs: Vec<&str> = types
        .iter()
        .flat_map(|t| known_hosts::methods_for_type(t))
        .filter(|m| supported.contains(m))
        .collect();
    !prefs.is_empty()
        && sess
            .method_pref(MethodType::HostKey, &prefs.join(","))
            .is_ok()
}

/// OpenSSH's form of the server's key fingerprint (`SHA256:...`).
fn fingerprint(sess: &Session) -> String {
    match sess.host_key_hash(HashType::Sha256) {
        Some(h) => format!(
            "SHA256:{}",
            known_hosts::base64_encode(h).trim_end_matches('=')
        ),
        None => "(no fingerprint)".into(),
    }
}

fn check_host_key(
    cfg: &SshConfig,
    sess: &Session,
    on_file: &known_hosts::OnFile,
    files: &known_hosts::HostKeyFiles,
) -> Result<(), TransportError> {
    let t = &cfg.target;
    let (blob, _) = sess
        .host_key()
        .ok_or_else(|| TransportError::HostKey(format!("{t}: the server sent no host key")))?;
    let ktype = known_hosts::key_type(blob).unwrap_or_else(|| "unknown".into());
    let fp = fingerprint(sess);
    let pattern = known_hosts::host_pattern(&t.host, t.port);
    let file = files.user.display();
    match on_file.check(&t.host, t.port, blob) {
        CheckResult::Match => Ok(()),
        CheckResult::Mismatch => Err(TransportError::HostKey(format!(
            "{t}: HOST KEY MISMATCH: the server's {ktype} key {fp} differs from the one \
             on file in {file}; refusing to connect (possible man-in-the-middle; if the \
             host was reinstalled, remove its line: ssh-keygen -R '{pattern}' -f {file})"
        ))),
        CheckResult::NotFound if cfg.accept_new_host_key => {
            known_hosts::append(&files.user, &t.host, t.port, blob).map_err(|e| {
                TransportError::HostKey(format!("{t}: recording the new host key: {e}"))
            })?;
            eprintln!("sweepkit: warning: added {pattern} ({ktype} {fp}) to {file}");
            Ok(())
        }
        CheckResult::NotFound => Err(TransportError::HostKey(format!(
            "{t}: unknown host: its {ktype} key {fp} is not in {file}; check the \
             fingerprint and add it (ssh-keyscan -p {} {} >> {file}), or pass \
             --accept-new-host-key",
            t.port, t.host
        ))),
        CheckResult::Failure => Err(TransportError::HostKey(format!(
            "{t}: cannot check the host key against {file}"
        ))),
    }
}
