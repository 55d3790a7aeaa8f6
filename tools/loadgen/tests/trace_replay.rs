//! `--trace`: a hand-made Mooncake trace replayed against llm-sim at its
//! recorded times (and at twice the pace), the record naming the workload
//! and comparing the replay with the trace; bad traces each one error line
//! naming the line, with nothing sent.

mod common;
use common::*;
use std::net::TcpListener;
use testkit::assert_contains;

/// Timestamps (ms) with a burst of four at 400 ms; ids 1,2 shared by all,
/// id 3 by two, so the trace has known prefix reuse.
const TRACE: &[(u64, u64, &str)] = &[
    (0, 20, "[1,2,3]"),
    (100, 17, "[1,2,4]"),
    (200, 20, "[1,2,3]"),
    (400, 10, "[1,2]"),
    (402, 18, "[1,2,5]"),
    (404, 9, "[1,2]"),
    (406, 24, "[1,2,6]"),
    (800, 16, "[1,2]"),
];

fn write_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let text: String = TRACE
        .iter()
        .map(|(t, n, ids)| {
            format!("{{\"timestamp\": {t}, \"input_length\": {n}, \"output_length\": 3, \"hash_ids\": {ids}}}\n")
        })
        .collect();
    let p = dir.join("trace.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn mooncake_trace_replays_at_recorded_times_and_speeds() {
    let s = sim(&["--zero-delay", "--personality", "vllm"]);
    let dir = testkit::temp_dir("loadgen-trace");
    let trace = write_trace(&dir);
    let t = trace.to_str().unwrap();
    let r = load(
        &s.base_url(),
        &[
            "--trace",
            t,
            "--block-size",
            "8",
            "--speed",
            "1,2",
            "--quiet",
        ],
    );
    r.expect_code(0);
    check_contract(&r);
    let b = benches(&r);
    assert_eq!(b.len(), 2, "{}", r.stderr());
    let digest = sweepkit::sha256::hex(&std::fs::read(&trace).unwrap());
    let want_tokens: u64 = TRACE.iter().map(|x| x.1).sum();
    for (rec, speed) in b.iter().zip([1.0, 2.0]) {
        let load = &rec["load"];
        assert_eq!(load["mode"], "trace", "{rec}");
        let w = &load["workload"];
        assert_eq!(w["kind"], "mooncake_trace");
        assert_eq!(w["sha256"], digest.as_str());
        assert_eq!(w["requests"], 8);
        assert_eq!(w["block_size"], 8);
        assert_eq!(f(&w["speed"]), speed);
        assert_eq!(f(&w["trace_duration_s"]), 0.8);
        // Ids 1 and 2 in every request, 3 in two.
        assert_eq!(w["reused_blocks"], 3);
        // llm-sim counts one token per word: the replay is the trace's length.
        assert_eq!(w["trace_input_tokens"], want_tokens);
        assert_eq!(w["replayed_input_tokens"], want_tokens, "{rec}");
        assert_eq!(rec["counts"]["completed"], 8);
        // Sent at the recorded times over the speed: the last send is at
        // 0.8 s / speed, so the level lasts at least that long.
        let el = f(&rec["throughput"]["elapsed_s"]);
        // (less a millisecond: the first send may be late by tokio's timer)
        assert!(
            el >= 0.8 / speed - 0.005 && el < 0.8 / speed + 0.5,
            "elapsed {el}"
        );
        let lag = f(&rec["start_lag_ms"]["p99"]);
        assert!(lag < 20.0, "lag p99 {lag}");
        // Sent after the trace's time by tokio's timer (1 ms wheel) at most
        // a little: the send lag the record reports is that, measured.
        let (p50, p99) = (f(&w["send_lag_p50_ms"]), f(&w["send_lag_p99_ms"]));
        assert!(p50 <= p99 && p99 < 20.0, "send lag {p50} {p99}");
        // The burst is kept: the replay's gaps vary as the trace's do.
        let (tcv, rcv) = (f(&w["trace_arrival_cv"]), f(&w["replayed_arrival_cv"]));
        assert!(tcv > 1.0 && (rcv - tcv).abs() < 0.2, "cv {tcv} vs {rcv}");
        assert_eq!(rec["load"]["max_tokens"], 128);
    }
    assert_eq!(
        f(&b[1]["load"]["rate_rps"]),
        2.0 * f(&b[0]["load"]["rate_rps"])
    );
    // Equal hash ids are equal prefixes on the server: its prefix cache
    // (vLLM's 16-token blocks) hits the two shared 8-token blocks of ids
    // 1 and 2 wherever a later request has a full block past them: 64
    // tokens in the first replay, 80 in the second (its first request hits too).
    assert_eq!(
        sim_metric(&s, "vllm:prefix_cache_queries_total"),
        2.0 * want_tokens as f64
    );
    assert_eq!(sim_metric(&s, "vllm:prefix_cache_hits_total"), 144.0);
}

#[test]
fn a_window_of_the_trace_replays_only_its_requests() {
    let s = sim(&["--zero-delay"]);
    let dir = testkit::temp_dir("loadgen-trace-window");
    let trace = write_trace(&dir);
    let r = load(
        &s.base_url(),
        &[
            "--trace",
            trace.to_str().unwrap(),
            "--block-size",
            "8",
            "--trace-start",
            "400ms",
            "--trace-end",
            "800ms",
            "--quiet",
        ],
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    let w = &b["load"]["workload"];
    assert_eq!(w["requests"], 4, "{b}");
    assert_eq!(w["window"], "400ms..800ms");
    assert_eq!(w["replayed_input_tokens"], 10 + 18 + 9 + 24);
    let el = f(&b["throughput"]["elapsed_s"]);
    assert!(el < 0.3, "the window's sends span 6 ms, elapsed {el}");
}

/// Each bad trace: exit 3, one error line naming the file and line, no
/// stdout, and no connection made to the server.
#[test]
fn bad_traces_are_one_line_errors_and_nothing_is_sent() {
    let dir = testkit::temp_dir("loadgen-bad-trace");
    let ok = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 2, \"hash_ids\": [1]}";
    let cases = [
        (format!("{ok}\n{{not json\n"), "line 2: not a JSON object"),
        (
            format!("{}\n{ok}\n", ok.replace(": 0,", ": 50,")),
            "line 2: timestamp 0 ms goes back from line 1's 50 ms",
        ),
        (
            ok.replace("\"input_length\": 4", "\"input_length\": -4"),
            "line 1: \"input_length\" -4 is negative",
        ),
        (
            format!(
                "{ok}\n{}",
                ok.replace("\"input_length\": 4", "\"input_length\": 600")
            ),
            "line 2: input_length 600 needs 2 hash_ids of 512 tokens, the line has 1",
        ),
    ];
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = dir.join(format!("bad{i}.jsonl"));
        std::fs::write(&p, text).unwrap();
        let r = load(&url, &["--trace", p.to_str().unwrap()]);
        r.expect_one_error(3, want);
        assert_contains(&r.stderr(), &format!("--trace {}: line", p.display()));
        assert_eq!(r.stderr().lines().count(), 1, "{}", r.stderr());
        assert_eq!(r.stdout(), "");
    }
    l.set_nonblocking(true).unwrap();
    assert!(l.accept().is_err(), "a bad trace must send nothing");
}
