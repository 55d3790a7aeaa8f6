//! A real Docker engine for the container tests, started by the test
//! itself: Debian's `docker.io` dockerd as root with everything of its own
//! under a temp dir (data root, exec root, its unix socket, pid file), no
//! iptables, no bridge (host networking only), the vfs storage driver (no
//! overlay mounts to clean up), and one local image made with `docker
//! import` of a tarball holding llm-sim at its own absolute path and the
//! libraries `ldd` lists (no registry). It never touches a daemon the
//! machine may run (/var/run/docker.sock): clients reach this one through
//! `DOCKER_HOST`. Stopped, with its containers, on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The image every docker test container runs.
pub const IMAGE: &str = "sweepkit-test-sim:local";

/// One test's own dockerd.
pub struct Dockerd {
    /// `unix:///tmp/skd-PID-N/d.sock`, for `DOCKER_HOST`.
    pub host: String,
    dir: PathBuf,
    child: Child,
}

fn have(p: &str) -> bool {
    Command::new("sh")
        .args(["-c", "command -v \"$1\" >/dev/null", "sh", p])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl Dockerd {
    /// Starts dockerd and imports [`IMAGE`]; None (the gate's skip, a
    /// failure under CI / SWEEPKIT_REQUIRE_ALL=1) when dockerd or its
    /// client is missing. Panics with dockerd's log when it does not come up.
    pub fn start() -> Option<Dockerd> {
        if !have("dockerd") || !have("docker") {
            crate::skip("dockerd and docker (Debian's docker.io; scripts/deps.sh installs it)");
            return None;
        }
        crate::ran("dockerd");
        // Short: containerd's socket lives under the exec root and a unix
        // socket's path has 108 bytes at most.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = PathBuf::from(format!("/tmp/skd-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).expect("dockerd dir");
        let log = std::fs::File::create(dir.join("log")).expect("dockerd log");
        let sock = dir.join("d.sock");
        let child = Command::new("dockerd")
            .args(["--iptables=false", "--ip6tables=false", "--bridge=none"])
            .args(["--storage-driver=vfs", "--shutdown-timeout=2"])
            .arg(format!("--data-root={}", dir.join("data").display()))
            .arg(format!("--exec-root={}", dir.join("x").display()))
            .arg(format!("--pidfile={}", dir.join("pid").display()))
            .arg(format!("--host=unix://{}", sock.display()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("dockerd runs");
        let d = Dockerd {
            host: format!("unix://{}", sock.display()),
            dir,
            child,
        };
        d.wait_up();
        d.import();
        Some(d)
    }

    /// `docker` talking to this daemon.
    pub fn docker(&self) -> Command {
        let mut c = Command::new("docker");
        c.env("DOCKER_HOST", &self.host);
        c
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    fn wait_up(&self) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            let ok = self
                .docker()
                .arg("version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("dockerd did not answer within 60 s:\n{}", self.log());
    }

    /// [`IMAGE`]: llm-sim at its own path, with its libraries.
    fn import(&self) {
        self.import_binaries(IMAGE, &[crate::bin("llm-sim")]);
    }

    /// A local image named `image` holding `binaries` at their own absolute
    /// paths with the libraries `ldd` lists (no shell, no registry).
    pub fn import_binaries(&self, image: &str, binaries: &[PathBuf]) {
        let root = self
            .dir
            .join(format!("root-{}", image.replace([':', '/'], "_")));
        let mut files = binaries.to_vec();
        for b in binaries {
            let ldd = Command::new("ldd").arg(b).output().expect("ldd runs");
            for w in String::from_utf8_lossy(&ldd.stdout).split_whitespace() {
                if w.starts_with('/') {
                    files.push(PathBuf::from(w));
                }
            }
        }
        for f in &files {
            let to = root.join(f.strip_prefix("/").unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(f, &to).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        }
        let tar = root.with_extension("tar");
        tar_dir(&root, &tar);
        crate::helper::checked(
            self.docker().arg("import").arg(&tar).arg(image),
            "docker import",
        );
    }
}

fn tar_dir(root: &Path, tar: &Path) {
    let ok = Command::new("tar")
        .arg("-C")
        .arg(root)
        .arg("-cf")
        .arg(tar)
        .arg(".")
        .status()
        .expect("tar runs");
    assert!(ok.success(), "tar of {}", root.display());
}

impl Drop for Dockerd {
    fn drop(&mut self) {
        // SIGTERM: dockerd stops its containers and its containerd, then exits.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if self.child.try_wait().ok().flatten().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // dockerd leaves its network namespace mounted (x/netns/default).
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
        let mut under: Vec<&str> = mounts
            .lines()
            .filter_map(|l| l.split(' ').nth(1))
            .filter(|m| Path::new(m).starts_with(&self.dir))
            .collect();
        under.sort_by_key(|m| std::cmp::Reverse(m.len()));
        for m in under {
            let _ = Command::new("umount").arg(m).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
