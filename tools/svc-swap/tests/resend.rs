//! svc-swap re-sends SIGTERM to a server that lost it while loading
//! (`llm-sim --personality vllm`, as vLLM's CPU build does, issue 13), as a
//! process spec and as a systemd unit in a booted container; a server that
//! ignores every SIGTERM still ends with SIGKILL after TimeoutStopSec.
//! Needs `cargo build -p llm-sim`.

use std::time::{Duration, Instant};

use serde_json::Value;
use support::SimSpec;
use testkit::alive;
use testkit::nspawn::{boot_with_bins as boot, Container};
use testkit::Run;

mod support;

/// A vLLM-like server that loads for 30 s (port refused meanwhile).
const VLLM: &str = "--personality vllm --load-time 30s --warmup-time 10ms";

fn stop_s(rec: &Value) -> f64 {
    eprintln!("stop: {}", rec["stop"]);
    rec["stop"]["duration_s"].as_f64().unwrap()
}

/// A process spec running llm-sim with `args` on a fresh port.
fn spec(tag: &str, args: &str, timeout_stop: &str) -> SimSpec {
    SimSpec::write(tag, None, |sim, port| {
        format!(
            "ExecStart={sim} --host 127.0.0.1 --port {port} {args}\nTimeoutStopSec={timeout_stop}\nPort={port}\n"
        )
    })
}

#[test]
fn process_swap_during_vllm_load_resends_sigterm() {
    let s = spec("resend-proc", VLLM, "60");
    s.swap(&["--set", "load-time=30s"]).expect_code(0);
    let old = s.pid().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // Still loading (port refused): the first SIGTERM is lost; the default
    // --resend-term-after (5s) sends another, which ends it.
    let t0 = Instant::now();
    let r = s.swap(&["--set", "load-time=10ms"]);
    r.expect_code(0);
    let took = t0.elapsed();
    let rec = r.one();
    assert_eq!(rec["stop"]["result"], "clean_after_resend", "{rec}");
    assert_eq!(rec["stop"]["term_resent"], 1, "{rec}");
    assert!(stop_s(&rec) >= 4.5 && stop_s(&rec) < 15.0, "{rec}");
    assert!(took < Duration::from_secs(20), "swap took {took:?}");
    assert!(!alive(old));
    assert!(s.log().contains("received a second SIGTERM"), "{}", s.log());
    // The new config (10 ms load) serves at once; the old needed 30 s.
    assert_eq!(rec["start"]["cmdline_verified"], true, "{rec}");
    s.healthy_within(Duration::from_secs(5));
    // A server that ends on the first SIGTERM reports no re-send.
    let r = s.swap(&["--set", "load-time=20ms"]);
    let rec = r.expect_one(0);
    assert_eq!(rec["stop"]["result"], "clean", "{rec}");
    assert!(rec["stop"].get("term_resent").is_none(), "{rec}");
}

#[test]
fn process_ignoring_every_sigterm_still_gets_sigkill() {
    let s = spec(
        "resend-ignore",
        "--load-time 10ms --ignore-sigterm 60s",
        "3",
    );
    s.swap(&["--set", "warmup-time=10ms"]).expect_code(0);
    s.server_info();
    let old = s.pid().unwrap();
    let r = s.swap(&testkit::words(
        "--set warmup-time=20ms --resend-term-after 1s --force-kill",
    ));
    let rec = r.expect_one(0);
    assert_eq!(rec["stop"]["result"], "sigkill_after_timeout", "{rec}");
    let n = rec["stop"]["term_resent"].as_u64().unwrap_or(0);
    assert!((1..=3).contains(&n), "re-sent {n} times: {rec}");
    assert!(stop_s(&rec) >= 2.9, "{rec}");
    assert!(!alive(old));
    assert!(s
        .log()
        .contains("received SIGTERM again; still ignoring it"));
    assert_eq!(s.server_info()["warmup_time_s"], 0.02);
}

fn unit(c: &Container, args: &str, timeout_stop: u32) {
    c.write_file(
        "/etc/systemd/system/sim.service",
        &format!(
            "[Service]\nExecStart=/opt/sweepkit/bin/llm-sim --host 127.0.0.1 --port 8000 {args}\nTimeoutStopSec={timeout_stop}\n"
        ),
    );
    // Drop the drop-in an earlier swap left, so the unit runs `args`.
    c.sh("rm -rf /etc/systemd/system/sim.service.d && systemctl daemon-reload && systemctl restart sim.service");
}

fn unit_swap(c: &Container, args: &[&str]) -> Run {
    let prefix = c.exec_prefix();
    support::swap(&[&["--exec-prefix", prefix.as_str(), "--unit", "sim"], args].concat())
}

/// `unit_swap` with the words of `line`, which exits 0; its record.
#[track_caller]
fn swapped(c: &Container, line: &str) -> Value {
    unit_swap(c, &testkit::words(line)).expect_one(0)
}

/// SGLang personality's /server_info once healthy.
fn unit_info(c: &Container) -> Value {
    c.sim_server_info(8000, "sim")
}

#[test]
fn systemd_swap_during_vllm_load_resends_and_ignorer_gets_sigkill() {
    let Some((c, _g)) = boot() else { return };
    unit(&c, VLLM, 60);
    std::thread::sleep(Duration::from_millis(500));
    let rec = swapped(&c, "--set load-time=10ms --resend-term-after 2s");
    assert_eq!(rec["stop"]["result"], "clean_after_resend", "{rec}");
    assert_eq!(rec["stop"]["systemd_result"], "success", "{rec}");
    let detail = rec["stop"]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("1 more"), "{rec}");
    assert_eq!(rec["stop"]["term_resent"], 1, "{rec}");
    assert!(stop_s(&rec) >= 1.5 && stop_s(&rec) < 10.0, "{rec}");
    assert_eq!(rec["start"]["cmdline_verified"], true, "{rec}");
    c.sim_healthy_within(8000, "sim", Duration::from_secs(5));
    let log = c.sh("journalctl -u sim -o cat; true");
    assert!(log.contains("received a second SIGTERM"), "{log}");

    // Ignores every SIGTERM: re-sent, then systemd's SIGKILL at 3 s.
    unit(&c, "--load-time 10ms --ignore-sigterm 60s", 3);
    unit_info(&c);
    let rec = swapped(&c, "--set warmup-time=20ms --resend-term-after 1s");
    assert_eq!(rec["stop"]["result"], "sigkill_after_timeout", "{rec}");
    assert_eq!(rec["stop"]["systemd_result"], "timeout", "{rec}");
    let n = rec["stop"]["term_resent"].as_u64().unwrap_or(0);
    assert!((1..=3).contains(&n), "re-sent {n} times: {rec}");
    assert!(stop_s(&rec) >= 2.9, "{rec}");
    assert_eq!(unit_info(&c)["warmup_time_s"], 0.02);
}
