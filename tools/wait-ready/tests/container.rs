//! `--container` against real podman containers (testkit::podman): a
//! server that crashes at load is `crashed_at_load` with its exit code and
//! `logs --tail` lines, at once rather than at the timeout; one its engine
//! keeps restarting is a restart loop; `--expect-config` reads the live
//! command from inspect when the server reports none (llm-sim as vLLM, whose
//! /server_info needs dev mode); the swap record's container is watched
//! with no flag. `State.OOMKilled`: podman 4.3 here (cgroup v1 hybrid,
//! runc) leaves it false for a container the kernel OOM-killed under
//! `--memory` (exit 137), so the reason says SIGKILL; Docker 20.10 sets it,
//! and a real OOM kill in the test's own dockerd is `oom`.

mod common;

use common::{run_timed, wr};
use testkit::docker::Dockerd;
use testkit::podman::Ctr;

fn sim_argv(port: &str, extra: &[&'static str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        testkit::bin("llm-sim").display().to_string(),
        "--host".into(),
        "127.0.0.1".into(),
        "--port".into(),
        port.into(),
        "--warmup-time".into(),
        "10ms".into(),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

/// `wait-ready --container NAME --engine podman --timeout 60s URL`.
fn watch_podman(name: &str, url: &str) -> std::process::Command {
    wr(&[
        "--container",
        name,
        "--engine",
        "podman",
        "--timeout",
        "60s",
        url,
    ])
}

fn start(tag: &str, podman_flags: &[&str], argv: &[String]) -> Ctr {
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    Ctr::run(tag, podman_flags, &refs)
}

/// llm-sim in a container with a flag value it rejects after a moment
/// (`--speculative-num-steps many`): exit 2 from its argument parser, with
/// its message in the container's log. Its port and the container.
fn start_crashing(tag: &str) -> (String, Ctr) {
    let port = testkit::free_port().to_string();
    let mut argv = sim_argv(&port, &["--load-time", "1s"]);
    argv.extend(["--speculative-num-steps".into(), "many".into()]);
    let c = start(tag, &[], &argv);
    (port, c)
}

#[test]
fn container_that_crashes_at_load_is_crashed_with_exit_code_and_logs() {
    if !testkit::podman::gate() {
        return;
    }
    let (port, c) = start_crashing("crash");
    let url = format!("http://127.0.0.1:{port}/health");
    let (r, wall) = run_timed(wr(&["--container", &c.name, "--timeout", "60s", &url]), "");
    let rec = r.expect_one(10);
    assert_eq!(rec["kind"], "crashed_at_load", "{rec}");
    let reason = rec["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("container {} exited with code 2", c.name)),
        "{reason}"
    );
    let tail = rec["log_tail"].to_string();
    assert!(
        tail.contains("many"),
        "the log tail names the bad value: {tail}"
    );
    assert!(wall < 20.0, "seen at once, not at the timeout: {wall}");
    // A crash at the end of its load that logs CUDA's OOM: the log says oom.
    let port = testkit::free_port().to_string();
    let c = start(
        "oomlog",
        &[],
        &sim_argv(&port, &["--load-time", "1s", "--crash-on-load"]),
    );
    let url = format!("http://127.0.0.1:{port}/health");
    let (r, _) = run_timed(wr(&["--container", &c.name, "--timeout", "60s", &url]), "");
    let rec = r.expect_one(10);
    assert_eq!(rec["kind"], "oom", "{rec}");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("exited with code 1"),
        "{rec}"
    );
    assert!(
        rec["log_tail"].to_string().contains("CUDA out of memory"),
        "{rec}"
    );
}

/// Regression (issue 37): with the engine refusing every call while the
/// server loads, wait-ready ended with exit 1 and no record, which a sweep
/// took for the config's failure. An engine that does not answer is the
/// transport's: exit 28 and a failure record of class transport, which a
/// sweep retries.
#[test]
fn container_whose_engine_does_not_answer_is_a_transport_failure() {
    if !testkit::podman::gate() {
        return;
    }
    let port = testkit::free_port().to_string();
    let c = start("enginedown", &[], &sim_argv(&port, &["--load-time", "30s"]));
    let o = testkit::outage::Outage::new("podman");
    o.now(30);
    let url = format!("http://127.0.0.1:{port}/health");
    let mut cmd = watch_podman(&c.name, &url);
    cmd.env("PATH", o.path());
    let (r, wall) = run_timed(cmd, "");
    let rec = r.expect_one(28);
    assert_eq!(
        (&rec["type"], &rec["class"], &rec["exit_code"]),
        (&"failure".into(), &"transport".into(), &28.into()),
        "{rec}"
    );
    let reason = rec["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("the engine did not answer"), "{rec}");
    assert!(wall < 20.0, "at once, not at the timeout: {wall}");
    eprintln!("took {wall:.1}s");
}

#[test]
fn container_its_engine_keeps_restarting_is_a_restart_loop() {
    if !testkit::podman::gate() {
        return;
    }
    let port = testkit::free_port();
    let c = Ctr::run(
        "restart",
        &["--restart", "always"],
        &["sh", "-c", "sleep 0.5; echo giving up; exit 3"],
    );
    let url = format!("tcp://127.0.0.1:{port}");
    let (r, wall) = run_timed(watch_podman(&c.name, &url), "");
    let rec = r.expect_one(11);
    assert_eq!(rec["kind"], "restart_loop", "{rec}");
    let reason = rec["reason"].as_str().unwrap();
    assert!(reason.contains("restart"), "{reason}");
    assert!(wall < 30.0, "{wall}");
}

#[test]
fn expect_config_reads_the_live_command_from_inspect() {
    if !testkit::podman::gate() {
        return;
    }
    let port = testkit::free_port().to_string();
    let argv = sim_argv(
        &port,
        &testkit::words("--personality vllm --load-time 10ms --max-running-requests 7"),
    );
    let c = start("expect", &[], &argv);
    let url = format!("http://127.0.0.1:{port}");
    let args = |want: &str| {
        wr(&[
            "--container",
            &c.name,
            "--server",
            "vllm",
            "--expect-config",
            want,
            "--timeout",
            "30s",
            &url,
        ])
    };
    let (r, _) = run_timed(args("max-running-requests=7"), "");
    let rec = r.expect_one(0);
    assert_eq!(rec["config_source"], "inspect", "{rec}");
    let (r, _) = run_timed(args("max-running-requests=8"), "");
    let rec = r.expect_one(13);
    let reason = rec["reason"].as_str().unwrap();
    assert!(
        reason.contains(r#"max-running-requests is "7", want 8"#),
        "{reason}"
    );
}

#[test]
fn swap_records_container_is_watched_without_a_flag() {
    if !testkit::podman::gate() {
        return;
    }
    let (port, c) = start_crashing("record");
    let swap = format!(
        r#"{{"type":"swap","schema":1,"config":{{}},"provenance":{{"tool":"svc-swap","version":"0.1.0","hostname":"h","started_at":"2026-12-02T00:00:00Z","finished_at":"2026-12-02T00:00:01Z"}},"target":{{"manager":"container","unit":"{n}","port":{port},"container":{{"engine":"podman","name":"{n}","id":"x"}}}},"changes":[],"exec_start":[],"stop":{{"result":"clean","duration_s":0.1}},"start":{{"started_at":"2026-12-02T00:00:01Z"}},"method":"container"}}"#,
        n = c.name
    );
    let (r, wall) = run_timed(wr(&["--timeout", "60s"]), &format!("{swap}\n"));
    let rec = r.expect_one(10);
    assert_eq!(rec["kind"], "crashed_at_load", "{rec}");
    assert!(wall < 20.0, "{wall}");
}

/// A container the kernel's OOM killer ends (Docker's `--memory 32m`, no
/// swap, `tail /dev/zero` buffering one endless line) is `oom`, read from
/// `State.OOMKilled` (Docker sets it from the cgroup's OOM event), with
/// its exit code, at once rather than at the timeout. The image holds
/// `tail` and its libraries, imported into the test's dockerd.
#[test]
fn docker_container_the_kernel_oom_killed_is_oom() {
    let Some(d) = Dockerd::start() else {
        return;
    };
    let image = "sweepkit-test-tail:local";
    d.import_binaries(image, &["/usr/bin/tail".into()]);
    let name = format!("sweepkit-test-oom-{}", std::process::id());
    let out = d
        .docker()
        .args(["run", "-d", "--name", &name, "--net=host"])
        .args(["--memory", "32m", "--memory-swap", "32m", image])
        .args(["/usr/bin/tail", "/dev/zero"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let port = testkit::free_port();
    let url = format!("tcp://127.0.0.1:{port}");
    let mut c = wr(&[
        "--container",
        &name,
        "--engine",
        "docker",
        "--timeout",
        "60s",
        &url,
    ]);
    c.env("DOCKER_HOST", &d.host);
    let (r, wall) = run_timed(c, "");
    r.expect_code(10);
    let rec = r.one();
    assert_eq!(rec["kind"], "oom", "{rec}");
    let reason = rec["reason"].as_str().unwrap();
    assert!(reason.contains("137"), "{reason}");
    assert!(wall < 30.0, "seen at once, not at the timeout: {wall}");
    let _ = d.docker().args(["rm", "-f", &name]).output();
}
