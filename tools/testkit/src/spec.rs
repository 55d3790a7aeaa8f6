//! A process spec (svc-swap's process manager) that runs llm-sim on a
//! fresh loopback port: the one fixture of the tests that swap a local
//! server (svc-swap's own, wait-ready's schedule checks).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::Run;

/// SGLang's speculative flags as SGLang accepts them (EAGLE, topk 1,
/// steps 1), as a spec's words.
pub const EAGLE: &str =
    "--speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1";

/// A directory name that would run commands if anything spliced it into
/// a shell.
pub const SHELL_DIR: &str = "d $(touch PWNED) ;x 'q";

/// `sim.spec` in its own directory; the server it started is killed (its
/// process group) and the directory removed on drop.
pub struct SimSpec {
    /// The directory holding the spec.
    pub dir: PathBuf,
    /// The spec's path.
    pub spec: String,
    pub port: u16,
    /// What drop removes: `dir`, or the temp dir above a [`SHELL_DIR`].
    root: PathBuf,
}

/// `ExecStart=llm-sim --host 127.0.0.1 --port PORT --load-time 10ms
/// --warmup-time 10ms FLAGS`, `TimeoutStopSec=10`, `Port=PORT`.
pub fn quick_sim(sim: &str, port: u16, flags: &str) -> String {
    format!(
        "ExecStart={sim} --host 127.0.0.1 --port {port} --load-time 10ms \
         --warmup-time 10ms {flags}\nTimeoutStopSec=10\nPort={port}\n"
    )
}

/// The PID in the process manager's `SPEC.pid`, `None` before a start.
pub fn spec_pid(spec: &str) -> Option<u32> {
    std::fs::read_to_string(format!("{spec}.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// SIGKILL the process group `pid` leads, then `pid` itself.
pub fn kill_spec_server(pid: u32) {
    for target in [format!("-{pid}"), pid.to_string()] {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &target])
            .stderr(Stdio::null())
            .status();
    }
}

impl SimSpec {
    /// [`quick_sim`] with `flags`, in a fresh temp dir.
    pub fn new(tag: &str, flags: &str) -> SimSpec {
        SimSpec::write(tag, None, |sim, port| quick_sim(sim, port, flags))
    }

    /// [`quick_sim`] with `flags`, in a [`SHELL_DIR`] of a fresh temp dir.
    pub fn in_shell_dir(tag: &str, flags: &str) -> SimSpec {
        SimSpec::write(tag, Some(SHELL_DIR), |sim, port| {
            quick_sim(sim, port, flags)
        })
    }

    /// The spec `text(llm-sim's path, port)` writes, in a fresh temp dir or
    /// in `subdir` of one.
    pub fn write(
        tag: &str,
        subdir: Option<&str>,
        text: impl FnOnce(&str, u16) -> String,
    ) -> SimSpec {
        let root = crate::temp_dir(tag);
        let dir = match subdir {
            Some(sub) => root.join(sub),
            None => root.clone(),
        };
        std::fs::create_dir_all(&dir).unwrap();
        let port = crate::free_port();
        let spec = dir.join("sim.spec");
        let sim = crate::bin("llm-sim").display().to_string();
        std::fs::write(&spec, text(&sim, port)).unwrap();
        SimSpec {
            spec: spec.to_str().unwrap().to_string(),
            dir,
            port,
            root,
        }
    }

    pub fn text(&self) -> String {
        std::fs::read_to_string(&self.spec).unwrap()
    }

    /// The PID svc-swap wrote, `None` before a start.
    pub fn pid(&self) -> Option<u32> {
        spec_pid(&self.spec)
    }

    /// The server's log (svc-swap's `SPEC.log`).
    pub fn log(&self) -> String {
        std::fs::read_to_string(format!("{}.log", self.spec)).unwrap_or_default()
    }

    /// /server_info once /health is 200 (20 s), else the log in the panic.
    pub fn server_info(&self) -> Value {
        crate::server_info_within(self.port, Duration::from_secs(20), || self.log())
    }

    /// Panic with the log unless /health is 200 within `limit`.
    pub fn healthy_within(&self, limit: Duration) {
        assert!(
            crate::healthy_within(self.port, limit),
            "llm-sim on {} not healthy within {limit:?}; log:\n{}",
            self.port,
            self.log()
        );
    }

    /// `svc-swap --spec SPEC ARGS`.
    pub fn swap(&self, args: &[&str]) -> Run {
        self.swap_in(args, "")
    }

    /// `svc-swap --spec SPEC ARGS` fed `stdin`.
    pub fn swap_in(&self, args: &[&str], stdin: &str) -> Run {
        let mut c = Command::new(crate::bin("svc-swap"));
        c.env_remove("SSH_AUTH_SOCK")
            .args(["--spec", &self.spec])
            .args(args);
        crate::run(c, stdin)
    }

    /// Start the spec as written, wait for the server; its PID.
    pub fn start(&self) -> u32 {
        self.swap(&[]).expect_code(0);
        self.server_info();
        self.pid().expect("pid file after a start")
    }

    /// Write `text` to `name` beside the spec; its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().into()
    }
}

impl Drop for SimSpec {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            kill_spec_server(pid);
        }
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
