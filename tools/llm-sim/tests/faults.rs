//! Fault modes and timing modes over real sockets: HTTP 500s, cut streams,
//! malformed SSE, stalls, zero delay, exact timing, and 1024 connections.

mod common;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::{completion, eagle_with, post_json, sim, stream};
use serde_json::Value;

/// Keeps the 1024-thread test from skewing the timing test's clock.
static TIMING: Mutex<()> = Mutex::new(());

#[test]
fn error_rate_gives_500_json() {
    let sim = sim(&["--error-rate", "1"]);
    let (code, v) = post_json(sim.port, "/v1/completions", &completion(4, false));
    assert_eq!(code, 500);
    assert_eq!(v["error"]["type"], "InternalServerError");
    assert_eq!(v["simulated"], true);
    let s = stream(sim.port, "/v1/completions", &completion(4, true));
    assert_eq!(s.status, 500);
}

#[test]
fn error_rate_half_fails_some_deterministically() {
    let codes = |seed: &str| -> Vec<u16> {
        let sim = sim(&["--error-rate", "0.5", "--seed", seed, "--zero-delay"]);
        (0..20)
            .map(|_| post_json(sim.port, "/v1/completions", &completion(2, false)).0)
            .collect()
    };
    let a = codes("4");
    assert!(a.contains(&500) && a.contains(&200), "{a:?}");
    assert_eq!(a, codes("4"));
}

#[test]
fn cut_stream_closes_without_done() {
    let sim = sim(&["--cut-stream-rate", "1", "--zero-delay"]);
    let s = stream(sim.port, "/v1/completions", &completion(40, true));
    assert_eq!(s.status, 200);
    assert!(!s.done(), "a cut stream must not end with [DONE]");
    assert!(!s.clean_end, "the chunked body must end abruptly");
    let got = common::Streamed {
        events: s.events.clone(),
        lines: vec![],
        status: 200,
        clean_end: false,
    }
    .text()
    .split_whitespace()
    .count();
    assert!(got > 0 && got < 40, "{got} tokens before the cut");
    let url = format!("{}/v1/completions", sim.base_url());
    let r = ureq::post(&url).send_string(&completion(10, false).to_string());
    assert!(
        r.is_err() || r.unwrap().into_string().is_err(),
        "non-streamed cut"
    );
}

#[test]
fn malformed_sse_line_then_stream_continues() {
    let sim = sim(&["--malformed-sse-rate", "1", "--zero-delay"]);
    let s = stream(sim.port, "/v1/completions", &completion(20, true));
    let bad: Vec<_> = s
        .events
        .iter()
        .filter(|e| e.data != "[DONE]" && e.json().is_none())
        .collect();
    assert_eq!(bad.len(), 1, "{:?}", s.lines);
    assert!(s.done());
    assert_eq!(s.usage_event().unwrap()["usage"]["completion_tokens"], 20);
}

#[test]
fn stall_pauses_mid_stream() {
    let sim = sim(&testkit::words("--stall-rate 1 --stall 600ms --zero-delay"));
    let s = stream(sim.port, "/v1/completions", &completion(20, true));
    assert!(s.done());
    let gaps: Vec<Duration> = s.events.windows(2).map(|w| w[1].at - w[0].at).collect();
    let longest = gaps.iter().max().unwrap();
    assert!(
        *longest >= Duration::from_millis(550),
        "longest gap {longest:?}"
    );
    assert!(s.events.last().unwrap().at < Duration::from_secs(5));
}

/// Behaviour, not speed: the model's schedule gives this stream about 10 s
/// (200 tokens at depth 4 take 1 s), so even a loaded 2-core box ends it far
/// sooner without simulated time. Throughput is `make bench`'s to measure
/// (bench/loadgen.sh, against a peer in the same run).
#[test]
fn zero_delay_is_fast() {
    let sim = sim(&eagle_with("4", &["--zero-delay"]));
    let t0 = Instant::now();
    let s = stream(sim.port, "/v1/completions", &completion(2000, true));
    assert!(s.done());
    assert_eq!(s.usage_event().unwrap()["usage"]["completion_tokens"], 2000);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    let rate = common::throughput(sim.port, 16, 160, 64);
    assert!(rate > 2_000.0, "zero-delay throughput {rate:.0} tok/s");
}

#[test]
fn exact_timing_one_token_per_chunk_on_schedule() {
    let _quiet = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    let sim = sim(&eagle_with(
        "4",
        &testkit::words("--exact-ttft 40ms --exact-itl 8ms"),
    ));
    let (mut errors, mut ttft_errors) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let s = stream(sim.port, "/v1/completions", &completion(25, true));
        let content: Vec<(Duration, Value)> = s
            .events
            .iter()
            .filter_map(|e| e.json().map(|v| (e.at, v)))
            .filter(|(_, v)| v["choices"][0]["text"].is_string())
            .collect();
        assert_eq!(content.len(), 25);
        for (i, (at, v)) in content.iter().enumerate() {
            let text = v["choices"][0]["text"].as_str().unwrap();
            assert_eq!(text.split_whitespace().count(), 1);
            let want = 40.0 + 8.0 * i as f64;
            errors.push(at.as_secs_f64() * 1000.0 - want);
        }
        let t = &s.usage_event().unwrap()["timings"];
        assert_eq!(t["draft_n"], 0);
        ttft_errors.push(t["prompt_ms"].as_f64().unwrap() - 40.0);
    }
    errors.sort_by(f64::total_cmp);
    ttft_errors.sort_by(f64::total_cmp);
    let median = errors[errors.len() / 2];
    // No chunk may come early: that is the schedule, whatever the load.
    // Lateness depends on this test's own scheduling on a shared 2-core box
    // (two builds beside it made the median 2-3 ms late), so the bound here
    // only catches a lost schedule; sub-millisecond precision is measured by
    // `make bench` (bench/loadgen.sh, "Timing error").
    assert!(errors[0] > -0.5, "a chunk came {:.3} ms early", -errors[0]);
    assert!(
        (-0.2..8.0).contains(&median),
        "median error {median:.3} ms (ITL 8 ms): {errors:?}"
    );
    assert!(
        (0.0..8.0).contains(&ttft_errors[1]),
        "server-side TTFT errors {ttft_errors:?} ms"
    );
}

#[test]
fn holds_1024_concurrent_streams() {
    let _quiet = TIMING.lock().unwrap_or_else(|e| e.into_inner());
    let sim = sim(&testkit::words("--exact-ttft 1500ms --exact-itl 10ms"));
    let port = sim.port;
    let t0 = Instant::now();
    let workers: Vec<_> = (0..1024)
        .map(|_| {
            std::thread::Builder::new()
                .stack_size(256 * 1024)
                .spawn(move || stream(port, "/v1/completions", &completion(5, true)))
                .unwrap()
        })
        .collect();
    let mut ok = 0;
    for w in workers {
        let s = w.join().unwrap();
        if s.done() && s.usage_event().is_some() {
            ok += 1;
        }
    }
    assert_eq!(ok, 1024);
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
}
