//! A real OpenSSH server for tests: `/usr/sbin/sshd -D -e -f CONFIG` on
//! 127.0.0.1 and a free port, with its own temp dir, generated host and
//! client keys and absolute paths, killed on drop. `Sshd::start()` returns
//! None when sshd is not installed (scripts/deps.sh installs
//! openssh-server), so tests can print a skip line instead of failing.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SSHD: &str = "/usr/sbin/sshd";

/// A running sshd; everything lives in `dir`, removed on drop.
pub struct Sshd {
    pub host: String,
    pub port: u16,
    /// The user tests log in as: the current user (root is allowed).
    pub user: String,
    pub dir: PathBuf,
    /// A private key in `authorized_keys`.
    pub client_key: PathBuf,
    /// A private key that is not authorized (for auth-failure tests).
    pub unauthorized_key: PathBuf,
    /// known_hosts with the server's ed25519 key.
    pub known_hosts: PathBuf,
    /// known_hosts with only the server's RSA key (host-key type pinning).
    pub known_hosts_rsa: PathBuf,
    /// known_hosts with another ed25519 key for this host (mismatch).
    pub wrong_known_hosts: PathBuf,
    /// known_hosts with only an ECDSA key the server does not have.
    pub wrong_type_known_hosts: PathBuf,
    /// sshd's log (`-e` output).
    pub log: PathBuf,
    /// The command line before sshd's own arguments (for `restart`).
    prefix: Vec<String>,
    child: Child,
}

/// True when sshd and ssh-keygen are installed.
pub fn available() -> bool {
    Path::new(SSHD).exists() && which("ssh-keygen")
}

fn which(prog: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// `ssh-keygen` a key pair at `path` (no passphrase); returns the public
/// key line.
pub fn keygen(path: &Path, kind: &str) -> String {
    let mut c = Command::new("ssh-keygen");
    c.args(["-q", "-t", kind, "-N", "", "-C", "sweepkit-test", "-f"])
        .arg(path);
    if kind == "rsa" {
        c.args(["-b", "2048"]);
    }
    crate::helper::checked(&mut c, &format!("ssh-keygen -t {kind}"));
    let pubp = PathBuf::from(format!("{}.pub", path.display()));
    std::fs::read_to_string(pubp)
        .expect("read .pub")
        .trim()
        .to_string()
}

/// `type base64` of a public key line (the comment dropped).
fn type_and_key(pub_line: &str) -> String {
    pub_line
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Sshd {
    /// Start sshd, or None (with a line on stderr) when it is not installed.
    pub fn start() -> Option<Sshd> {
        Self::start_at("127.0.0.1", &[], "")
    }

    /// A second sshd on 127.0.0.1 to act as a ProxyJump host: it logs at
    /// DEBUG1, so its log names every direct-tcpip channel it opens
    /// ("originator ... target HOST port N"), which proves a connection
    /// went through it.
    pub fn start_jump() -> Option<Sshd> {
        Self::start_at("127.0.0.1", &[], "LogLevel DEBUG1\n")
    }

    /// Start sshd inside a network namespace, listening on the namespace's
    /// address (`ns.addr`): a "remote host" whose loopback is its own.
    pub fn start_in(ns: &crate::netns::Netns) -> Option<Sshd> {
        Self::start_at(&ns.addr, &ns.prefix(), "")
    }

    /// Start sshd listening on `host`, run behind `prefix` (e.g. `ip netns
    /// exec NAME`, which execs sshd itself, so killing the child kills it).
    /// `extra` lines come first in sshd_config (sshd keeps the first value
    /// of each keyword, so they override the defaults).
    fn start_at(host: &str, prefix: &[String], extra: &str) -> Option<Sshd> {
        if !available() {
            crate::skip(&format!(
                "{SSHD} or ssh-keygen not installed \
                 (scripts/deps.sh installs openssh-server)"
            ));
            return None;
        }
        crate::ran("sshd");
        // Privilege separation directory; sshd refuses to start without it.
        let _ = std::fs::create_dir_all("/run/sshd");
        let dir = crate::temp_dir("sshd");
        let k = |n: &str| dir.join(n);
        let host_ed = keygen(&k("host_ed25519"), "ed25519");
        let host_rsa = keygen(&k("host_rsa"), "rsa");
        let client = keygen(&k("client_ed25519"), "ed25519");
        keygen(&k("unauthorized_ed25519"), "ed25519");
        let other = keygen(&k("other_host_ed25519"), "ed25519");
        let ecdsa = keygen(&k("other_host_ecdsa"), "ecdsa");
        std::fs::write(k("authorized_keys"), format!("{client}\n")).unwrap();
        for attempt in 0..5 {
            let port = crate::free_port();
            let pat = format!("[{host}]:{port}");
            let kh = |name: &str, key: &str| {
                std::fs::write(k(name), format!("{pat} {}\n", type_and_key(key))).unwrap();
            };
            kh("known_hosts", &host_ed);
            kh("known_hosts_rsa", &host_rsa);
            kh("wrong_known_hosts", &other);
            kh("wrong_type_known_hosts", &ecdsa);
            let config = k("sshd_config");
            let text = format!("{extra}{}", config_text(&dir, host, port));
            std::fs::write(&config, text).unwrap();
            let log = k("sshd.log");
            std::fs::File::create(&log).unwrap();
            let mut child = spawn(prefix, &config, &log);
            if wait_listening(&mut child, host, port, Duration::from_secs(10)) {
                return Some(Sshd {
                    host: host.into(),
                    port,
                    user: current_user(),
                    client_key: k("client_ed25519"),
                    unauthorized_key: k("unauthorized_ed25519"),
                    known_hosts: k("known_hosts"),
                    known_hosts_rsa: k("known_hosts_rsa"),
                    wrong_known_hosts: k("wrong_known_hosts"),
                    wrong_type_known_hosts: k("wrong_type_known_hosts"),
                    log,
                    dir,
                    prefix: prefix.to_vec(),
                    child,
                });
            }
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            // Another process may have taken the free port meanwhile: retry.
            if !text.contains("Address already in use") || attempt == 4 {
                panic!("sshd did not start; its log:\n{text}");
            }
        }
        unreachable!()
    }

    /// `user@host:port` (host 127.0.0.1, or the namespace's address), the
    /// form `--ssh` takes.
    pub fn target(&self) -> String {
        format!("{}@{}:{}", self.user, self.host, self.port)
    }

    /// `--ssh TARGET --ssh-key KEY --known-hosts FILE`: what every tool
    /// takes to reach this sshd with its host key checked.
    pub fn client_args(&self) -> Vec<String> {
        self.args_with(&self.client_key, &self.known_hosts)
    }

    /// `--ssh TARGET --ssh-key KEY --known-hosts KNOWN`: this server with
    /// another key or known_hosts file (a refusal's test).
    pub fn args_with(&self, key: &Path, known: &Path) -> Vec<String> {
        vec![
            "--ssh".into(),
            self.target(),
            "--ssh-key".into(),
            key.display().to_string(),
            "--known-hosts".into(),
            known.display().to_string(),
        ]
    }

    /// What sshd has logged so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Stop listening (a server outage): the listener is killed, so new
    /// connections are refused; sessions already open live on in their own
    /// processes, as when sshd is restarted.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Listen again on the same address and port after `stop`.
    pub fn restart(&mut self) {
        self.stop();
        let config = self.dir.join("sshd_config");
        self.child = spawn(&self.prefix, &config, &self.log);
        let limit = Duration::from_secs(10);
        if !wait_listening(&mut self.child, &self.host, self.port, limit) {
            panic!("sshd did not restart; its log:\n{}", self.log_text());
        }
    }

    /// A path in the server's dir for a file the test creates (a fresh
    /// known_hosts for accept-new tests, canaries).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// sshd in the foreground, logging to stderr, appended to `log`.
fn spawn(prefix: &[String], config: &Path, log: &Path) -> Child {
    let mut argv: Vec<&str> = prefix.iter().map(String::as_str).collect();
    argv.push(SSHD);
    let out = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    Command::new(argv[0])
        .args(&argv[1..])
        .args(["-D", "-e", "-f"])
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(out)
        .spawn()
        .expect("spawn sshd")
}

/// Wait until `port` accepts connections; false if sshd exited first.
fn wait_listening(child: &mut Child, host: &str, port: u16, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        if TcpStream::connect((host, port)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn config_text(dir: &Path, host: &str, port: u16) -> String {
    let d = dir.display();
    format!(
        "# sweepkit test sshd (testkit::sshd)
ListenAddress {host}:{port}
HostKey {d}/host_ed25519
HostKey {d}/host_rsa
PidFile {d}/sshd.pid
AuthorizedKeysFile {d}/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding yes
MaxSessions 64
MaxStartups 64
UseDNS no
PrintMotd no
LogLevel INFO
"
    )
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// An `ssh-agent` on a socket in `dir` holding `keys`, killed on drop.
pub struct Agent {
    pub socket: PathBuf,
    child: Child,
}

impl Agent {
    /// Start an agent and add `keys` in order (the agent offers them in
    /// that order). None when ssh-agent is not installed.
    pub fn start(dir: &Path, keys: &[&Path]) -> Option<Agent> {
        if !which("ssh-agent") || !which("ssh-add") {
            crate::skip("ssh-agent not installed");
            return None;
        }
        crate::ran("ssh-agent");
        let socket = dir.join("agent.sock");
        let child = Command::new("ssh-agent")
            .args(["-D", "-a"])
            .arg(&socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn ssh-agent");
        let agent = Agent { socket, child };
        let t0 = Instant::now();
        while !agent.socket.exists() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        for key in keys {
            crate::helper::checked(
                Command::new("ssh-add")
                    .arg(key)
                    .env("SSH_AUTH_SOCK", &agent.socket),
                &format!("ssh-add {}", key.display()),
            );
        }
        Some(agent)
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
