//! wait-ready against a real llm-sim on 127.0.0.1: the loading -> ready
//! transition and its timing, a crash at load, SGLang's early /v1/models,
//! a config mismatch, and --invert against a hung shutdown.

mod common;

use std::time::{Duration, Instant};

use common::{run_timed, wr, wr_line, LoggedSim};
use testkit::Sim;

#[test]
fn loading_then_ready_is_detected_soon_after_health_turns_200() {
    // Port closed 400 ms, then /health 503 for 400 ms, then 200.
    let sim = Sim::start(&testkit::words("--load-time 400ms --warmup-time 400ms"));
    let pid = sim.pid().to_string();
    let url = sim.base_url();
    let (r, _) = run_timed(wr_line(&format!("--server llm-sim --pid {pid} {url}")), "");
    let rec = r.expect_one(0);
    assert_eq!(rec["type"], "ready");
    assert_eq!(rec["outcome"], "ready");
    let open = rec["time_to_port_open_s"].as_f64().unwrap();
    let ready = rec["time_to_ready_s"].as_f64().unwrap();
    // Generous bounds: the machine is shared. Port opened near 0.4 s and
    // /health near 0.8 s after llm-sim's start (a bit before ours).
    assert!((0.2..1.2).contains(&open), "port open at {open}");
    assert!(ready - open >= 0.25, "ready {ready} vs open {open}");
    assert!((0.6..1.6).contains(&ready), "ready at {ready}");
    assert!(rec["attempts"].as_u64().unwrap() > 3);
    assert_eq!(rec["targets"][0]["target"], format!("{url}/health"));
    assert_eq!(rec["server"]["kind"], "llm-sim");
    assert_eq!(rec["server"]["simulated"], true);
    assert_eq!(rec["server"]["model"], "sim-llama-8b");
    assert!(
        r.stderr().contains("wait-ready: ready after"),
        "{}",
        r.stderr()
    );
}

#[test]
fn crash_during_load_is_found_within_a_second_with_the_log_tail() {
    let sim = LoggedSim::start("crash", &["--crash-on-load", "--load-time", "300ms"]);
    let pid = sim.pid();
    let log = sim.log.to_str().unwrap().to_string();
    let (r, wall) = run_timed(wr(&["--pid", &pid, "--log", &log, &sim.base_url()]), "");
    r.expect_code(10);
    // The crash comes about 0.3 s after start; seen by the crash, long
    // before the 10 min default timeout (the latency itself is measured in
    // bench/wait-ready.sh, not here).
    assert!(wall < 30.0, "took {wall:.2}s");
    let rec = r.one();
    assert_eq!(rec["type"], "failure");
    assert_eq!(rec["stage"], "ready");
    assert_eq!(rec["kind"], "oom");
    assert_eq!(rec["exit_code"], 10);
    let tail = testkit::output::strs(&rec["log_tail"]);
    assert!(
        tail.iter().any(|l| l.contains("CUDA out of memory")),
        "{tail:?}"
    );
    let err = r.stderr();
    assert!(err.starts_with("wait-ready: error: crashed"), "{err}");
    assert_eq!(
        err.lines().filter(|l| !l.contains("  | ")).count(),
        1,
        "{err}"
    );
}

#[test]
fn crash_found_by_pid_alone_is_crashed_at_load() {
    let sim = LoggedSim::start("crash-pid", &["--crash-on-load", "--load-time", "100ms"]);
    let (r, wall) = run_timed(wr(&["--pid", &sim.pid(), &sim.base_url()]), "");
    r.expect_code(10);
    assert!(
        wall < 30.0,
        "took {wall:.2}s: by the crash, not the timeout"
    );
    let rec = r.one();
    assert_eq!(rec["kind"], "crashed_at_load");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("exited with status 1"),
        "{rec}"
    );
}

#[test]
fn wrong_port_is_unreachable_quickly_with_unreachable_after() {
    let port = testkit::free_port();
    let url = format!("http://127.0.0.1:{port}/health");
    // By default a refused port is a server still starting (tests/defaults.rs);
    // --unreachable-after opts into failing fast.
    let (r, wall) = run_timed(wr(&[&url, "--unreachable-after", "2s"]), "");
    r.expect_code(12);
    assert!(wall < 3.0, "took {wall:.2}s");
    assert_eq!(r.one()["kind"], "unreachable");
    assert!(r.stderr().contains("connection refused"), "{}", r.stderr());
    // With a live process watched, refused means loading: wait to timeout.
    let me = std::process::id().to_string();
    let (r, _) = run_timed(
        wr(&[
            "--pid",
            &me,
            "--timeout",
            "500ms",
            "--unreachable-after",
            "2s",
            &url,
        ]),
        "",
    );
    r.expect_code(124);
    assert_eq!(r.one()["kind"], "timeout");
}

#[test]
fn sglang_preset_is_not_fooled_by_early_v1_models() {
    let sim = Sim::start(&testkit::words("--load-time 0s --warmup-time 30s"));
    let t0 = Instant::now();
    while testkit::http_get(sim.port, "/v1/models").map(|r| r.0) != Some(200) {
        assert!(t0.elapsed() < Duration::from_secs(10), "never listened");
        std::thread::sleep(Duration::from_millis(20));
    }
    let models = format!("{}/v1/models", sim.base_url());
    // Without the preset, /v1/models says ready: SGLang's trap.
    let (r, _) = run_timed(wr(&[&models]), "");
    r.expect_code(0);
    // With it, /health is required too, and it is still 503.
    let pid = sim.pid().to_string();
    for target in [models.as_str(), &sim.base_url()] {
        let args = [
            "--server",
            "sglang",
            "--pid",
            &pid,
            "--timeout",
            "700ms",
            target,
        ];
        let (r, _) = run_timed(wr(&args), "");
        let rec = r.expect_one(124);
        assert_eq!(rec["kind"], "timeout");
        let reason = rec["reason"].as_str().unwrap();
        assert!(reason.contains("/health: HTTP 503"), "{reason}");
    }
}

#[test]
fn config_mismatch_is_its_own_outcome() {
    let sim = Sim::start_ready(&testkit::flags::eagle_with("3", &["--warmup-time", "0s"]));
    let url = sim.base_url();
    let (r, _) = run_timed(
        wr_line(&format!(
            "--server sglang --timeout 10s --expect-config speculative-num-steps=4 {url}"
        )),
        "",
    );
    let rec = r.expect_one(13);
    assert_eq!(rec["kind"], "config_mismatch");
    let reason = rec["reason"].as_str().unwrap();
    assert!(
        reason.contains("speculative-num-steps is 3, want 4"),
        "{reason}"
    );
    let ok = [
        "--server",
        "llm-sim",
        "--expect-config",
        "speculative_num_steps=3",
        "--expect-config",
        "served-model-name=sim-llama-8b",
        "--timeout",
        "10s",
        &url,
    ];
    let (r, _) = run_timed(wr(&ok), "");
    let rec = r.expect_one(0);
    assert_eq!(rec["server"]["args"]["speculative_num_steps"], 3);
}

#[test]
fn steps_without_an_algorithm_pass_the_check_with_an_inert_warning() {
    // Issue 21: SGLang started with --speculative-num-steps 3 and no
    // --speculative-algorithm serves with speculation off and reports
    // `speculative_num_steps: 3, speculative_algorithm: null`; llm-sim
    // reported null, so the check failed (13). It passes now, and says that
    // the value changes nothing, on stderr and in the record.
    let sim = Sim::start_ready(&testkit::words(
        "--speculative-num-steps 3 --warmup-time 0s",
    ));
    let url = sim.base_url();
    let args = [
        "--server",
        "sglang",
        "--expect-config",
        "speculative-num-steps=3",
        "--timeout",
        "10s",
        &url,
    ];
    let (r, _) = run_timed(wr(&args), "");
    let rec = r.expect_one(0);
    assert_eq!(rec["server"]["args"]["speculative_num_steps"], 3, "{rec}");
    assert_eq!(
        rec["server"]["args"]["speculative_algorithm"],
        serde_json::Value::Null
    );
    let w = rec["warnings"][0].as_str().unwrap_or_default();
    assert!(w.starts_with("speculative-num-steps=3 is inert"), "{rec}");
    assert!(w.contains("speculation is off"), "{w}");
    assert!(
        r.stderr().contains(&format!("wait-ready: warning: {w}")),
        "{}",
        r.stderr()
    );
    // With an algorithm the same check says nothing more.
    let eagle = Sim::start_ready(&testkit::flags::eagle_with("3", &["--warmup-time", "0s"]));
    let url = eagle.base_url();
    let mut args = args;
    args[6] = &url;
    let (r, _) = run_timed(wr(&args), "");
    r.expect_code(0);
    assert!(r.one().get("warnings").is_none(), "{}", r.stdout());
    assert!(!r.stderr().contains("warning"), "{}", r.stderr());
}

#[test]
fn invert_waits_out_a_hung_shutdown() {
    let sim = Sim::start_ready(&testkit::words("--ignore-sigterm 1s --warmup-time 0s"));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(sim.pid() as i32, libc::SIGTERM) };
    let url = format!("{}/health", sim.base_url());
    let (r, wall) = run_timed(wr_line(&format!("--invert --timeout 10s {url}")), "");
    let rec = r.expect_one(0);
    assert_eq!(rec["outcome"], "down");
    // Still up while SIGTERM is ignored (1 s), down soon after.
    assert!((0.6..3.0).contains(&wall), "took {wall:.2}s");
    // A server that stays up: --invert times out with 124.
    let sim2 = Sim::start_ready(&["--warmup-time", "0s"]);
    let url2 = format!("{}/health", sim2.base_url());
    let (r, _) = run_timed(wr(&["--invert", "--timeout", "400ms", &url2]), "");
    r.expect_code(124);
    assert!(r.one()["reason"].as_str().unwrap().contains("still up"));
}

#[test]
fn sigint_is_interrupted_with_a_failure_record() {
    let port = testkit::free_port();
    let me = std::process::id().to_string();
    let url = format!("http://127.0.0.1:{port}/health");
    let child = wr(&["--pid", &me, "--timeout", "20s", &url])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let rec: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rec["kind"], "interrupted");
}

/// The previous instance's last lines, as a process manager leaves them in
/// the shared log before it starts the next one.
const OLD_INSTANCE: &str = "INFO: shutting down\nreceived SIGTERM, exiting\n";

/// llm-sim with stderr appended to `log` (as svc-swap's process manager
/// does); returns the child and its port.
fn sim_appending_to(log: &std::path::Path, args: &[&str]) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let f = std::fs::OpenOptions::new().append(true).open(log).unwrap();
    let mut child = std::process::Command::new(testkit::bin("llm-sim"))
        .args(["--host", "127.0.0.1", "--port", "0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(f)
        .spawn()
        .expect("spawn llm-sim");
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().expect("bound line").unwrap();
    let v: serde_json::Value = serde_json::from_str(&first).unwrap();
    std::thread::spawn(move || for _ in lines {});
    (child, v["port"].as_u64().unwrap() as u16)
}

fn tail_of(rec: &serde_json::Value) -> Vec<String> {
    testkit::output::strs(&rec["log_tail"])
        .into_iter()
        .map(String::from)
        .collect()
}

#[test]
fn crash_log_tail_holds_only_this_instance_not_the_previous_ones_sigterm() {
    // Found with sweep.sh: the shared log's previous instance said
    // "received SIGTERM, exiting", and that led this crash's log_tail.
    let dir = testkit::temp_dir("wr-shared-log");
    let log = dir.join("server.log");
    std::fs::write(&log, OLD_INSTANCE).unwrap();
    let (mut child, port) = sim_appending_to(&log, &["--crash-on-load", "--load-time", "400ms"]);
    let pid = child.id().to_string();
    let url = format!("http://127.0.0.1:{port}");
    let (r, _) = run_timed(
        wr(&["--pid", &pid, "--log", log.to_str().unwrap(), &url]),
        "",
    );
    let _ = child.kill();
    let _ = child.wait();
    let rec = r.expect_one(10);
    assert_eq!(rec["kind"], "oom");
    let tail = tail_of(&rec);
    assert!(
        tail.iter().any(|l| l.contains("CUDA out of memory")),
        "{tail:?}"
    );
    assert!(
        !tail
            .iter()
            .any(|l| l.contains("SIGTERM") || l.contains("shutting down")),
        "{tail:?}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn swap_record_log_offset_keeps_this_instances_lines_from_before_the_wait() {
    // svc-swap notes the log's size before the start: lines the new
    // instance wrote before wait-ready read the record still count.
    let dir = testkit::temp_dir("wr-log-offset");
    let log = dir.join("server.log");
    std::fs::write(&log, OLD_INSTANCE).unwrap();
    let offset = OLD_INSTANCE.len();
    let (mut child, port) = sim_appending_to(&log, &["--crash-on-load", "--load-time", "400ms"]);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        writeln!(f, "new instance: loading weights").unwrap();
    }
    let swap = serde_json::json!({
        "type": "swap", "schema": 1, "config": {"k": "1"},
        "provenance": {"tool": "svc-swap", "version": "0.1.0",
                       "started_at": "2026-11-30T05:00:00Z", "finished_at": "2026-11-30T05:00:01Z"},
        "target": {"manager": "process", "unit": "sim.spec", "port": port,
                   "log": log.to_str().unwrap()},
        "changes": [], "exec_start": ["llm-sim"],
        "stop": {"result": "clean", "duration_s": 0.1},
        "start": {"started_at": "2026-11-30T05:00:01Z", "main_pid": child.id(),
                  "log_offset": offset},
        "method": "spec"
    });
    let (r, _) = run_timed(wr(&[]), &format!("{swap}\n"));
    let _ = child.kill();
    let _ = child.wait();
    let rec = r.expect_one(10);
    let tail = tail_of(&rec);
    assert!(
        tail.iter().any(|l| l == "new instance: loading weights"),
        "{tail:?}"
    );
    assert!(
        tail.iter().any(|l| l.contains("CUDA out of memory")),
        "{tail:?}"
    );
    assert!(!tail.iter().any(|l| l.contains("SIGTERM")), "{tail:?}");
    let _ = std::fs::remove_dir_all(dir);
}
