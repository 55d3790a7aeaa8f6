//! Defaults that fit real servers: with nothing watched, a refused port is
//! a server still starting (SGLang and vLLM keep it closed while loading),
//! probed until --timeout; then 12 if it never opened, 124 if it did.
//! `--unreachable-after` still fails fast, a name that does not resolve
//! fails after `--unresolved-after` (10 s), and the SGLang preset waits
//! out a /health that generates a token.

mod common;

use std::time::Duration;

use common::{run_timed, stub_server, wr, wr_line};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn refused_then_listening_with_nothing_watched_ends_ready() {
    let port = testkit::free_port();
    stub_server(port, MS(1500), 200, MS(0));
    let url = format!("http://127.0.0.1:{port}/health");
    let (r, _) = run_timed(wr_line(&format!("{url} --timeout 20s --no-stdin")), "");
    let rec = r.expect_one(0);
    let open = rec["time_to_port_open_s"].as_f64().unwrap();
    assert!(
        open >= 1.4,
        "the port opened at {open}: refusal was not waited out"
    );
}

#[test]
fn llm_sim_loading_with_nothing_watched_ends_ready() {
    let sim = testkit::Sim::start(&testkit::words("--load-time 2s --warmup-time 300ms"));
    let (r, wall) = run_timed(
        wr(&[
            "--server",
            "sglang",
            &sim.base_url(),
            "--timeout",
            "20s",
            "--no-stdin",
        ]),
        "",
    );
    r.expect_code(0);
    assert!(wall >= 1.5, "ready after {wall:.2}s, before the load ended");
}

#[test]
fn a_port_that_never_opened_is_unreachable_at_the_timeout() {
    let url = format!("http://127.0.0.1:{}/health", testkit::free_port());
    let (r, wall) = run_timed(wr_line(&format!("{url} --timeout 1500ms --no-stdin")), "");
    r.expect_code(12);
    assert!(wall >= 1.4, "gave up after {wall:.2}s, before --timeout");
    let rec = r.one();
    assert_eq!(rec["kind"], "unreachable");
    let reason = rec["reason"].as_str().unwrap();
    assert!(reason.contains("never opened"), "{reason}");
}

#[test]
fn open_but_never_healthy_is_a_timeout() {
    let port = testkit::free_port();
    stub_server(port, MS(0), 503, MS(0));
    std::thread::sleep(MS(100));
    let url = format!("http://127.0.0.1:{port}/health");
    let (r, _) = run_timed(wr_line(&format!("{url} --timeout 1500ms --no-stdin")), "");
    r.expect_code(124);
    assert_eq!(r.one()["kind"], "timeout");
}

#[test]
fn unreachable_after_still_fails_fast() {
    let url = format!("http://127.0.0.1:{}/health", testkit::free_port());
    let (r, wall) = run_timed(
        wr_line(&format!(
            "{url} --timeout 30s --unreachable-after 300ms --no-stdin"
        )),
        "",
    );
    r.expect_code(12);
    assert!(wall < 5.0, "took {wall:.2}s");
}

/// `.invalid` never resolves (RFC 6761) and wait-ready answers it without
/// a lookup: no DNS server is asked, so the test needs no network.
const NO_SUCH_HOST: &str = "http://no-such-host.invalid:8000/health";

#[test]
fn a_name_that_does_not_resolve_fails_within_ten_seconds_not_the_timeout() {
    // Issue 21: exit 12 came only after the whole --timeout (60 s).
    let (r, wall) = run_timed(wr(&[NO_SUCH_HOST, "--timeout", "60s", "--no-stdin"]), "");
    r.expect_code(12);
    assert!((9.5..15.0).contains(&wall), "gave up after {wall:.2}s");
    let rec = r.one();
    assert_eq!(rec["kind"], "unreachable", "{rec}");
    let reason = rec["reason"].as_str().unwrap();
    assert!(reason.contains("name does not resolve"), "{reason}");
    assert!(reason.contains("has not resolved for 10s"), "{reason}");
    assert!(reason.contains("--unresolved-after"), "{reason}");
    assert!(r.stderr().contains(reason), "{}", r.stderr());
}

#[test]
fn unresolved_after_sets_the_grace_and_never_waits_for_the_timeout() {
    // A watched process that is alive says nothing for a name: still a typo.
    let me = std::process::id().to_string();
    let args = [NO_SUCH_HOST, "--pid", &me, "--timeout", "30s", "--no-stdin"];
    let (r, wall) = run_timed(wr(&[&args[..], &["--unresolved-after", "1s"]].concat()), "");
    r.expect_code(12);
    assert!((0.9..5.0).contains(&wall), "gave up after {wall:.2}s");
    // `never`, for names that may take long to appear: the timeout decides
    // (124: a live process was watched, so it may still be loading).
    let args = [NO_SUCH_HOST, "--pid", &me, "--timeout", "2s", "--no-stdin"];
    let (r, wall) = run_timed(
        wr(&[&args[..], &["--unresolved-after", "never"]].concat()),
        "",
    );
    r.expect_code(124);
    assert!(wall >= 1.9, "gave up after {wall:.2}s");
}

#[test]
fn sglang_preset_waits_out_a_generating_health_check() {
    // SGLang's /health generates a token before it answers (about 1 s and
    // more under load): a 2 s probe limit would never see it pass.
    let port = testkit::free_port();
    stub_server(port, MS(0), 200, MS(2500));
    std::thread::sleep(MS(100));
    let base = format!("http://127.0.0.1:{port}");
    let (r, _) = run_timed(
        wr(&[
            "--server",
            "sglang",
            &base,
            "--timeout",
            "20s",
            "--no-stdin",
        ]),
        "",
    );
    r.expect_code(0);
    // Without the preset, the 2 s default gives up on each probe.
    let url = format!("{base}/health");
    let (r, _) = run_timed(wr_line(&format!("{url} --timeout 4s --no-stdin")), "");
    r.expect_code(124);
}
