//! Test helpers shared by every sweepkit test: find the workspace's built
//! binaries beside the test executable (as ripgrep's test helper does), run
//! them with stdin piped from a thread, and start llm-sim on a free port.

pub mod chromium;
pub mod docker;
pub mod flags;
mod gate;
mod generated;
pub mod helper;
pub mod netns;
pub mod nspawn;
pub mod outage;
pub mod output;
mod paths;
pub mod podman;
pub mod realpeer;
pub mod realunit;
mod server;
pub mod slurm;
pub mod spec;
pub mod sshd;

pub use gate::{log_path, ran, require_all, skip};
pub use generated::{check_generated, check_man_page};
pub use paths::{bin, repo_root, temp_dir};
pub use server::{
    alive, assert_no_pwned, healthy_within, http_get, server_info, server_info_within,
};

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A finished command's output, with helpers that dump everything on failure.
pub struct Run {
    pub out: Output,
    pub what: String,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    /// Assert the exit code, printing stdout and stderr when it differs.
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code(),
            code,
            "{}: expected exit {code}, got {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.what,
            self.out.status,
            self.stdout(),
            self.stderr()
        );
        self
    }
    /// stdout parsed as JSON Lines.
    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| {
                    panic!(
                        "{}: stdout line is not JSON ({e}): {l}\n{}",
                        self.what,
                        self.stderr()
                    )
                })
            })
            .collect()
    }
    /// The one JSON line on stdout (a tool's one record); fails, showing
    /// stdout and stderr, when there are more or none.
    #[track_caller]
    pub fn one(&self) -> serde_json::Value {
        let mut v = self.json_lines();
        assert_eq!(
            v.len(),
            1,
            "{}: one record on stdout\n--- stdout\n{}\n--- stderr\n{}",
            self.what,
            self.stdout(),
            self.stderr()
        );
        v.pop().unwrap()
    }
    /// Assert exit `code`, then return the one JSON line on stdout
    /// ([`Run::one`]).
    #[track_caller]
    pub fn expect_one(&self, code: i32) -> serde_json::Value {
        self.expect_code(code);
        self.one()
    }
    /// Assert exit `code` and exactly one stderr line holding `error:`,
    /// which holds `has`.
    #[track_caller]
    pub fn expect_one_error(&self, code: i32, has: &str) -> &Self {
        self.expect_code(code);
        let err = self.stderr();
        let errs: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
        assert_eq!(errs.len(), 1, "{err}");
        assert!(errs[0].contains(has), "{err}");
        self
    }
}

/// Run `cmd` with `stdin` fed from a thread; returns when it exits.
pub fn run(mut cmd: Command, stdin: &str) -> Run {
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {what}: {e}"));
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_string();
    let feeder = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    let _ = feeder.join();
    Run { out, what }
}

/// A command line's words, split at whitespace, as a test writes them
/// (`words("-c 2 -n 4 --warmup 0")`); a value with a space goes apart.
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Run `program` with `args` and `stdin` fed from a thread.
pub fn run_args(program: impl AsRef<std::ffi::OsStr>, args: &[&str], stdin: &str) -> Run {
    let mut c = Command::new(program);
    c.args(args);
    run(c, stdin)
}

/// A command for a workspace binary with `args`.
pub fn cmd(name: &str, args: &[&str]) -> Command {
    let mut c = Command::new(bin(name));
    c.args(args);
    c
}

/// A running llm-sim, killed on drop.
pub struct Sim {
    pub child: Child,
    pub port: u16,
    stderr_buf: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Sim {
    /// Start llm-sim on 127.0.0.1 port 0 with extra `args`, and wait for the
    /// `bound` line that reports the port (the port may still be closed while
    /// the simulated model loads).
    pub fn start(args: &[&str]) -> Sim {
        // SGLang's generating /health takes 1 s a probe (llm-sim's faithful
        // default); tests wanting that pass their own --health-probe-time,
        // which wins (llm-sim lets the last occurrence of a flag win).
        let mut child = Command::new(bin("llm-sim"))
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(["--health-probe-time", "0s"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn llm-sim");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = lines
            .next()
            .expect("llm-sim printed nothing")
            .expect("read llm-sim stdout");
        let v: serde_json::Value = serde_json::from_str(&first).expect("llm-sim bound line");
        let port = v["port"].as_u64().expect("port in bound line") as u16;
        std::thread::spawn(move || for _ in lines {});
        let stderr = child.stderr.take().unwrap();
        let stderr_buf = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sb = stderr_buf.clone();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut chunk = [0u8; 4096];
            while let Ok(n) = r.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sb.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        Sim {
            child,
            port,
            stderr_buf,
        }
    }

    /// Start llm-sim and wait until `/health` answers 200.
    pub fn start_ready(args: &[&str]) -> Sim {
        let sim = Sim::start(args);
        sim.wait_health(Duration::from_secs(30));
        sim
    }

    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// What llm-sim has written to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr_buf.lock().unwrap().clone()
    }

    /// Poll `/health` with a raw HTTP/1.0 request until it answers 200.
    pub fn wait_health(&self, limit: Duration) {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Some((200, _)) = http_get(self.port, "/health") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "llm-sim not healthy after {limit:?}; stderr:\n{}",
            self.stderr()
        );
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago (for "wrong port" tests).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `tests/fixtures/campaign.jsonl`: the reference campaign's numbers as
/// hand-made bench records plus one OOM failure (summarize's and
/// sweep-plan's tests read it).
pub fn campaign_fixture() -> String {
    repo_root()
        .join("tests/fixtures/campaign.jsonl")
        .to_string_lossy()
        .into_owned()
}

/// The campaign fixture's lines, for tests that edit records.
pub fn campaign_fixture_lines() -> Vec<String> {
    std::fs::read_to_string(campaign_fixture())
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// Write `text` to a file `name` in a fresh [`temp_dir`]`(tag)`; returns
/// its path.
pub fn temp_file(tag: &str, name: &str, text: &str) -> String {
    let path = temp_dir(tag).join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// Assert that `text` holds `part`; on failure show both.
#[track_caller]
pub fn assert_contains(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} is not in:\n{text}");
}

/// Assert that `text` does not hold `part`; on failure show both.
#[track_caller]
pub fn assert_lacks(text: &str, part: &str) {
    assert!(!text.contains(part), "{part:?} should not be in:\n{text}");
}

/// The two tests every tool's clap definition gets: clap's own debug
/// assertions, and [`check_man_page`] (`make man` runs the second by name).
#[macro_export]
macro_rules! cli_tests {
    ($args:ty) => {
        #[test]
        fn verify_cli() {
            <$args as clap::CommandFactory>::command().debug_assert();
        }

        #[test]
        fn man_page_up_to_date() {
            $crate::check_man_page(<$args as clap::CommandFactory>::command());
        }
    };
}
