//! A far-side shell killed by a signal is the command's answer only while
//! its session lives: sshd may report the signal of a shell that died with
//! it (its cgroup stopped, its processes killed) just before the socket
//! closes, and that is a lost session (transient), not a result. A relay
//! between the client and a real sshd holds sshd's bytes, so the test
//! decides that the session dies right after it reported the signal.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use sweepkit::ssh::{Ssh, SshConfig};
use sweepkit::transport::{Transport, TransportError};
use testkit::sshd::Sshd;

const T: Duration = Duration::from_secs(20);

#[derive(Default)]
struct Held {
    hold: bool,
    bytes: Vec<u8>,
    client: Option<TcpStream>,
    server: Option<TcpStream>,
}

/// A TCP relay for one connection to `127.0.0.1:port`. Client bytes pass
/// through; sshd's bytes pass through until `hold`, after which they are
/// kept until `deliver` (which keeps holding what comes next) or `cut`.
struct Relay {
    port: u16,
    held: Arc<Mutex<Held>>,
}

impl Relay {
    fn start(port: u16) -> Relay {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let me = l.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Held::default()));
        let h = held.clone();
        std::thread::spawn(move || {
            let (client, _) = l.accept().unwrap();
            let server = TcpStream::connect(("127.0.0.1", port)).unwrap();
            {
                let mut g = h.lock().unwrap();
                g.client = Some(client.try_clone().unwrap());
                g.server = Some(server.try_clone().unwrap());
            }
            let (mut c, mut s) = (client, server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut c, &mut s);
                let _ = s.shutdown(Shutdown::Write);
            });
            let mut s = server;
            let mut buf = vec![0u8; 64 * 1024];
            while let Ok(n @ 1..) = s.read(&mut buf) {
                let mut g = h.lock().unwrap();
                if g.hold {
                    g.bytes.extend_from_slice(&buf[..n]);
                } else if let Some(mut c) = g.client.as_ref() {
                    let _ = c.write_all(&buf[..n]);
                }
            }
        });
        Relay { port: me, held }
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap()
    }

    fn hold(&self) {
        self.lock().hold = true;
    }

    /// How many of sshd's bytes are held.
    fn held(&self) -> usize {
        self.lock().bytes.len()
    }

    /// Pass on what was held; hold whatever sshd sends next.
    fn deliver(&self) {
        let mut g = self.lock();
        let bytes = std::mem::take(&mut g.bytes);
        if let Some(mut c) = g.client.as_ref() {
            c.write_all(&bytes).unwrap();
        }
    }

    /// Close both sides, as a dead sshd's kernel does.
    fn cut(&self) {
        let g = self.lock();
        for s in [&g.client, &g.server].into_iter().flatten() {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// A client of `sshd` through `relay` (its known_hosts line names the
/// relay's port), with no retry budget: the first error comes back.
fn connect_through(sshd: &Sshd, relay: &Relay, dir: &Path) -> Ssh {
    let known = dir.join("known_hosts");
    let text = std::fs::read_to_string(&sshd.known_hosts).unwrap();
    let text = text.replace(&format!("]:{} ", sshd.port), &format!("]:{} ", relay.port));
    std::fs::write(&known, text).unwrap();
    let target = format!("{}@127.0.0.1:{}", sshd.user, relay.port);
    let mut c = SshConfig::new(target.parse().unwrap());
    c.key_files = vec![sshd.client_key.clone()];
    c.known_hosts = Some(known);
    c.use_agent = false;
    c.retry = Duration::ZERO;
    Ssh::connect(c).unwrap_or_else(|e| panic!("{e}\nsshd log:\n{}", sshd.log_text()))
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < limit, "{what}: not after {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Regression: svc-swap's job launch came back "exit by signal" when sshd's
/// processes were killed mid-swap (sshd reported the shell's SIGKILL, then
/// its socket closed), and the swap was recorded as the config's failure.
#[test]
fn shell_killed_as_the_session_drops_is_a_lost_session() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::start(sshd.port);
    let ssh = connect_through(&sshd, &relay, dir.path());

    // On a live session a shell killed by a signal is the command's answer
    // ($PPID: the login shell that runs the command line, sshd's child).
    let t0 = Instant::now();
    let out = ssh
        .run(&argv(&["sh", "-c", "kill -9 $PPID $$"]), None, T)
        .unwrap();
    assert_eq!(out.status, None, "stderr: {}", out.stderr_str());
    eprintln!(
        "killed on a live session, probe included: {:?}",
        t0.elapsed()
    );

    // Killed as the session drops: the shell dies while sshd's bytes are
    // held, sshd reports the signal (exit-signal, EOF, close), the client
    // gets those bytes, and the session is cut before it can answer again.
    let (armed, go) = (dir.path().join("armed"), dir.path().join("go"));
    let script = r#"touch "$1"; while [ ! -e "$2" ]; do sleep 0.01; done; kill -9 $PPID $$"#;
    let (a, g) = (armed.to_str().unwrap(), go.to_str().unwrap());
    let r = std::thread::scope(|sc| {
        let run = sc.spawn(|| ssh.run(&argv(&["sh", "-c", script, "sh", a, g]), None, T));
        wait_for("the far side's command starts", T, || armed.exists());
        relay.hold();
        std::fs::write(&go, "").unwrap();
        // sshd's report of the killed shell, then a quiet moment for the
        // rest of it (the three messages go out together).
        wait_for("sshd reports the killed shell", T, || relay.held() > 0);
        std::thread::sleep(Duration::from_millis(300));
        relay.deliver();
        std::thread::sleep(Duration::from_secs(1));
        relay.cut();
        run.join().unwrap()
    });
    match r {
        Err(TransportError::Connect(m)) => {
            assert!(m.contains("session lost") && m.contains("KILL"), "{m}")
        }
        other => panic!("expected a lost session, got {other:?}"),
    }
}
