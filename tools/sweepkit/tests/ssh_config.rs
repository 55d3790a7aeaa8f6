//! `~/.ssh/config`-style files, ProxyJump through a second real sshd, and
//! retries across a real sshd outage (testkit's harness, 127.0.0.1 only;
//! the config is always passed with `--ssh-config`, never the real
//! `~/.ssh`). Run with `cargo test -p sweepkit --features ssh,cli`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use sweepkit::exit;
use sweepkit::ssh::{Ssh, SshConfig};
use sweepkit::transport::{Transport, TransportError};
use sweepkit::transport_args::TransportArgs;
use testkit::sshd::Sshd;

const T: Duration = Duration::from_secs(10);

#[derive(Parser)]
struct A {
    #[command(flatten)]
    t: TransportArgs,
}

fn args(words: &[&str]) -> TransportArgs {
    A::try_parse_from(std::iter::once("t").chain(words.iter().copied()))
        .unwrap()
        .t
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

fn sshd() -> Sshd {
    Sshd::start().expect("sshd installed (scripts/deps.sh installs openssh-server)")
}

fn jump() -> Sshd {
    Sshd::start_jump().expect("sshd installed (scripts/deps.sh installs openssh-server)")
}

/// One known_hosts file with every given server's key.
fn known_hosts(dir: &Sshd, servers: &[(&Sshd, bool)]) -> PathBuf {
    let mut text = String::new();
    for (s, right) in servers {
        let f = if *right {
            &s.known_hosts
        } else {
            &s.wrong_known_hosts
        };
        text += &std::fs::read_to_string(f).unwrap();
    }
    let p = dir.path("all_known_hosts");
    std::fs::write(&p, text).unwrap();
    p
}

/// An ssh config: `jumpbox` and `gpu1` (through jumpbox) with HostName,
/// Port, User, IdentityFile; `Host *` names the known_hosts file.
fn jump_config(target: &Sshd, j: &Sshd, jump_port: u16, kh: &std::path::Path) -> PathBuf {
    let text = format!(
        "# written by ssh_config.rs\n\
         Host jumpbox\n  HostName 127.0.0.1\n  Port {jump_port}\n  User {ju}\n  \
         IdentityFile {jk}\n\
         Host gpu1\n  HostName 127.0.0.1\n  Port {tp}\n  User {tu}\n  \
         IdentityFile {tk}\n  ProxyJump jumpbox\n\
         Host *\n  UserKnownHostsFile {kh}\n  StrictHostKeyChecking yes\n",
        ju = j.user,
        jk = j.client_key.display(),
        tp = target.port,
        tu = target.user,
        tk = target.client_key.display(),
        kh = kh.display(),
    );
    let p = target.path("ssh_config");
    std::fs::write(&p, text).unwrap();
    p
}

fn open(words: &[&str]) -> Result<Box<dyn Transport>, TransportError> {
    args(words).open()
}

fn err(r: Result<Box<dyn Transport>, TransportError>) -> TransportError {
    match r {
        Ok(t) => panic!("expected an error, connected: {}", t.describe()),
        Err(e) => e,
    }
}

fn through_jump(j: &Sshd, target: &Sshd) -> bool {
    j.log_text()
        .contains(&format!("target 127.0.0.1 port {}", target.port))
}

#[test]
fn alias_with_proxy_jump_runs_commands_and_tunnels() {
    let (target, j) = (sshd(), jump());
    let kh = known_hosts(&target, &[(&target, true), (&j, true)]);
    let cfg = jump_config(&target, &j, j.port, &kh);
    let c = cfg.to_str().unwrap();
    let t = open(&["--ssh", "gpu1", "--ssh-config", c, "--ssh-retry", "0"])
        .unwrap_or_else(|e| panic!("{e}\njump log:\n{}", j.log_text()));
    let out = t
        .run(
            &argv(&["sh", "-c", "echo far; echo $SSH_CONNECTION"]),
            None,
            T,
        )
        .unwrap();
    assert!(out.success(), "{}", out.stderr_str());
    assert!(
        out.stdout_str().starts_with("far\n"),
        "{}",
        out.stdout_str()
    );
    assert!(through_jump(&j, &target), "jump log:\n{}", j.log_text());
    let via = format!("(ProxyJump {}@127.0.0.1:{})", j.user, j.port);
    assert!(t.describe().contains(&via), "{}", t.describe());
    // A tunnel to a far-side port rides the jump too.
    let echo = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = echo.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((s, _)) = echo.accept() {
            let _ = std::io::copy(&mut &s, &mut &s);
        }
    });
    let mut s = t.connect_tcp("127.0.0.1", port, T).unwrap();
    use std::io::{Read, Write};
    s.write_all(b"ping").unwrap();
    let mut b = [0u8; 4];
    s.read_exact(&mut b).unwrap();
    assert_eq!(&b, b"ping");
}

#[test]
fn alias_without_user_takes_the_local_user_and_flags_beat_the_file() {
    let target = sshd();
    // The file's key is not authorized; --ssh-key on the command line is.
    let text = format!(
        "Host gpu1\n  HostName 127.0.0.1\n  Port {}\n  IdentityFile {}\n  \
         UserKnownHostsFile {}\n",
        target.port,
        target.unauthorized_key.display(),
        target.known_hosts.display()
    );
    let cfg = target.path("ssh_config");
    std::fs::write(&cfg, text).unwrap();
    let c = cfg.to_str().unwrap();
    let a = args(&["--ssh", "gpu1", "--ssh-config", c]);
    let sc = a.ssh_config().unwrap().unwrap();
    assert_eq!(sc.target.user, target.user, "the local user");
    let e = err(a.open());
    assert!(matches!(e, TransportError::Auth(_)), "{e}");
    let key = target.client_key.to_str().unwrap();
    let t = open(&["--ssh", "gpu1", "--ssh-config", c, "--ssh-key", key]).unwrap();
    let out = t.run(&argv(&["id", "-un"]), None, T).unwrap();
    assert_eq!(out.stdout_str().trim(), target.user);
}

fn direct(s: &Sshd, retry: Duration) -> SshConfig {
    let mut c = SshConfig::new(s.target().parse().unwrap());
    c.key_files = vec![s.client_key.clone()];
    c.known_hosts = Some(s.known_hosts.clone());
    c.use_agent = false;
    c.retry = retry;
    c
}

/// Stop `s`, restart it after `down` on another thread; join for it back.
fn outage(mut s: Sshd, down: Duration) -> std::thread::JoinHandle<Sshd> {
    s.stop();
    std::thread::spawn(move || {
        std::thread::sleep(down);
        s.restart();
        s
    })
}

#[test]
fn retry_rides_out_a_five_second_outage_at_connect() {
    let s = sshd();
    let cfg = direct(&s, Duration::from_secs(30));
    let t0 = Instant::now();
    let back = outage(s, Duration::from_secs(5));
    let ssh = Ssh::connect(cfg).expect("connected once sshd was back");
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(4500), "{took:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    let out = ssh.run(&argv(&["echo", "up"]), None, T).unwrap();
    assert_eq!(out.stdout_str(), "up\n");
    back.join().unwrap();
}

#[test]
fn session_lost_mid_command_reruns_only_idempotent_commands() {
    let s = sshd();
    let ssh = Ssh::connect(direct(&s, Duration::from_secs(30))).unwrap();
    // The sh's parent is the login shell; its parent the connection's sshd.
    let kill_once = |marker: &PathBuf| {
        format!(
            "if [ ! -e {m} ]; then touch {m}; kill -9 $(awk '{{print $4}}' /proc/$PPID/stat); \
             sleep 2; fi; echo done",
            m = marker.display()
        )
    };
    // Not idempotent: the loss is an error, of the transient kind.
    let m1 = s.path("once-1");
    let e = ssh
        .run(&argv(&["sh", "-c", &kill_once(&m1)]), None, T)
        .unwrap_err();
    assert!(matches!(e, TransportError::Connect(_)), "{e}");
    assert!(
        e.is_transient() && e.exit_code() == exit::TRANSPORT_ERROR,
        "{e}"
    );
    // Idempotent, with sshd down for 5 s when the session drops: re-run
    // once it is back.
    let m2 = s.path("once-2");
    let script = kill_once(&m2);
    let t0 = Instant::now();
    let back = outage(s, Duration::from_secs(5));
    let out = ssh
        .run_idempotent(&argv(&["sh", "-c", &script]), None, T)
        .expect("re-run after the outage");
    assert_eq!(out.stdout_str(), "done\n");
    assert!(
        t0.elapsed() >= Duration::from_millis(4500),
        "{:?}",
        t0.elapsed()
    );
    assert!(m2.exists());
    back.join().unwrap();
}

/// Issue 21: the budget was counted per command, so svc-swap's clean-up
/// after its failure record waited a whole budget more. One outage, one
/// budget: a command after a spent budget fails at once, and once the far
/// side answers again a new outage gets a budget of its own.
#[test]
fn one_outage_spends_one_retry_budget_across_commands() {
    let mut s = sshd();
    let ssh = Ssh::connect(direct(&s, Duration::from_secs(4))).unwrap();
    // The session's own sshd dies too (stop() keeps open sessions): the
    // sh's parent is the login shell, its parent the connection's sshd.
    let later = "s=$(awk '{print $4}' /proc/$PPID/stat); \
                 (sleep 0.2; kill -9 $s) >/dev/null 2>&1 </dev/null &";
    assert!(ssh
        .run(&argv(&["sh", "-c", later]), None, T)
        .unwrap()
        .success());
    s.stop();
    std::thread::sleep(Duration::from_millis(700));
    let t0 = Instant::now();
    let e = ssh.run(&argv(&["true"]), None, T).unwrap_err();
    let first = t0.elapsed();
    assert!(e.is_transient(), "{e}");
    // Backing off 0.25, 0.5, 1, 2 s, it stops when the next pause would
    // end past the 4 s budget: about 3.75 s.
    assert!(first >= Duration::from_secs(3), "first ran {first:?}");
    let t1 = Instant::now();
    let e = ssh.run(&argv(&["true"]), None, T).unwrap_err();
    let second = t1.elapsed();
    assert!(e.is_transient(), "{e}");
    // What is left of the one budget, not a new one (3.75 s more).
    assert!(
        second < Duration::from_millis(1000) && t0.elapsed() < Duration::from_millis(4500),
        "the second command got a budget of its own: {second:?} (first {first:?})"
    );
    s.restart();
    let out = ssh.run(&argv(&["echo", "up"]), None, T).unwrap();
    assert_eq!(out.stdout_str(), "up\n");
    // A new outage, a new budget: the session dies again, sshd is back
    // after 2 s, and the command rides that out.
    assert!(ssh
        .run(&argv(&["sh", "-c", later]), None, T)
        .unwrap()
        .success());
    let back = outage(s, Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(500));
    let t2 = Instant::now();
    let out = ssh
        .run_idempotent(&argv(&["echo", "again"]), None, T)
        .unwrap();
    assert_eq!(out.stdout_str(), "again\n");
    assert!(
        t2.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        t2.elapsed()
    );
    back.join().unwrap();
}

#[test]
fn auth_failure_is_not_retried() {
    let s = sshd();
    let mut c = direct(&s, Duration::from_secs(30));
    c.key_files = vec![s.unauthorized_key.clone()];
    let t0 = Instant::now();
    let e = Ssh::connect(c).expect_err("unauthorized");
    assert!(
        matches!(e, TransportError::Auth(_)) && !e.is_transient(),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    // One connection, closed by sshd after the one failed attempt.
    std::thread::sleep(Duration::from_millis(200));
    let log = s.log_text();
    assert_eq!(log.matches("authenticating user").count(), 1, "{log}");
}

#[test]
fn unreachable_jump_host_is_a_transport_error_naming_it() {
    let target = sshd();
    let j = jump();
    let kh = known_hosts(&target, &[(&target, true), (&j, true)]);
    let closed = testkit::free_port();
    let cfg = jump_config(&target, &j, closed, &kh);
    let c = cfg.to_str().unwrap();
    let t0 = Instant::now();
    let e = err(open(&[
        "--ssh",
        "gpu1",
        "--ssh-config",
        c,
        "--ssh-retry",
        "1s",
    ]));
    assert!(
        matches!(e, TransportError::Connect(_)) && e.is_transient(),
        "{e}"
    );
    let m = e.to_string();
    assert!(
        m.contains("ProxyJump") && m.contains(&closed.to_string()),
        "{m}"
    );
    assert!(!m.contains('\n'), "one line: {m}");
    assert_eq!(e.exit_code(), exit::TRANSPORT_ERROR);
    // Retried for the budget, not forever.
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(500) && took < Duration::from_secs(4),
        "{took:?}"
    );
}

#[test]
fn malformed_config_line_names_file_and_line() {
    let target = sshd();
    let cfg = target.path("bad_config");
    std::fs::write(&cfg, "Host gpu1\n  HostName 127.0.0.1\n  Port twenty-two\n").unwrap();
    let c = cfg.to_str().unwrap();
    let e = err(open(&["--ssh", "gpu1", "--ssh-config", c]));
    assert!(matches!(e, TransportError::Config(_)), "{e}");
    assert!(e.to_string().starts_with(&format!("{c}:3: ")), "{e}");
    assert_eq!(e.exit_code(), exit::SSH_CONFIG_ERROR);
    assert!(!e.is_transient());
}

#[test]
fn host_key_mismatch_through_the_jump_names_the_target() {
    let (target, j) = (sshd(), jump());
    // The jump's key is right; the target's is not.
    let kh = known_hosts(&target, &[(&target, false), (&j, true)]);
    let cfg = jump_config(&target, &j, j.port, &kh);
    let c = cfg.to_str().unwrap();
    let e = err(open(&[
        "--ssh",
        "gpu1",
        "--ssh-config",
        c,
        "--ssh-retry",
        "30s",
    ]));
    assert!(
        matches!(e, TransportError::HostKey(_)) && !e.is_transient(),
        "{e}"
    );
    let m = e.to_string();
    assert!(m.contains("MISMATCH"), "{m}");
    assert!(
        m.contains(&format!("[127.0.0.1]:{}", target.port))
            && !m.contains(&format!("[127.0.0.1]:{}", j.port)),
        "checked under the target's name: {m}"
    );
    assert!(through_jump(&j, &target), "jump log:\n{}", j.log_text());
}
