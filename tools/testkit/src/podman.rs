//! Real podman containers for the container tests (svc-swap `--container`,
//! `--compose`; wait-ready `--container`), with no image registry: the
//! host's root filesystem as an overlay (`--rootfs /:O`), host networking,
//! so a container runs the workspace's own llm-sim on a loopback port.
//! Podman 4.3 on these machines needs the runc runtime (crun fails with
//! "cgroups in hybrid mode not supported") and rlimits lowered to what the
//! host allows. Every container is named `sweepkit-test-...` and removed,
//! with what svc-swap kept of it, on drop. A [`Ctr`] can live in a test's
//! own Docker engine too ([`Ctr::run_docker`], crate::docker).

use std::process::{Command, Stdio};

/// What every test container is created with, before the command.
pub const RUN_FLAGS: &[&str] = &[
    "--net=host",
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=4096:4096",
];

/// `podman --runtime runc`: the global flags of every create here.
pub fn podman() -> Command {
    let mut c = Command::new("podman");
    c.args(["--runtime", "runc"]);
    c
}

/// True when podman and runc can run a container here; otherwise the
/// gate's skip (a failure under CI / SWEEPKIT_REQUIRE_ALL=1) has been
/// recorded and the test returns.
pub fn gate() -> bool {
    let have = |p: &str| {
        Command::new("sh")
            .args(["-c", "command -v \"$1\" >/dev/null", "sh", p])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    if !have("podman") || !have("runc") {
        crate::skip("podman with the runc runtime (scripts/deps.sh installs both)");
        return false;
    }
    crate::ran("podman");
    true
}

/// A container that is removed (with svc-swap's kept copies) on drop.
pub struct Ctr {
    pub name: String,
    /// The `DOCKER_HOST` of the test's dockerd; None: podman.
    docker: Option<String>,
}

impl Ctr {
    /// `podman run -d --name sweepkit-test-TAG-PID RUN_FLAGS extra
    /// --rootfs /:O argv...`; panics with podman's stderr when it fails.
    pub fn run(tag: &str, extra: &[&str], argv: &[&str]) -> Ctr {
        let c = Ctr::named(tag);
        crate::helper::checked(
            podman()
                .args(["run", "-d", "--name", &c.name])
                .args(RUN_FLAGS)
                .args(extra)
                .args(["--rootfs", "/:O"])
                .args(argv),
            &format!("podman run {}", c.name),
        );
        c
    }

    /// `docker run -d --name sweepkit-test-TAG-PID --net=host extra IMAGE
    /// argv...` in the test's own dockerd (crate::docker::IMAGE holds
    /// llm-sim at its own path, so `argv` is the same as with podman).
    pub fn run_docker(d: &crate::docker::Dockerd, tag: &str, extra: &[&str], argv: &[&str]) -> Ctr {
        let mut c = Ctr::named(tag);
        c.docker = Some(d.host.clone());
        c.remove();
        crate::helper::checked(
            c.cli()
                .args(["run", "-d", "--name", &c.name, "--net=host"])
                .args(extra)
                .arg(crate::docker::IMAGE)
                .args(argv),
            &format!("docker run {}", c.name),
        );
        c
    }

    /// llm-sim on 127.0.0.1:`port` (host networking), loading and warming
    /// up in 10 ms, speculating as SGLang accepts (`flags::eagle("1")`),
    /// then `sim_args`: in the test's dockerd when `d` is given, else in
    /// podman, with `extra` run flags.
    pub fn run_sim(
        d: Option<&crate::docker::Dockerd>,
        tag: &str,
        extra: &[&str],
        port: u16,
        sim_args: &[&str],
    ) -> Ctr {
        let sim = crate::bin("llm-sim").display().to_string();
        let p = port.to_string();
        let mut argv = vec![
            sim.as_str(),
            "--host",
            "127.0.0.1",
            "--port",
            &p,
            "--load-time",
            "10ms",
            "--warmup-time",
            "10ms",
        ];
        argv.extend(crate::flags::eagle("1"));
        argv.extend(sim_args);
        match d {
            Some(d) => Ctr::run_docker(d, tag, extra, &argv),
            None => Ctr::run(tag, extra, &argv),
        }
    }

    /// A name only (for a container something else creates).
    pub fn named(tag: &str) -> Ctr {
        let name = format!("sweepkit-test-{tag}-{}", std::process::id());
        let c = Ctr { name, docker: None };
        c.remove();
        c
    }

    /// The engine's name, as svc-swap's `--engine` takes it.
    pub fn engine(&self) -> &'static str {
        if self.docker.is_some() {
            "docker"
        } else {
            "podman"
        }
    }

    /// The engine's CLI (docker with the test daemon's `DOCKER_HOST`).
    pub fn cli(&self) -> Command {
        match &self.docker {
            Some(host) => {
                let mut c = Command::new("docker");
                c.env("DOCKER_HOST", host);
                c
            }
            None => Command::new("podman"),
        }
    }

    /// `ENGINE container inspect --format F NAME`, trimmed ("" when gone).
    pub fn inspect(&self, format: &str) -> String {
        self.inspect_other(&self.name, format)
    }

    /// The same for another container of this one's engine.
    pub fn inspect_other(&self, name: &str, format: &str) -> String {
        let out = self
            .cli()
            .args(["container", "inspect", "--format", format, "--", name])
            .stderr(Stdio::null())
            .output()
            .expect("the engine runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn inspect_of(name: &str, format: &str) -> String {
        let out = Command::new("podman")
            .args(["container", "inspect", "--format", format, "--", name])
            .stderr(Stdio::null())
            .output()
            .expect("podman runs");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Names of every container that starts with this one's name.
    pub fn family(&self) -> Vec<String> {
        let out = self
            .cli()
            .args(["ps", "-a", "--format", "{{.Names}}"])
            .output()
            .expect("the engine runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|n| *n == self.name || n.starts_with(&format!("{}.", self.name)))
            .map(String::from)
            .collect()
    }

    fn remove(&self) {
        // svc-swap's record of the container's definition and its backups.
        let def = format!("container-{}-{}.json", self.engine(), self.name);
        if let Ok(rd) = std::fs::read_dir("/run/sweepkit-swap") {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with(&def) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let force: &[&str] = if self.docker.is_some() {
            &["rm", "-f"]
        } else {
            &["rm", "-f", "-t", "0"]
        };
        for n in self.family() {
            crate::helper::quietly(self.cli().args(force).args(["--", &n]));
        }
    }
}

impl Drop for Ctr {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Every file under svc-swap's state (/run/sweepkit-swap, where it keeps
/// container definitions and its jobs' files) whose bytes hold `secret`.
pub fn state_files_holding(secret: &str) -> Vec<String> {
    let mut hits = Vec::new();
    let mut dirs = vec![std::path::PathBuf::from("/run/sweepkit-swap")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(secret))
            {
                hits.push(p.display().to_string());
            }
        }
    }
    hits
}

/// True when podman-compose can run here too (see `gate`).
pub fn compose_gate() -> bool {
    if !gate() {
        return false;
    }
    let ok = Command::new("podman-compose")
        .arg("version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        crate::skip("podman-compose (scripts/deps.sh installs it from PyPI)");
        return false;
    }
    crate::ran("podman-compose");
    true
}

/// A Compose project in its own directory (`sweepkit-test-TAG-PID`, so the
/// project name is unique), brought down with its pod and files on drop.
pub struct Project {
    pub dir: std::path::PathBuf,
    pub file: std::path::PathBuf,
    /// podman-compose's project name: the directory's name.
    pub name: String,
}

/// The service keys every test service needs here (podman-compose
/// passes `runtime` and `ulimits` to `podman create`; `x-podman.rootfs`
/// is its registry-free root filesystem), indented for a service.
pub const SERVICE_KEYS: &str = "    runtime: runc\n    network_mode: host\n    x-podman.rootfs: \"/:O\"\n    ulimits:\n      nofile: {soft: 1024, hard: 1024}\n      nproc: {soft: 4096, hard: 4096}\n";

impl Project {
    /// Write `text` as `compose.yaml` in a fresh directory.
    pub fn new(tag: &str, text: &str) -> Project {
        let name = format!("sweepkit-test-{tag}-{}", std::process::id());
        let dir = std::env::temp_dir().join(&name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("project dir");
        let file = dir.join("compose.yaml");
        std::fs::write(&file, text).expect("compose file");
        let p = Project { dir, file, name };
        p.down();
        p
    }

    /// `podman-compose up -d` (panics with its output when it fails).
    pub fn up(&self) {
        let out = self.compose(&["up", "-d"]);
        assert!(
            out.status.success(),
            "podman-compose up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The container podman-compose names for SERVICE (`PROJECT_SERVICE_1`).
    pub fn container(&self, service: &str) -> String {
        format!("{}_{service}_1", self.name)
    }

    pub fn compose(&self, args: &[&str]) -> std::process::Output {
        Command::new("podman-compose")
            .current_dir(&self.dir)
            .arg("-f")
            .arg(&self.file)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("podman-compose runs")
    }

    pub fn text(&self) -> String {
        std::fs::read_to_string(&self.file).expect("compose file")
    }

    fn down(&self) {
        if self.file.exists() {
            let _ = self.compose(&["down", "-t", "0"]);
        }
        crate::helper::quietly(Command::new("podman").args([
            "pod",
            "rm",
            "-f",
            &format!("pod_{}", self.name),
        ]));
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        self.down();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
