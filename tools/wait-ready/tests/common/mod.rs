//! Helpers for wait-ready's integration tests: run the built binary, and
//! start llm-sim with its log in a file (for `--log`).

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

pub use testkit::Run;

/// A wait-ready command with `args` (the package's own binary).
pub fn wr(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wait-ready"));
    c.args(args);
    c
}

/// Run it with `stdin`, timing it.
pub fn run_timed(c: Command, stdin: &str) -> (Run, f64) {
    let t0 = Instant::now();
    let r = testkit::run(c, stdin);
    (r, t0.elapsed().as_secs_f64())
}

/// The one JSON record on stdout.
pub fn record(r: &Run) -> serde_json::Value {
    let lines = r.json_lines();
    assert_eq!(
        lines.len(),
        1,
        "want one record\n{}\n{}",
        r.stdout(),
        r.stderr()
    );
    lines.into_iter().next().unwrap()
}

/// llm-sim with stderr going to a log file; killed on drop.
pub struct LoggedSim {
    pub child: Child,
    pub port: u16,
    pub log: PathBuf,
    dir: PathBuf,
}

impl LoggedSim {
    pub fn start(tag: &str, args: &[&str]) -> LoggedSim {
        let dir = testkit::temp_dir(tag);
        let log = dir.join("server.log");
        let f = std::fs::File::create(&log).unwrap();
        let mut child = Command::new(testkit::bin("llm-sim"))
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(f)
            .spawn()
            .expect("spawn llm-sim");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("bound line").unwrap();
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        let port = v["port"].as_u64().unwrap() as u16;
        std::thread::spawn(move || for _ in lines {});
        LoggedSim {
            child,
            port,
            log,
            dir,
        }
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }
}

impl Drop for LoggedSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A prefix script that answers `systemctl show` from `state` (rewritten
/// by the test) and `journalctl` with fixed lines.
pub fn fake_systemd(dir: &Path) -> String {
    let script = dir.join("fake.sh");
    std::fs::write(
        &script,
        r#"#!/bin/sh
d=$(dirname "$0")
case "$1" in
  systemctl) n=$(cat "$d/count" 2>/dev/null || echo 0); echo $((n + 1)) > "$d/count"
             if [ "$n" -ge 2 ]; then cat "$d/state2"; else cat "$d/state1"; fi ;;
  journalctl) printf 'loading weights\ntorch.OutOfMemoryError: CUDA out of memory\nmain process exited\n' ;;
  *) exec "$@" ;;
esac
"#,
    )
    .unwrap();
    format!("sh {}", script.display())
}
