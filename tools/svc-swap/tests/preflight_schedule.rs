//! Pre-flight of both servers' per-load schedules against a running llm-sim
//! (as SGLang, as vLLM) under the process manager: each refusal is exit 26,
//! one line on stderr carrying the server's own message, a failure record,
//! and the running server untouched (same PID, same spec); the silent
//! fall-backs warn on stderr and in the record's `preflight`, and serve.

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

struct Sim {
    dir: PathBuf,
    spec: String,
    port: u16,
}

impl Sim {
    fn new(tag: &str, flags: &str) -> Sim {
        let dir = testkit::temp_dir(tag);
        let port = testkit::free_port();
        let spec = dir.join("sim.spec");
        let text = format!(
            "ExecStart={} --host 127.0.0.1 --port {port} --load-time 10ms \
             --warmup-time 10ms {flags}\nTimeoutStopSec=10\nPort={port}\n",
            testkit::bin("llm-sim").display()
        );
        std::fs::write(&spec, text).unwrap();
        let s = Sim {
            spec: spec.to_str().unwrap().to_string(),
            dir,
            port,
        };
        swap(&["--spec", &s.spec, "--force-restart"]).expect_code(0);
        s.info();
        s
    }

    fn text(&self) -> String {
        std::fs::read_to_string(&self.spec).unwrap()
    }

    fn pid(&self) -> String {
        std::fs::read_to_string(format!("{}.pid", self.spec)).unwrap()
    }

    fn info(&self) -> Value {
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

    /// Refused with exit 26 and `msg` in the one error line; untouched.
    fn refused(&self, args: &[&str], msg: &str) {
        let (pid, text) = (self.pid(), self.text());
        let mut a = vec!["--spec", &self.spec];
        a.extend(args);
        let r = swap(&a);
        r.expect_code(26);
        let err = r.stderr();
        let lines: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
        assert_eq!(lines.len(), 1, "{err}");
        assert!(lines[0].contains(msg), "{err}");
        assert!(lines[0].ends_with("nothing was stopped"), "{err}");
        let rec = &r.json_lines()[0];
        assert_eq!(
            (rec["type"].as_str(), rec["exit_code"].as_i64()),
            (Some("failure"), Some(26))
        );
        assert_eq!(rec["kind"], "preflight_rejected");
        assert_eq!(self.pid(), pid, "restarted");
        assert_eq!(self.text(), text, "spec changed");
        self.info();
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().into()
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(format!("{}.pid", self.spec)) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", pid.trim())])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const EAGLE: &str =
    "--speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1";

#[test]
fn sglang_steps_outside_the_candidates_and_a_missing_config_are_refused() {
    let s = Sim::new("pf-sched-sg", EAGLE);
    let cfg = s.file(
        "a.json",
        "{\"1\": {\"candidate_steps\": [3, 5]}, \"16\": {\"candidate_steps\": [1]}}",
    );
    let set_file = format!("speculative-adaptive-config={cfg}");
    s.refused(
        &["--set-file", &set_file, "--set", "speculative-adaptive", "--set", "speculative-num-steps=2"],
        "ValueError: --speculative-num-steps=2 is not in the adaptive config candidate_steps [1, 3, 5]. Pass one of those values.",
    );
    s.refused(
        &[
            "--set",
            "speculative-adaptive-config=/nonexistent/a.json",
            "--set",
            "speculative-adaptive",
        ],
        "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/a.json'",
    );
    let bad = s.file("bad.json", "{\"1\": {\"candidate_steps\": []}}");
    s.refused(
        &[
            "--set-file",
            &format!("speculative-adaptive-config={bad}"),
            "--set",
            "speculative-adaptive",
        ],
        "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got []",
    );
    // Steps among the candidates: served adaptive.
    let r = swap(&[
        "--spec",
        &s.spec,
        "--set-file",
        &set_file,
        "--set",
        "speculative-adaptive",
        "--set",
        "speculative-num-steps=5",
    ]);
    r.expect_code(0);
    assert_eq!(s.info()["speculative_adaptive"], true);
}

#[test]
fn sglang_topk_above_one_and_a_non_eagle_algorithm_warn_and_serve_static() {
    let s = Sim::new("pf-sched-fb", EAGLE);
    let cfg = s.file("a.json", "{\"1\": {\"candidate_steps\": [3]}}");
    let set_file = format!("speculative-adaptive-config={cfg}");
    let r = swap(&[
        "--spec",
        &s.spec,
        "--set-file",
        &set_file,
        "--set",
        "speculative-adaptive",
        "--set",
        "speculative-eagle-topk=2",
        "--set",
        "speculative-num-steps=2",
        "--set",
        "speculative-num-draft-tokens=4",
    ]);
    r.expect_code(0);
    let rec = &r.json_lines()[0];
    let pf = rec["preflight"].to_string();
    assert!(
        pf.contains("speculative_eagle_topk=2 (only topk=1 is supported)"),
        "{pf}"
    );
    assert!(
        r.stderr()
            .contains("warning: pre-flight: SGLang runs static"),
        "{}",
        r.stderr()
    );
    let info = s.info();
    assert_eq!(info["speculative_adaptive"], false, "{info}");
    assert_eq!(info["speculative_num_steps"], 2);
}

#[test]
fn vllm_schedules_vllm_refuses_are_refused_with_its_message() {
    let s = Sim::new("pf-sched-vllm", "--personality vllm");
    let sc = |sched: &str| {
        format!(
            "speculative-config={{\"method\":\"ngram\",\"num_speculative_tokens\":4,\
             \"num_speculative_tokens_per_batch_size\":{sched}}}"
        )
    };
    s.refused(
        &["--set", &sc("[[2,8,4],[9,64,1]]")],
        "ValueError: The first batch-size range must start at 1 so every runtime batch size has a defined schedule.",
    );
    s.refused(
        &["--set", &sc("[[1,8,4],[8,64,1]]")],
        "ValueError: Batch-size ranges must be non-overlapping and sorted.",
    );
    s.refused(
        &["--set", &sc("[[1,8,-1]]")],
        "ValueError: num_speculative_tokens_per_batch_size values must be >= 0.",
    );
    // Data parallelism: a dry run says vLLM will run static.
    let r = swap(&[
        "--spec",
        &s.spec,
        "--dry-run",
        "--set",
        &sc("[[1,1,4],[2,64,1]]"),
        "--set",
        "data-parallel-size=2",
    ]);
    r.expect_code(0);
    let pf = r.json_lines()[0]["preflight"].to_string();
    assert!(pf.contains("falling back to static"), "{pf}");
}
