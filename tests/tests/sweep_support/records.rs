//! The record-contract tests' pieces (`contract.rs`, `hardware.rs`,
//! `pipeline_personalities.rs`): the one record a stage wrote, a record
//! checked against sweepkit-records(5), and a process-managed llm-sim for
//! a pipeline of the tools.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use testkit::{cmd, run, Run};

use super::SimExec;

/// The one record a stage wrote, of `kind`.
pub fn one(r: &Run, kind: &str) -> Value {
    let lines = r.json_lines();
    assert_eq!(
        lines.len(),
        1,
        "{}: expected one record\n{}\n{}",
        r.what,
        r.stdout(),
        r.stderr()
    );
    assert_eq!(lines[0]["type"], kind, "{}\n{}", r.what, r.stderr());
    lines[0].clone()
}

/// Assert `rec` parses as a sweepkit record and has no field the types the
/// page is generated from leave undocumented.
pub fn conforms(rec: &Value, what: &str) {
    let line = rec.to_string();
    if let Err(e) = sweepkit::io::parse_record(&line) {
        panic!("{what}: does not parse as a record: {e}\n{line}");
    }
    let missing = sweepkit_tests::undocumented(&sweepkit_tests::records_source(), rec);
    assert!(
        missing.is_empty(),
        "{what}: fields not in sweepkit-records(5): {missing:?}\n{line}"
    );
}

/// loadgen over `url` at levels 1 and 2, four requests of `max_tokens`.
pub fn two_levels<'a>(url: &'a str, max_tokens: &'a str) -> Vec<&'a str> {
    let mut v = vec!["--url", url, "--concurrency", "1,2"];
    v.extend(["--requests", "4", "--max-tokens", max_tokens]);
    v
}

/// loadgen `args` on the record `upstream`: exit 0, one bench record per
/// level of two.
pub fn bench_two_levels(args: &[&str], upstream: &Value) -> Vec<Value> {
    let bench = run(cmd("loadgen", args), &upstream.to_string());
    bench.expect_code(0);
    let benches = bench.json_lines();
    assert_eq!(benches.len(), 2, "{}", bench.stderr());
    benches
}

/// A process-managed llm-sim (a spec file with its own log and PID file,
/// `[Service]` form), killed on drop.
pub struct Server {
    pub spec: String,
    pub pid_file: PathBuf,
    pub port: u16,
}

impl Server {
    /// llm-sim loading and warming up for 100 ms, then `flags`, in `dir`.
    pub fn new(dir: &Path, flags: &str) -> Server {
        let sim = SimExec::free()
            .load("100ms")
            .warmup("100ms")
            .unseeded()
            .flags(flags);
        let port = sim.port;
        let spec = dir.join("sim.spec");
        let pid_file = dir.join("sim.pid");
        let text = format!(
            "[Service]\nExecStart={}\nLogFile={}\nPidFile={}\nTimeoutStopSec=5\nPort={port}\n",
            sim.exec(),
            dir.join("sim.log").display(),
            pid_file.display()
        );
        std::fs::write(&spec, text).unwrap();
        Server {
            spec: spec.display().to_string(),
            pid_file,
            port,
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(&self.pid_file) {
            let _ = Command::new("kill").args(["-9", pid.trim()]).status();
        }
    }
}
