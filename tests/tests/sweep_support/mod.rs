//! The fixtures the workspace tests share: run sweep.sh with the
//! workspace's binaries (its words from `args`), llm-sim's command line
//! (`sim`), a sweep run in the background (`child`), the fleet's hosts
//! (`fleet`), a Slurm sweep's (`slurm`), the record contract's pieces
//! (`records`), what svc-swap leaves running, and a results file's
//! records and filters.

#![allow(dead_code, unused_imports)] // each test crate uses a different subset

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod args;
pub mod child;
pub mod fleet;
pub mod records;
pub mod sim;
pub mod slots;
pub mod slurm;

pub use args::SweepArgs;
pub use sim::SimExec;

/// `bash scripts/sweep.sh --bin-dir <target/debug> ARGS`.
pub fn sweep(args: &[&str]) -> Command {
    sweep_behind(&[], args)
}

/// The same, run behind `prefix` (e.g. `nsenter -t PID -n --`).
pub fn sweep_behind(prefix: &[&str], args: &[&str]) -> Command {
    let bin_dir = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let mut c = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg("bash");
            c
        }
        None => Command::new("bash"),
    };
    c.arg(testkit::repo_root().join("scripts/sweep.sh"))
        .arg("--bin-dir")
        .arg(bin_dir)
        .args(args);
    c
}

/// A process spec for svc-swap; kills whatever its pid file names on drop
/// (sweep.sh restores the original config, which leaves a server running).
pub struct SpecFile {
    pub path: PathBuf,
    pub dir: PathBuf,
}

impl SpecFile {
    pub fn new(tag: &str, exec_start: &str, port: u16) -> SpecFile {
        let dir = testkit::temp_dir(tag);
        let path = dir.join("server.spec");
        let text = format!("ExecStart={exec_start}\nTimeoutStopSec=10\nPort={port}\n");
        std::fs::write(&path, text).unwrap();
        SpecFile { path, dir }
    }

    pub fn s(&self) -> &str {
        self.path.to_str().unwrap()
    }

    pub fn results(&self) -> PathBuf {
        self.dir.join("results.jsonl")
    }

    /// The spec's ExecStart line.
    pub fn exec_start(&self) -> String {
        std::fs::read_to_string(&self.path)
            .unwrap()
            .lines()
            .find(|l| l.starts_with("ExecStart="))
            .unwrap_or_default()
            .to_string()
    }

    /// The PID svc-swap's process manager recorded, if the process lives.
    pub fn live_pid(&self) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(format!("{}.pid", self.s()))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
    }

    /// The server's log (svc-swap appends every instance's output).
    pub fn log(&self) -> String {
        std::fs::read_to_string(format!("{}.log", self.s())).unwrap_or_default()
    }

    pub fn stop_server(&self) {
        if let Some(pid) = self.live_pid() {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            let t0 = Instant::now();
            while Path::new(&format!("/proc/{pid}")).exists()
                && t0.elapsed() < Duration::from_secs(10)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

impl Drop for SpecFile {
    fn drop(&mut self) {
        self.stop_server();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The results of a results file: every record but the sweep's `origin`
/// bookkeeping record (see `all_records`).
pub fn records(path: &Path) -> Vec<Value> {
    all_records(path)
        .into_iter()
        .filter(|r| r["type"] != "origin")
        .collect()
}

/// Every line of a results file, parsed: a torn line fails the test.
pub fn all_records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "{}: last line torn",
        path.display()
    );
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!("{}: line {}: not JSON ({e}): {l}", path.display(), i + 1)
            })
        })
        .collect()
}

/// Records of `kind` ("bench", "failure") whose config has `key` = `value`.
pub fn with_config<'a>(recs: &'a [Value], kind: &str, key: &str, value: &str) -> Vec<&'a Value> {
    recs.iter()
        .filter(|r| r["type"] == kind && r["config"][key] == value)
        .collect()
}

/// The load levels (`load.concurrency`) of these records, in order.
pub fn levels(recs: &[&Value]) -> Vec<u64> {
    recs.iter()
        .map(|r| r["load"]["concurrency"].as_u64().unwrap())
        .collect()
}

/// Each record's string fields at these JSON pointers (`/type`,
/// `/config/KEY`), "" where one is missing: rows to compare whole.
pub fn fields<'a>(recs: &'a [Value], pointers: &[&str]) -> Vec<Vec<&'a str>> {
    recs.iter()
        .map(|r| {
            pointers
                .iter()
                .map(|p| r.pointer(p).and_then(Value::as_str).unwrap_or(""))
                .collect()
        })
        .collect()
}

/// The record of `kind` a record carries: itself or one up its
/// `upstream` chain (a bench's swap, the schedule it ran under).
pub fn upstream_of<'a>(r: &'a Value, kind: &str) -> Option<&'a Value> {
    let mut cur = Some(r);
    while let Some(x) = cur {
        if x["type"] == kind {
            return Some(x);
        }
        cur = x.get("upstream");
    }
    None
}

/// The ready record a bench record carries (wait-ready's, right upstream),
/// which must say the server became ready; with its seconds to the port's
/// opening and to ready.
pub fn ready_upstream(r: &Value) -> (&Value, f64, f64) {
    let w = &r["upstream"];
    assert_eq!(
        (&w["type"], &w["outcome"]),
        (&"ready".into(), &"ready".into()),
        "{w}"
    );
    let open = w["time_to_port_open_s"].as_f64().unwrap();
    let ready = w["time_to_ready_s"].as_f64().unwrap();
    (w, open, ready)
}

/// A finished run's stderr, as text.
pub fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A finished run's stdout, as text (summarize's table).
pub fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Dump a finished run for assertion messages.
pub fn dump(out: &std::process::Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every `sh` block of the README that runs `sweep`, in order.
pub fn readme_sweep_blocks() -> Vec<String> {
    let readme = std::fs::read_to_string(testkit::repo_root().join("README.md")).unwrap();
    let blocks: Vec<String> = readme
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .filter(|b| b.lines().any(|l| l.starts_with("sweep ")))
        .map(String::from)
        .collect();
    assert!(blocks.len() >= 4, "README: sweep examples: {blocks:?}");
    blocks
}

/// The text of the README's section `## TITLE` and its shell blocks.
pub fn readme_blocks(title: &str) -> (String, Vec<String>) {
    let readme = std::fs::read_to_string(testkit::repo_root().join("README.md")).unwrap();
    let section = readme
        .split(&format!("\n## {title}"))
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .unwrap_or_else(|| panic!("README: a '## {title}' section"))
        .to_string();
    let blocks: Vec<String> = section
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .map(String::from)
        .collect();
    (section, blocks)
}

/// The shell blocks of the README's "Many hosts at once" section (the
/// fleet examples), each run as written by the tests.
pub fn readme_fleet_blocks() -> Vec<String> {
    let (section, blocks) = readme_blocks("Many hosts at once");
    assert!(blocks.len() >= 2, "{section}");
    blocks
}

/// README shell `block` run as written by bash in a directory of its own,
/// `sweep` being the repository's script with `--dry-run` added.
pub fn readme_dry_run(block: &str) -> std::process::Output {
    let bin_dir = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let sweep = testkit::repo_root().join("scripts/sweep.sh");
    let dir = testkit::temp_dir("readme-dry-run");
    let script = format!(
        "set -e\nsweep() {{ bash '{}' --bin-dir '{}' \"$@\" --dry-run; }}\n{block}",
        sweep.display(),
        bin_dir.display()
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(&dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// DIR/NAME: a Mooncake trace of 6 requests 50 ms apart, 40 input tokens
/// each, all sharing block 1 (one reused block at 32-token blocks).
pub fn six_request_trace(dir: &Path, name: &str) -> PathBuf {
    let text: String = (0..6)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 40, \"output_length\": 8, \
                 \"hash_ids\": [1, {}]}}\n",
                i * 50,
                i + 2
            )
        })
        .collect();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}
