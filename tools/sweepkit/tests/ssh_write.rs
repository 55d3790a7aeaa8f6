//! `Transport::write_file` over a real sshd (testkit's harness, 127.0.0.1)
//! when the session drops mid-write: the file is left old or new, never
//! half-written, no temp file stays behind, and the error keeps its
//! transport class (exit 21). With a retry budget the write is made again
//! once sshd is back. Run with `cargo test -p sweepkit --features ssh,cli`.

use std::path::Path;
use std::time::{Duration, Instant};

use sweepkit::exit;
use sweepkit::ssh::{Ssh, SshConfig};
use sweepkit::transport::{Transport, WriteError};
use testkit::sshd::Sshd;

const T: Duration = Duration::from_secs(60);

fn sshd() -> Sshd {
    Sshd::start().expect("sshd installed (scripts/deps.sh installs openssh-server)")
}

fn connect(s: &Sshd, retry: Duration) -> Ssh {
    let mut c = SshConfig::new(s.target().parse().unwrap());
    c.key_files = vec![s.client_key.clone()];
    c.known_hosts = Some(s.known_hosts.clone());
    c.use_agent = false;
    c.retry = retry;
    Ssh::connect(c).unwrap_or_else(|e| panic!("{e}\nsshd log:\n{}", s.log_text()))
}

fn ppid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")?.1.split(' ').nth(1)?.parse().ok()
}

/// The sshd session process serving the far-side `sh` whose argv holds
/// `path` (sh's parent is the login shell, its parent that sshd).
fn session_of(path: &Path) -> Option<u32> {
    let want = path.to_str().unwrap().as_bytes();
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let is_writer =
            argv.starts_with(b"sh\0-c\0t=") && argv.split(|b| *b == 0).any(|w| w == want);
        if is_writer {
            return ppid(ppid(pid)?);
        }
    }
    None
}

/// Wait until the write to `path` is under way (its temp file has
/// bytes); the session's sshd PID then.
fn mid_write(dir: &Path, path: &Path) -> Option<u32> {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(30) {
        let growing = std::fs::read_dir(dir).unwrap().flatten().any(|e| {
            e.file_name().to_string_lossy().contains(".sweepkit-tmp.")
                && e.metadata().map_or(0, |m| m.len()) > 0
        });
        if let (true, Some(sess)) = (growing, session_of(path)) {
            return Some(sess);
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    None
}

fn kill9(pid: u32) -> bool {
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// The directory's entries once the far side's writer has cleaned up.
fn settled(dir: &Path) -> Vec<String> {
    let names = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) && names().len() > 1 {
        std::thread::sleep(Duration::from_millis(50));
    }
    names()
}

/// Big enough that the transfer takes a while on loopback, so the cut
/// lands mid-write; every byte position distinct enough to spot a tear.
fn payload() -> Vec<u8> {
    (0..48u32 << 20).map(|i| (i % 251) as u8).collect()
}

#[test]
fn session_dropped_mid_write_keeps_the_old_file_and_the_transport_class() {
    let s = sshd();
    let ssh = connect(&s, Duration::ZERO);
    let dir = s.path("drop");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("unit 'q' $(x).service");
    std::fs::write(&path, "old\n").unwrap();
    let (d, p) = (dir.clone(), path.clone());
    let cut = std::thread::spawn(move || mid_write(&d, &p).is_some_and(kill9));
    let e = ssh
        .write_file(path.to_str().unwrap(), &payload(), T)
        .unwrap_err();
    assert!(cut.join().unwrap(), "the session was never cut mid-write");
    assert!(
        matches!(e, WriteError::Transport { ref err, .. } if err.is_transient()),
        "{e}"
    );
    assert_eq!(e.exit_code(), exit::TRANSPORT_ERROR, "{e}");
    let m = e.to_string();
    assert!(!m.contains('\n') && m.contains("writing "), "one line: {m}");
    assert_eq!(std::fs::read(&path).unwrap(), b"old\n", "half-written");
    assert_eq!(
        settled(&dir).len(),
        1,
        "temp file left: {:?}",
        settled(&dir)
    );
}

#[test]
fn outage_mid_write_is_ridden_out_and_written_once_whole() {
    let mut s = sshd();
    let ssh = connect(&s, Duration::from_secs(30));
    let dir = s.path("outage");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("sim.spec");
    std::fs::write(&path, "old\n").unwrap();
    // Mid-write, sshd stops listening, the session is cut, and sshd is
    // back 3 s later.
    let t0 = Instant::now();
    let new = payload();
    let cut = std::thread::scope(|sc| {
        let outage = sc.spawn(|| {
            let sess = mid_write(&dir, &path);
            s.stop();
            let cut = sess.is_some_and(kill9);
            std::thread::sleep(Duration::from_secs(3));
            s.restart();
            cut
        });
        ssh.write_file(path.to_str().unwrap(), &new, T)
            .expect("written again once sshd was back");
        outage.join().unwrap()
    });
    assert!(cut, "the session was never cut mid-write");
    assert!(
        t0.elapsed() >= Duration::from_millis(2500),
        "{:?}",
        t0.elapsed()
    );
    assert!(
        std::fs::read(&path).unwrap() == new,
        "the file is not the new one"
    );
    assert_eq!(settled(&dir), ["sim.spec"], "temp file left behind");
}
