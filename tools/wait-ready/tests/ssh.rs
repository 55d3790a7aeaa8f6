//! `--ssh` against a real sshd on 127.0.0.1 (testkit's harness): targets
//! probed through a direct-tcpip tunnel (refused on the far side still
//! reads as "not open yet"), and the process, log and unit watched on the
//! far side. Skipped, with a line on stderr, where sshd is not installed.

mod common;

use common::{crash_over_ssh, fake_systemd, run_ssh, run_timed, wr, wr_ssh, LoggedSim};
use testkit::sshd::Sshd;
use testkit::Sim;

#[test]
fn loading_server_is_probed_through_the_tunnel() {
    let Some(sshd) = Sshd::start() else { return };
    let sim = Sim::start(&testkit::words("--load-time 400ms --warmup-time 300ms"));
    let pid = sim.pid().to_string();
    let (r, _) = run_ssh(
        &sshd,
        &format!("--server llm-sim --pid {pid} --timeout 20s"),
        &sim.base_url(),
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["outcome"], "ready");
    assert!(rec["via"].as_str().unwrap().starts_with("ssh "), "{rec}");
    // Refused on the far side was told apart from open: the port opened
    // after the simulated load, not at the first probe.
    let open = rec["time_to_port_open_s"].as_f64().unwrap();
    assert!(
        open > 0.1,
        "port open at {open}: refusal not seen through the tunnel"
    );
    assert_eq!(
        rec["server"]["simulated"], true,
        "server info through the tunnel"
    );
}

#[test]
fn crash_is_seen_through_the_far_side_pid_and_log() {
    let Some(sshd) = Sshd::start() else { return };
    let sim = LoggedSim::start("ssh-crash", &["--crash-on-load", "--load-time", "500ms"]);
    let (rec, wall) = crash_over_ssh(
        &sshd,
        &sim.pid(),
        &sim.log,
        "--timeout 120s",
        &sim.base_url(),
    );
    // Seen by the crash, not the timeout (latency: bench/wait-ready.sh).
    assert!(wall < 60.0, "took {wall:.2}s");
    assert_eq!(rec["kind"], "oom", "{rec}");
    assert!(rec["log_tail"].to_string().contains("CUDA out of memory"));
}

#[test]
fn bad_host_key_is_a_transport_error() {
    let Some(sshd) = Sshd::start() else { return };
    let mut c = wr(&[]);
    c.args(sshd.args_with(&sshd.client_key, &sshd.wrong_known_hosts))
        .args(["--timeout", "5s", "http://127.0.0.1:1/health"]);
    let (r, _) = run_timed(c, "");
    r.expect_code(21);
    // A failure record (class transport) so a pipeline keeps the config
    // and a sweep knows to try again; no ready record.
    let rec = r.one();
    assert_eq!(
        (rec["type"].as_str(), rec["class"].as_str()),
        (Some("failure"), Some("transport")),
        "{rec}"
    );
    assert!(r.stderr().contains("wait-ready: error:"), "{}", r.stderr());
}

#[test]
fn unit_is_watched_on_the_far_side_behind_the_prefix() {
    let Some(sshd) = Sshd::start() else { return };
    let dir = testkit::temp_dir("ssh-unit");
    let active = "LoadState=loaded\nActiveState=activating\nSubState=start\nResult=success\nNRestarts=0\nInvocationID=aaa\n";
    std::fs::write(dir.join("state1"), active).unwrap();
    std::fs::write(
        dir.join("state2"),
        "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=signal\nNRestarts=0\nInvocationID=aaa\nExecMainCode=2\nExecMainStatus=9\n",
    )
    .unwrap();
    let prefix = fake_systemd(&dir);
    let url = format!("http://127.0.0.1:{}/health", testkit::free_port());
    let c = wr_ssh(
        &sshd,
        &[
            "--unit",
            "m.service",
            "--exec-prefix",
            &prefix,
            "--timeout",
            "20s",
            &url,
        ],
    );
    let (r, _) = run_timed(c, "");
    let _ = std::fs::remove_dir_all(dir);
    let rec = r.expect_one(10);
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("killed by signal 9"),
        "{rec}"
    );
    assert_eq!(
        rec["log_tail"].as_array().unwrap().len(),
        3,
        "journal over ssh"
    );
}

#[test]
fn expect_config_reads_argv_over_ssh() {
    let Some(sshd) = Sshd::start() else { return };
    let port = testkit::free_port();
    common::stub_server(
        port,
        std::time::Duration::ZERO,
        200,
        std::time::Duration::ZERO,
    );
    let spec = r#"{"method":"eagle","num_speculative_tokens":3}"#;
    let p = common::ArgvProc::start(&["vllm", "serve", "tiny", "--speculative-config", spec]);
    let pid = p.pid();
    let url = format!("http://127.0.0.1:{port}");
    let args = [
        "--server",
        "vllm",
        "--pid",
        &pid,
        "--no-stdin",
        "--timeout",
        "20s",
        &url,
    ];
    let ok = "speculative-config.num_speculative_tokens=3";
    let (r, _) = run_timed(
        wr_ssh(&sshd, &[&args[..], &["--expect-config", ok]].concat()),
        "",
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["config_source"], "argv", "{rec}");
    assert!(rec["via"].as_str().unwrap().starts_with("ssh "), "{rec}");
    let bad = "speculative-config.num_speculative_tokens=2";
    let (r, _) = run_timed(
        wr_ssh(&sshd, &[&args[..], &["--expect-config", bad]].concat()),
        "",
    );
    r.expect_code(13);
}
