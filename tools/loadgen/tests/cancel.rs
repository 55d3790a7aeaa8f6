//! `--cancel-rate P --cancel-after DUR`: a share of the requests is dropped
//! mid-stream on purpose; they are counted apart (`counts.cancelled`),
//! never as failures or tokens, and the server's own counter of streams
//! the client closed says the same number.

mod common;
use common::*;
use std::time::{Duration, Instant};

/// 10 ms to the first token, then 20 ms each: a request of a few tokens
/// is still streaming when the cancel picks drop it.
const SLOW: [&str; 6] = [
    "--exact-ttft",
    "10ms",
    "--exact-itl",
    "20ms",
    "--personality",
    "vllm",
];

#[test]
fn cancelled_requests_are_counted_apart_and_the_server_sees_them() {
    // 10 ms to the first token, then 20 ms each: 40 tokens take ~0.8 s,
    // far longer than the 150 ms after which a picked request is dropped.
    let s = sim(&SLOW);
    let r = load_sim(
        &s,
        "-c 2 -n 12 --max-tokens 40 --ignore-eos --cancel-rate 0.5 --cancel-after 150ms \
         --seed 5 --quiet",
    );
    r.expect_code(0);
    check_contract(&r);
    let b = &benches(&r)[0];
    let counts = &b["counts"];
    let cancelled = counts["cancelled"].as_u64().unwrap();
    let completed = counts["completed"].as_u64().unwrap();
    assert!((2..=10).contains(&cancelled), "{b}");
    assert_eq!(completed + cancelled, 12, "{b}");
    assert_eq!(counts["failed"], 0, "{b}");
    assert_eq!(b["errors"], serde_json::json!({}), "{b}");
    assert_eq!(counts["output_tokens"].as_u64().unwrap(), 40 * completed);
    assert_eq!(b["load"]["cancel_rate"], 0.5);
    assert_eq!(b["load"]["cancel_after_s"], 0.15);
    assert!(b["warnings"].as_array().is_none_or(|w| w.is_empty()), "{b}");
    // The server notices a closed stream at its next write (20 ms).
    let t0 = Instant::now();
    while (sim_metric(&s, "llm_sim_requests_aborted_total") as u64) < cancelled
        && t0.elapsed() < Duration::from_secs(3)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        sim_metric(&s, "llm_sim_requests_aborted_total") as u64,
        cancelled
    );
    // The same requests are cancelled on every run (the seed picks them).
    let again = load_sim(
        &s,
        "-c 2 -n 12 --max-tokens 40 --ignore-eos --cancel-rate 0.5 --cancel-after 150ms \
         --seed 5 --quiet",
    );
    assert_eq!(benches(&again)[0]["counts"]["cancelled"], cancelled);
}

#[test]
fn cancel_flags_go_together() {
    let r = load("http://127.0.0.1:9", &["--cancel-rate", "0.5"]);
    r.expect_code(2);
    assert!(r.stderr().contains("--cancel-after"), "{}", r.stderr());
    let r = load(
        "http://127.0.0.1:9",
        &["--cancel-rate", "1.5", "--cancel-after", "1s"],
    );
    r.expect_code(2);
    assert!(
        r.stderr().contains("expected a share from 0 to 1"),
        "{}",
        r.stderr()
    );
}

/// A cancelled request's prompt never reaches the server's usage count, so
/// the trace's input-token check compares only the requests that ended:
/// cancelling half the trace is not "another tokenizer".
#[test]
fn cancelled_trace_requests_do_not_skew_the_input_token_check() {
    let s = sim(&SLOW);
    let dir = testkit::temp_dir("loadgen-cancel-trace");
    let trace = dir.join("trace.jsonl");
    let text: String = (0..10)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 16, \"output_length\": 6, \
                 \"hash_ids\": [{i}, 100]}}\n",
                i * 30
            )
        })
        .collect();
    std::fs::write(&trace, text).unwrap();
    let r = load(
        &s.base_url(),
        &[
            "--trace",
            trace.to_str().unwrap(),
            "--block-size",
            "8",
            "--cancel-rate",
            "0.5",
            "--cancel-after",
            "40ms",
            "--seed",
            "5",
            "--quiet",
        ],
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    let cancelled = b["counts"]["cancelled"].as_u64().unwrap();
    assert!((2..=8).contains(&cancelled), "{b}");
    let w = &b["load"]["workload"];
    let completed = b["counts"]["completed"].as_u64().unwrap();
    assert_eq!(w["replayed_input_tokens"], 16 * completed, "{b}");
    let warns = b["warnings"].as_array().cloned().unwrap_or_default();
    assert!(
        !warns
            .iter()
            .any(|x| x.as_str().unwrap().contains("input tokens")),
        "{warns:?}"
    );
}
