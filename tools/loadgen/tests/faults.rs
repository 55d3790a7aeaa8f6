//! Every fault mode is counted by kind, kept out of latency statistics, and
//! ends in bounded time (guidellm issues 444/216; a hung or dead server).

mod common;
use common::*;
use std::time::{Duration, Instant};
use testkit::assert_contains;

fn errors(rec: &serde_json::Value) -> serde_json::Map<String, serde_json::Value> {
    rec["errors"].as_object().cloned().unwrap_or_default()
}

fn assert_accounted(rec: &serde_json::Value, n: u64) {
    let ok = rec["counts"]["completed"].as_u64().unwrap();
    let failed = rec["counts"]["failed"].as_u64().unwrap();
    assert_eq!(ok + failed, n, "{rec}");
    let by_kind: u64 = errors(rec).values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(by_kind, failed, "errors by kind add up");
    assert_eq!(
        rec["ttft_ms"]["count"].as_u64().unwrap(),
        ok,
        "failed requests stay out of TTFT"
    );
    assert_eq!(rec["e2e_ms"]["count"].as_u64().unwrap(), ok);
}

#[test]
fn http_errors_are_counted_by_status_and_exit_31() {
    let s = sim(&words("--zero-delay --error-rate 0.3 --seed 7"));
    let r = load_sim(&s, "-c 4 -n 60 --max-tokens 4");
    r.expect_code(31);
    let b = benches(&r);
    assert_eq!(b.len(), 1);
    assert_accounted(&b[0], 60);
    let e = errors(&b[0]);
    assert!(e.keys().all(|k| k.starts_with("http_5")), "{e:?}");
    assert!(!e.is_empty());
}

#[test]
fn cut_streams_and_malformed_sse_are_counted() {
    let s = sim(&words(
        "--zero-delay --cut-stream-rate 0.25 --malformed-sse-rate 0.25 --seed 3",
    ));
    let r = load_sim(&s, "-c 4 -n 60 --max-tokens 8");
    r.expect_code(31);
    let b = benches(&r);
    assert_accounted(&b[0], 60);
    let e = errors(&b[0]);
    assert!(e.contains_key("cut_stream"), "{e:?}");
    assert!(e.contains_key("malformed_stream"), "{e:?}");
}

#[test]
fn stalled_streams_time_out_in_bounded_time() {
    let s = sim(&words("--zero-delay --stall-rate 0.5 --stall 30s --seed 5"));
    let t0 = Instant::now();
    let r = load_sim(&s, "-c 4 -n 12 --max-tokens 8 --idle-timeout 400ms");
    let took = t0.elapsed();
    r.expect_code(31);
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let b = benches(&r);
    assert_accounted(&b[0], 12);
    assert!(errors(&b[0]).contains_key("timeout"), "{}", b[0]);
}

/// `load_sim`, which must end within `limit`.
#[track_caller]
fn load_sim_within(s: &Sim, line: &str, limit: Duration) -> Run {
    let t0 = Instant::now();
    let r = load_sim(s, line);
    assert!(t0.elapsed() < limit, "took {:?}", t0.elapsed());
    r
}

#[test]
fn level_timeout_bounds_a_hung_server() {
    let s = sim(&words("--zero-delay --stall-rate 1.0 --stall 30s"));
    let r = load_sim_within(
        &s,
        "-c 2 -n 4 --warmup 0 --level-timeout 1s",
        Duration::from_secs(8),
    );
    // Nothing completed: a failure record, exit 30.
    r.expect_code(30);
    let v = r.json_lines();
    assert_eq!(v.last().unwrap()["type"], "failure");
    assert_eq!(v.last().unwrap()["kind"], "bench_failed");
    assert!(
        v.last().unwrap()["reason"]
            .as_str()
            .unwrap()
            .contains("abandoned"),
        "{}",
        v[0]
    );
}

#[test]
fn server_death_mid_level_ends_the_run_with_a_failure_record() {
    let s = sim(&words(
        "--exact-ttft 5ms --exact-itl 5ms --crash-after 700ms",
    ));
    let r = load_sim_within(
        &s,
        "-c 2,4 --duration 20s --max-tokens 16",
        Duration::from_secs(10),
    );
    r.expect_code(30);
    check_contract(&r);
    let v = r.json_lines();
    let last = v.last().unwrap();
    assert_eq!(last["type"], "failure", "{}", r.stdout());
    assert_eq!(last["stage"], "bench");
    assert_eq!(last["kind"], "crashed_mid_run");
    // The level that saw the crash says what it measured before it.
    let b = benches(&r);
    assert_eq!(b.len(), 1, "no further levels after the crash");
    assert_eq!(b[0]["partial"], true);
    assert!(b[0]["counts"]["completed"].as_u64().unwrap() > 0);
}

#[test]
fn unreachable_server_writes_a_failure_record() {
    let port = testkit::free_port();
    let url = format!("http://127.0.0.1:{port}");
    let r = load(&url, &[]);
    r.expect_code(30);
    let v = r.json_lines();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["type"], "failure");
    assert_eq!(v[0]["kind"], "unreachable");
    assert!(r.stderr().starts_with("loadgen: error: "), "{}", r.stderr());
}

#[test]
fn server_crash_after_answering_is_crashed_mid_run_not_bench_failed() {
    // llama-server's GGML_ASSERT under load: the first level was fine, then
    // the server aborted with every request of the next level in flight: all
    // cut, none refused (found on the real server; it was reported as
    // bench_failed). Each request streams ~1.9 s; the crash comes at 3 s,
    // about 1 s into the second level, with ~1 s of slack either side.
    let s = sim(&words(
        "--exact-ttft 30ms --exact-itl 30ms --crash-after 3s",
    ));
    let r = load_sim(&s, "-c 4,8 -n 4 --warmup 0 --max-tokens 64 --ignore-eos");
    r.expect_code(30);
    check_contract(&r);
    let v = r.json_lines();
    let b = benches(&r);
    assert_eq!(b.len(), 1, "{}", r.stdout());
    assert_eq!(b[0]["counts"]["completed"], 4, "{}", b[0]);
    let last = v.last().unwrap();
    assert_eq!(last["type"], "failure", "{}", r.stdout());
    assert_eq!(last["stage"], "bench");
    assert_eq!(last["kind"], "crashed_mid_run", "{last}");
    let reason = last["reason"].as_str().unwrap();
    assert_contains(reason, "all 4 requests failed (cut_stream x4)");
    assert_contains(reason, "died mid-level");
}

#[test]
fn server_death_part_way_through_a_level_warns_in_the_bench_record() {
    // The server answers four requests, dies on the fifth: the bench record
    // keeps what was measured, says the server died, and a crashed_mid_run
    // record follows.
    let s = sim(&["--zero-delay", "--crash-after-requests", "5"]);
    let r = load_sim(&s, "-c 1,2 -n 8 --warmup 0 --max-tokens 8");
    r.expect_code(30);
    check_contract(&r);
    let v = r.json_lines();
    let b = benches(&r);
    assert_eq!(
        b.len(),
        1,
        "no further levels after the crash: {}",
        r.stdout()
    );
    assert_accounted(&b[0], 8);
    assert_eq!(b[0]["counts"]["completed"], 4, "{}", b[0]);
    assert_eq!(b[0]["partial"], true);
    assert!(
        b[0]["warnings"].to_string().contains("died mid-level"),
        "{}",
        b[0]["warnings"]
    );
    let last = v.last().unwrap();
    assert_eq!(last["type"], "failure");
    assert_eq!(last["kind"], "crashed_mid_run");
}
