//! A throw-away systemd for tests: `systemd-nspawn -D / --volatile=yes
//! --private-network -b` boots the host's own systemd as PID 1 of a
//! container in about a second; `nsenter -t PID1 -a ...` drives it (the
//! same path as svc-swap's `--exec-prefix`). PID 1 of the test machine is
//! not systemd, and `systemd --user` must never run outside a container.
//!
//! The container boots [`TARGET`], sysinit.target and nothing after it,
//! and the first boot's presets enable nothing, so what the host has
//! installed never starts inside (issue 21: with podman installed,
//! podman-restart.service waited on systemd-networkd-wait-online and the
//! boot never finished). The tests start their own units.
//!
//! Each container runs in its own cgroup (`sweepkit-nspawn-*`), so that two
//! containers never share nspawn's `payload`/`supervisor` directories;
//! teardown powers it off, kills what is left, and removes those cgroups.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The unit a container boots instead of the host's default target.
pub const TARGET: &str = "sweepkit-test.target";

/// [`TARGET`]: sysinit.target (journald, tmpfiles, the API mounts) is all
/// the tests need, and the units they start require it anyway. Booting
/// the host's default target would start every service the host enables
/// and pulls in statically (dbus, logind, getty); the boot unit must allow
/// isolation, which sysinit.target does not.
const TARGET_UNIT: &str = "[Unit]\nDescription=sweepkit test container (sysinit only)\n\
    Requires=sysinit.target\nAfter=sysinit.target\nAllowIsolate=yes\n";

/// The volatile /etc is empty, so systemd takes every boot for a first
/// boot and applies the presets to all installed units; Debian's presets
/// enable everything (ssh.socket, nftables and systemd-networkd in the
/// network namespace the container may share, podman.service). A preset
/// file that sorts before all others and disables everything wins.
const PRESET: &str = "disable *\n";

/// How long [`Container::boot`] waits for [`TARGET`]; it takes about a second.
pub const BOOT_LIMIT: Duration = Duration::from_secs(30);

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

/// One container at a time in a test binary: the machine has 2 cores.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A container with the workspace's built binaries bound at
/// /opt/sweepkit/bin, booted while this test binary's one-container lock is
/// held (keep the guard as long as the container); `None`, with a skip
/// note, where systemd-nspawn is missing.
pub fn boot_with_bins() -> Option<(Container, std::sync::MutexGuard<'static, ()>)> {
    if let Some(why) = unavailable() {
        crate::skip(&why);
        return None;
    }
    let guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let bin = crate::bin("llm-sim");
    let c =
        Container::boot(&[(bin.parent().unwrap(), "/opt/sweepkit/bin")]).expect("boot container");
    Some((c, guard))
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
    /// read-only; returns once its systemd has reached [`TARGET`], within
    /// [`BOOT_LIMIT`].
    pub fn boot(binds: &[(&Path, &str)]) -> Result<Container, String> {
        Self::boot_in(binds, None, BOOT_LIMIT)
    }

    /// [`Container::boot`] that gives up after `limit`; the error names
    /// the units whose jobs held the boot up and those that failed.
    pub fn boot_within(binds: &[(&Path, &str)], limit: Duration) -> Result<Container, String> {
        Self::boot_in(binds, None, limit)
    }

    /// Boot a container that shares `net`'s network namespace instead of
    /// getting its own: several "hosts" on one 127.0.0.1, each server on
    /// its own port, reachable from one `nsenter -t PID -n` (fleet tests).
    pub fn boot_sharing_network(
        binds: &[(&Path, &str)],
        net: &Container,
    ) -> Result<Container, String> {
        Self::boot_in(
            binds,
            Some(format!("/proc/{}/ns/net", net.pid1)),
            BOOT_LIMIT,
        )
    }

    /// Boot a container inside `ns`, a testkit network namespace this
    /// machine reaches at `ns.addr`: a host reached over SSH by address
    /// (an sshd started in `ns`), its server listening on `ns.addr`.
    pub fn boot_in_netns(
        binds: &[(&Path, &str)],
        ns: &crate::netns::Netns,
    ) -> Result<Container, String> {
        Self::boot_in(binds, Some(format!("/run/netns/{}", ns.name)), BOOT_LIMIT)
    }

    fn boot_in(
        binds: &[(&Path, &str)],
        netns: Option<String>,
        limit: Duration,
    ) -> Result<Container, String> {
        let tag = format!(
            "sweepkit-nspawn-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let cgroups: Vec<PathBuf> = hierarchies().iter().map(|h| h.join(&tag)).collect();
        let dir = crate::temp_dir("nspawn");
        let log = dir.join("console.log");
        let own = [
            (
                "target",
                TARGET_UNIT,
                format!("/etc/systemd/system/{TARGET}"),
            ),
            (
                "preset",
                PRESET,
                "/etc/systemd/system-preset/00-sweepkit-test.preset".into(),
            ),
        ];
        let mut own_binds = Vec::new();
        for (name, text, inside) in own {
            let host = dir.join(name);
            std::fs::write(&host, text).map_err(|e| format!("{}: {e}", host.display()))?;
            own_binds.push((host, inside));
        }
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
        // The caller's binds come last: a test may add a drop-in under /etc.
        let own_binds = own_binds.iter().map(|(h, i)| (h.as_path(), i.as_str()));
        for (host, inside) in own_binds.chain(binds.iter().copied()) {
            cmd.arg(format!("--bind-ro={}:{inside}", host.display()));
        }
        cmd.args(["-b", "--", "systemd.firstboot=off"]);
        cmd.arg(format!("systemd.unit={TARGET}"));
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
        while t0.elapsed() < limit {
            if let Ok(Some(st)) = c.child.try_wait() {
                return Err(format!("systemd-nspawn exited {st}: {}", c.console()));
            }
            c.pid1 = child_of(c.child.id()).unwrap_or(0);
            // Active means the boot job is done: the manager answers and
            // every unit ordered before the target has started or failed (a
            // wanted unit that fails is let pass, as "degraded" was before).
            if c.pid1 != 0 && c.answer(&["systemctl", "is-active", TARGET]) == "active" {
                return Ok(c);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "container did not boot in {} s: {}\nconsole (last {CONSOLE_TAIL} lines):\n{}",
            limit.as_secs_f64(),
            c.held_up(),
            tail(&c.console(), CONSOLE_TAIL)
        ))
    }

    /// stdout of `argv` inside, trimmed ("" when nsenter cannot run).
    fn answer(&self, argv: &[&str]) -> String {
        Command::new("nsenter")
            .args(["-t", &self.pid1.to_string(), "-a"])
            .args(argv)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    /// Which units a boot that did not finish waits on, and which failed.
    fn held_up(&self) -> String {
        if self.pid1 == 0 {
            return "systemd never started in it".into();
        }
        let state = self.answer(&["systemctl", "is-system-running"]);
        if state.is_empty() {
            return "its systemd does not answer systemctl".into();
        }
        let jobs = self.answer(&["systemctl", "list-jobs", "--no-legend", "--no-pager"]);
        let failed = self.answer(&[
            "systemctl",
            "--failed",
            "--no-legend",
            "--no-pager",
            "--plain",
        ]);
        format!("{}; is-system-running: {state}", held_up(&jobs, &failed))
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

    /// Whether `curl -sf URL` inside succeeds within `limit` (50 ms polls).
    pub fn curl_ok_within(&self, url: &str, limit: Duration) -> bool {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if self.run(&["curl", "-sf", url]).status.success() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// Panic with `unit`'s last journal lines unless llm-sim's /health on
    /// 127.0.0.1:`port` inside answers 200 within `limit`.
    pub fn sim_healthy_within(&self, port: u16, unit: &str, limit: Duration) {
        let url = format!("http://127.0.0.1:{port}/health");
        if !self.curl_ok_within(&url, limit) {
            panic!(
                "llm-sim in the container never healthy:\n{}",
                self.sh(&format!("journalctl -u {unit} -n 30 -o cat; true"))
            );
        }
    }

    /// llm-sim's /server_info on 127.0.0.1:`port` inside once /health is
    /// 200 (20 s; else `unit`'s journal in the panic).
    pub fn sim_server_info(&self, port: u16, unit: &str) -> serde_json::Value {
        self.sim_healthy_within(port, unit, Duration::from_secs(20));
        let body = self.sh(&format!("curl -sf http://127.0.0.1:{port}/server_info"));
        serde_json::from_str(&body).unwrap()
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

/// Console lines a boot error quotes: the units' own messages come last.
const CONSOLE_TAIL: usize = 40;

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// "held up by A (start running); waiting: B, C; failed: D" from `systemctl
/// list-jobs --no-legend` (`ID UNIT TYPE STATE`) and `systemctl --failed
/// --no-legend --plain` (`UNIT LOAD ACTIVE SUB DESCRIPTION`). A job that
/// runs is the one holding the boot; waiting ones only follow it.
fn held_up(jobs: &str, failed: &str) -> String {
    let (mut running, mut waiting) = (Vec::new(), Vec::new());
    for line in jobs.lines() {
        if let [_, unit, kind, state, ..] = line.split_whitespace().collect::<Vec<_>>()[..] {
            if state == "running" {
                running.push(format!("{unit} ({kind} running)"));
            } else {
                waiting.push(unit.to_string());
            }
        }
    }
    let failed: Vec<&str> = failed
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut parts = Vec::new();
    if !running.is_empty() {
        parts.push(format!("held up by {}", running.join(", ")));
    }
    if !waiting.is_empty() {
        parts.push(format!("waiting: {}", waiting.join(", ")));
    }
    if !failed.is_empty() {
        parts.push(format!("failed: {}", failed.join(", ")));
    }
    if parts.is_empty() {
        return format!("no job running and no unit failed, yet {TARGET} is not active");
    }
    parts.join("; ")
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

#[cfg(test)]
mod tests {
    use super::held_up;

    // What a container with the host's podman showed after 45 s (issue 21).
    const JOBS: &str = "\
110 systemd-networkd-wait-online.service start running
108 podman-restart.service               start waiting
109 network-online.target                start waiting
1   graphical.target                     start waiting
";
    const FAILED: &str = "\
nftables.service loaded failed failed nftables
ssh.service      loaded failed failed OpenBSD Secure Shell server
";

    #[test]
    fn held_up_names_the_running_job_then_the_waiting_and_failed_units() {
        assert_eq!(
            held_up(JOBS, FAILED),
            "held up by systemd-networkd-wait-online.service (start running); \
             waiting: podman-restart.service, network-online.target, graphical.target; \
             failed: nftables.service, ssh.service"
        );
    }

    #[test]
    fn held_up_says_so_when_nothing_is_pending() {
        assert!(held_up("", "").starts_with("no job running and no unit failed"));
        assert_eq!(held_up("", FAILED), "failed: nftables.service, ssh.service");
    }
}
