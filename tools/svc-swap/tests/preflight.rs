//! svc-swap's pre-flight of SGLang's speculative flags against a real
//! llm-sim (SGLang personality) on 127.0.0.1 under the process manager: a
//! refused config exits 26 with one line on stderr and a failure record
//! that keeps the config, and the running server is left untouched (same
//! PID, same spec, same live args); what SGLang forces is said on stderr and
//! in the swap record; --no-preflight lets the config through.
//! Needs `cargo build -p llm-sim`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::{http_get, Run};

fn swap(args: &[&str]) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_svc-swap"));
    c.args(args);
    testkit::run(c, "")
}

/// llm-sim speculating the way SGLang accepts it (EAGLE, topk 1, steps 1).
struct Sim {
    dir: PathBuf,
    spec: String,
    port: u16,
}

impl Sim {
    fn new(tag: &str) -> Sim {
        let dir = testkit::temp_dir(tag);
        let port = testkit::free_port();
        let spec = dir.join("sim.spec");
        let text = format!(
            "[Service]\nExecStart={} --host 127.0.0.1 --port {port} --load-time 10ms \
             --warmup-time 10ms --speculative-algorithm EAGLE --speculative-eagle-topk 1 \
             --speculative-num-steps 1\nTimeoutStopSec=10\nPort={port}\n",
            testkit::bin("llm-sim").display()
        );
        std::fs::write(&spec, text).unwrap();
        Sim {
            spec: spec.to_str().unwrap().to_string(),
            dir,
            port,
        }
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.spec).unwrap()
    }

    fn pid(&self) -> u32 {
        let p = std::fs::read_to_string(format!("{}.pid", self.spec)).unwrap();
        p.trim().parse().unwrap()
    }

    fn alive(&self, pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    }

    /// /server_info once /health is 200.
    fn server_info(&self) -> Value {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            if let Some((200, _)) = http_get(self.port, "/health") {
                let (_, body) = http_get(self.port, "/server_info").unwrap();
                return serde_json::from_str(&body).unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("llm-sim on {} never healthy", self.port);
    }

    /// Start the spec as written; returns its PID.
    fn start(&self) -> u32 {
        let r = swap(&["--spec", &self.spec]);
        r.expect_code(0);
        self.server_info();
        self.pid()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Ok(p) = std::fs::read_to_string(format!("{}.pid", self.spec)) {
            let _ = Command::new("kill").args(["-KILL", p.trim()]).status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn one_record(r: &Run) -> Value {
    let lines = r.json_lines();
    assert_eq!(lines.len(), 1, "one record on stdout: {}", r.stdout());
    lines.into_iter().next().unwrap()
}

/// The refusal: exit 26, exactly one stderr line, a failure record with the
/// config, and the old server still the one serving.
fn assert_refused(sim: &Sim, pid: u32, args: &[&str], says: &str) -> Value {
    let before = sim.text();
    let mut a = vec!["--spec", sim.spec.as_str()];
    a.extend_from_slice(args);
    let t0 = Instant::now();
    let r = swap(&a);
    r.expect_code(26);
    assert!(t0.elapsed() < Duration::from_secs(5), "refused at once");
    let err = r.stderr();
    assert_eq!(err.lines().count(), 1, "one line on stderr: {err}");
    assert!(err.starts_with("svc-swap: error: pre-flight: "), "{err}");
    assert!(err.contains(says), "{err}");
    let rec = one_record(&r);
    assert_eq!(
        (
            rec["type"].as_str(),
            rec["stage"].as_str(),
            rec["kind"].as_str()
        ),
        (Some("failure"), Some("swap"), Some("preflight_rejected")),
        "{rec}"
    );
    assert_eq!(rec["exit_code"], 26);
    assert!(rec["reason"].as_str().unwrap().contains(says), "{rec}");
    assert_eq!(sim.text(), before, "the spec was not touched");
    assert_eq!(sim.pid(), pid, "no restart");
    assert!(sim.alive(pid), "the old server still runs");
    assert_eq!(sim.server_info()["speculative_num_steps"], 1);
    rec
}

#[test]
fn refused_configs_leave_the_old_server_running() {
    let sim = Sim::new("preflight-refuse");
    let pid = sim.start();
    let rec = assert_refused(
        &sim,
        pid,
        &[
            "--unset",
            "speculative-eagle-topk",
            "--set",
            "speculative-num-steps=2",
        ],
        "--speculative-num-steps 2 without --speculative-eagle-topk",
    );
    assert_eq!(rec["config"]["speculative-num-steps"], "2", "{rec}");
    let rec = assert_refused(
        &sim,
        pid,
        &["--set", "speculative-algorithm=MTP"],
        "--speculative-algorithm MTP: SGLang has no algorithm MTP",
    );
    assert_eq!(rec["config"]["speculative-algorithm"], "MTP");
    assert!(rec["reason"].as_str().unwrap().contains("NEXTN"));
    let rec = assert_refused(
        &sim,
        pid,
        &[
            "--set",
            "speculative-eagle-topk=2",
            "--set",
            "speculative-num-draft-tokens=4",
        ],
        "--speculative-num-draft-tokens 4: more than",
    );
    assert_eq!(rec["config"]["speculative-eagle-topk"], "2");
    // A dry run is checked too, and changes nothing either.
    assert_refused(
        &sim,
        pid,
        &["--dry-run", "--unset", "speculative-eagle-topk"],
        "--speculative-num-steps 1 without",
    );
}

#[test]
fn what_sglang_forces_is_said_and_recorded() {
    let sim = Sim::new("preflight-notes");
    let pid = sim.start();
    let r = swap(&[
        "--spec",
        &sim.spec,
        "--set",
        "speculative-num-steps=3",
        "--set",
        "speculative-num-draft-tokens=8",
    ]);
    r.expect_code(0);
    let rec = one_record(&r);
    let notes: Vec<&str> = rec["preflight"]
        .as_array()
        .unwrap_or_else(|| panic!("no preflight notes: {rec}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(
            |n| n.contains("--speculative-num-draft-tokens 8 is overridden")
                && n.contains("forces 4")
        ),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("48")), "{notes:?}");
    let err = r.stderr();
    for n in &notes {
        assert!(
            err.contains(&format!("svc-swap: warning: pre-flight: {n}")),
            "{err}"
        );
    }
    assert_ne!(sim.pid(), pid, "a valid config is swapped in");
    assert_eq!(sim.server_info()["speculative_num_steps"], 3);
    // With the cap set explicitly there is nothing to say about it.
    let r = swap(&["--spec", &sim.spec, "--set", "max-running-requests=64"]);
    r.expect_code(0);
    let rec = one_record(&r);
    let text = rec["preflight"].to_string();
    assert!(!text.contains("48"), "{rec}");
}

#[test]
fn no_preflight_lets_the_refused_config_through() {
    let sim = Sim::new("preflight-bypass");
    let pid = sim.start();
    let r = swap(&[
        "--spec",
        &sim.spec,
        "--no-preflight",
        "--unset",
        "speculative-eagle-topk",
        "--set",
        "speculative-num-steps=2",
    ]);
    assert_ne!(r.code(), 26, "{}", r.stderr());
    assert!(!r.stderr().contains("pre-flight"), "{}", r.stderr());
    assert!(!r.stdout().contains("preflight_rejected"), "{}", r.stdout());
    // The server was stopped and the new line started: it dies in its
    // argument check as SGLang does, and the far-side job puts the old
    // config back (exit 25), with the server's own error in the record.
    assert!(!sim.alive(pid), "the old server was stopped");
    r.expect_code(25);
    let rec = one_record(&r);
    assert_eq!(rec["kind"], "swap_failed", "{rec}");
    assert_eq!(rec["running"], "old", "{rec}");
    assert!(rec["log_tail"].to_string().contains("TypeError"), "{rec}");
    assert!(
        !sim.text().contains("--speculative-num-steps 2"),
        "{}",
        sim.text()
    );
}
