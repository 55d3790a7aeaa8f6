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

/// A wait-ready command with the words of `line` (testkit::words).
pub fn wr_line(line: &str) -> Command {
    wr(&testkit::words(line))
}

/// wait-ready reaching `s` over SSH, then the words of `line`.
pub fn wr_ssh_line(s: &testkit::sshd::Sshd, line: &str) -> Command {
    wr_ssh(s, &testkit::words(line))
}

/// wait-ready reaching `s` over SSH (host key checked), then `rest`.
pub fn wr_ssh(s: &testkit::sshd::Sshd, rest: &[&str]) -> Command {
    let mut c = wr(&[]);
    c.args(s.client_args()).args(rest);
    c
}

/// wait-ready over SSH to `s` with the words of `line`, then `url`; run
/// with no stdin, timed.
pub fn run_ssh(s: &testkit::sshd::Sshd, line: &str, url: &str) -> (Run, f64) {
    let mut c = wr_ssh_line(s, line);
    c.arg(url);
    run_timed(c, "")
}

/// [`run_ssh`] on a server that crashes at load: its `pid` and its fresh
/// `log`, read from the start (the OOM line may be written before a slow
/// SSH connect completes), then `flags`; its crash record (exit 10) and
/// how long it took.
#[track_caller]
pub fn crash_over_ssh(
    s: &testkit::sshd::Sshd,
    pid: &str,
    log: &Path,
    flags: &str,
    url: &str,
) -> (serde_json::Value, f64) {
    let line = format!("--pid {pid} --log {} --log-offset 0 {flags}", log.display());
    let (r, wall) = run_ssh(s, &line, url);
    (r.expect_one(10), wall)
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

/// A stand-in HTTP server on `port` that binds only after `delay` (the
/// port refused until then, as SGLang and vLLM keep it while loading), then
/// answers like vLLM without `VLLM_SERVER_DEV_MODE`: `/health` with
/// `health` after `health_delay`, `/version`, `/v1/models` owned by
/// `vllm`, and 404 for `/server_info`.
pub fn stub_server(
    port: u16,
    delay: std::time::Duration,
    health: u16,
    health_delay: std::time::Duration,
) {
    use std::io::{Read, Write};
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        let l = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind stub");
        for s in l.incoming().flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = req.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (code, body) = match path.as_str() {
                    "/health" => {
                        std::thread::sleep(health_delay);
                        (health, String::new())
                    }
                    "/version" => (200, r#"{"version":"0.32.0"}"#.to_string()),
                    "/v1/models" => (
                        200,
                        r#"{"object":"list","data":[{"id":"tiny","object":"model","owned_by":"vllm"}]}"#
                            .to_string(),
                    ),
                    _ => (404, r#"{"detail":"Not Found"}"#.to_string()),
                };
                let _ = write!(
                    s,
                    "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
}

/// A process whose `/proc/PID/cmdline` is a vLLM command line: `sh -c`
/// keeps its own words and blocks in its `read` builtin (no child left
/// behind when it is killed). Killed on drop.
pub struct ArgvProc(pub Child);

impl ArgvProc {
    pub fn start(words: &[&str]) -> ArgvProc {
        let child = Command::new("sh")
            .args(["-c", "read x"])
            .args(words)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn sh");
        ArgvProc(child)
    }

    pub fn pid(&self) -> String {
        self.0.id().to_string()
    }
}

impl Drop for ArgvProc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
