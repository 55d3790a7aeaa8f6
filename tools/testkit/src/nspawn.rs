//! A throw-away systemd for tests: `systemd-nspawn -D / --volatile=yes
//! --private-network -b` boots the host's own systemd as PID 1 of a
//! container in about a second; `nsenter -t PID1 -a ...` drives it (the
//! same path as svc-swap's `--exec-prefix`). PID 1 of the test machine is
//! not systemd, and `systemd --user` must never run outside a container.
//!
//! Each container runs in its own cgroup (`sweepkit-nspawn-*`), so that two
//! containers never share nspawn's `payload`/`supervisor` directories;
//! teardown powers it off, kills what is left, and removes those cgroups.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Why container tests cannot run here, or `None` when they can (and the
/// calling test is logged as run for real, see [`crate::ran`]).
pub fn unavailable() -> Option<String> {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("systemd-nspawn").exists()))
        .unwrap_or(false);
    if !found {
        return Some("systemd-nspawn not found (apt-get install systemd-container)".into());
    }
    crate::ran("systemd-nspawn");
    None
}

/// A booted container; powered off and cleaned up on drop.
pub struct Container {
    child: Child,
    /// PID (in our namespace) of the container's systemd.
    pub pid1: u32,
    cgroups: Vec<PathBuf>,
    log: PathBuf,
}

/// The cgroup hierarchies nspawn uses: the unified one on a pure v2
/// machine, else the named systemd hierarchy and the unified one.
fn hierarchies() -> Vec<PathBuf> {
    let root = Path::new("/sys/fs/cgroup");
    if root.join("cgroup.controllers").exists() {
        return vec![root.to_path_buf()];
    }
    ["systemd", "unified"]
        .iter()
        .map(|h| root.join(h))
        .filter(|p| p.join("cgroup.procs").exists())
        .collect()
}

/// The container's systemd: the child of nspawn named `systemd` (nspawn
/// forks a short-lived helper first, which must not be taken for it).
fn child_of(ppid: u32) -> Option<u32> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let is_systemd = stat.contains("(systemd)");
        if is_systemd && rest.split_whitespace().nth(1) == Some(&ppid.to_string()) {
            return Some(pid);
        }
    }
    None
}

impl Container {
    /// Boot a container with `binds` (host path, container path) mounted
    /// read-only; returns once `systemctl is-system-running` answers
    /// running or degraded.
    pub fn boot(binds: &[(&Path, &str)]) -> Result<Container, String> {
        Self::boot_in(binds, None)
    }

    /// Boot a container that shares `net`'s network namespace instead of
    /// getting its own: several "hosts" on one 127.0.0.1, each server on
    /// its own port, reachable from one `nsenter -t PID -n` (fleet tests).
    pub fn boot_sharing_network(
        binds: &[(&Path, &str)],
        net: &Container,
    ) -> Result<Container, String> {
        Self::boot_in(binds, Some(format!("/proc/{}/ns/net", net.pid1)))
    }

    /// Boot a container inside `ns`, a testkit network namespace this
    /// machine reaches at `ns.addr`: a host reached over SSH by address
    /// (an sshd started in `ns`), its server listening on `ns.addr`.
    pub fn boot_in_netns(
        binds: &[(&Path, &str)],
        ns: &crate::netns::Netns,
    ) -> Result<Container, String> {
        Self::boot_in(binds, Some(format!("/run/netns/{}", ns.name)))
    }

    fn boot_in(binds: &[(&Path, &str)], netns: Option<String>) -> Result<Container, String> {
        let tag = format!(
            "sweepkit-nspawn-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let cgroups: Vec<PathBuf> = hierarchies().iter().map(|h| h.join(&tag)).collect();
        let log = crate::temp_dir("nspawn").join("console.log");
        // The shell moves itself into the fresh cgroups, then becomes nspawn
        // (--keep-unit: nspawn stays in the cgroup it was started in).
        let script = r#"while [ "$1" != "--" ]; do mkdir -p "$1" && echo $$ > "$1/cgroup.procs" || exit 90; shift; done
shift; exec systemd-nspawn "$@""#;
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script).arg("sh").args(&cgroups).arg("--");
        cmd.args(["-D", "/", "--volatile=yes", "--register=no"]);
        match netns {
            Some(path) => cmd.arg(format!("--network-namespace-path={path}")),
            None => cmd.arg("--private-network"),
        };
        cmd.args(["--keep-unit", "--console=read-only"]);
        for (host, inside) in binds {
            cmd.arg(format!("--bind-ro={}:{inside}", host.display()));
        }
        cmd.args(["-b", "--", "systemd.firstboot=off"]);
        let out = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("systemd-nspawn: {e}"))?;
        let mut c = Container {
            child,
            pid1: 0,
            cgroups,
            log,
        };
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(30) {
            if let Ok(Some(st)) = c.child.try_wait() {
                return Err(format!("systemd-nspawn exited {st}: {}", c.console()));
            }
            c.pid1 = child_of(c.child.id()).unwrap_or(0);
            if c.pid1 != 0 {
                let o = c.run(&["systemctl", "is-system-running"]);
                let state = String::from_utf8_lossy(&o.stdout).trim().to_string();
                if state == "running" || state == "degraded" {
                    return Ok(c);
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!("container did not boot in 30 s: {}", c.console()))
    }

    /// The prefix that runs a command inside: `nsenter -t PID -a`.
    pub fn exec_prefix(&self) -> String {
        format!("nsenter -t {} -a", self.pid1)
    }

    /// Run `argv` inside the container.
    pub fn run(&self, argv: &[&str]) -> Output {
        Command::new("nsenter")
            .args(["-t", &self.pid1.to_string(), "-a"])
            .args(argv)
            .stdin(Stdio::null())
            .output()
            .expect("run nsenter")
    }

    /// Run `script` with `sh -c` inside; stdout as a string (panics on failure).
    pub fn sh(&self, script: &str) -> String {
        let o = self.run(&["sh", "-c", script]);
        assert!(
            o.status.success(),
            "in container: {script}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Write a file inside the container (directories created).
    pub fn write_file(&self, path: &str, text: &str) {
        let mut child = Command::new("nsenter")
            .args(["-t", &self.pid1.to_string(), "-a", "sh", "-c"])
            .arg(r#"mkdir -p "$(dirname "$1")" && cat > "$1""#)
            .args(["sh", path])
            .stdin(Stdio::piped())
            .spawn()
            .expect("nsenter");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success(), "writing {path}");
    }

    /// What the container printed on its console so far.
    pub fn console(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if let Some(p) = child_of(self.child.id()) {
            self.pid1 = p;
        }
        if self.pid1 != 0 {
            let _ = Command::new("nsenter")
                .args(["-t", &self.pid1.to_string(), "-a", "systemctl", "poweroff"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(15) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        if let Ok(None) = self.child.try_wait() {
            // Killing the container's PID 1 ends its whole PID namespace.
            if self.pid1 != 0 {
                let _ = Command::new("kill")
                    .args(["-KILL", &self.pid1.to_string()])
                    .status();
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        // Remove the cgroups nspawn left, deepest first; empty ones only.
        for _ in 0..50 {
            let mut left = false;
            for cg in &self.cgroups {
                if cg.exists() {
                    let _ = Command::new("find")
                        .arg(cg)
                        .args(["-depth", "-type", "d", "-exec", "rmdir", "{}", ";"])
                        .stderr(Stdio::null())
                        .status();
                    left |= cg.exists();
                }
            }
            if !left {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(dir) = self.log.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}
