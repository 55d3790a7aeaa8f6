//! `--sessions`: multi-turn sessions against llm-sim. Each turn sends the
//! history with the replies received live (llm-sim counts one token per
//! word, so each turn's input is the last one's plus the reply plus the new
//! user turn), after the think time from the reply's end; later turns hit
//! llm-sim's prefix cache; a cancelled turn ends its session; bad files
//! are one error line naming the line, with nothing sent.

mod common;
use common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::net::TcpListener;
use testkit::assert_contains;

/// Twenty distinct words: a user turn longer than one 16-token block.
fn user(tag: &str, turn: usize) -> String {
    (0..20)
        .map(|i| format!("{tag}{turn}w{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `--requests-out` lines grouped by session, in turn order.
fn turns_by_session(path: &std::path::Path) -> BTreeMap<u64, Vec<Value>> {
    let mut by: BTreeMap<u64, Vec<Value>> = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        by.entry(v["session"].as_u64().unwrap())
            .or_default()
            .push(v);
    }
    for v in by.values_mut() {
        v.sort_by_key(|x| x["turn"].as_u64());
    }
    by
}

#[test]
fn conversations_send_the_live_replies_back_after_the_think_time() {
    let s = sim(&["--zero-delay", "--personality", "vllm"]);
    let dir = testkit::temp_dir("loadgen-sessions");
    // Each recorded reply is 12 words, 60 characters: it asks for 15
    // output tokens (4 characters a token), so a history that grew by the
    // recorded reply would grow by 12, by the live one 15.
    let recorded = "aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk llll";
    let conv = |tag: &str| {
        let m: Vec<Value> = (0..3)
            .flat_map(|t| {
                [
                    serde_json::json!({"role": "user", "content": user(tag, t)}),
                    serde_json::json!({"role": "assistant", "content": recorded}),
                ]
            })
            .collect();
        serde_json::json!({"id": tag, "messages": m}).to_string() + "\n"
    };
    let file = dir.join("conversations.jsonl");
    std::fs::write(&file, conv("a") + &conv("b")).unwrap();
    let req = dir.join("requests.jsonl");
    let r = load(
        &s.base_url(),
        &[
            "--sessions",
            file.to_str().unwrap(),
            "--think-time",
            "200ms",
            "--concurrency",
            "2",
            "--endpoint",
            "chat",
            "--ignore-eos",
            "--requests-out",
            req.to_str().unwrap(),
            "--quiet",
        ],
    );
    r.expect_code(0);
    check_contract(&r);
    let b = &benches(&r)[0];
    let w = &b["load"]["workload"];
    assert_eq!(w["kind"], "sessions");
    let digest = sweepkit::sha256::hex(&std::fs::read(&file).unwrap());
    assert_eq!(w["sha256"], digest.as_str());
    assert_eq!(w["requests"], 6);
    let st = &w["sessions"];
    assert_eq!(st["source"], "conversations");
    assert_eq!(
        (st["sessions"].as_u64(), st["turns"].as_u64()),
        (Some(2), Some(6))
    );
    assert_eq!(st["sessions_completed"], 2, "{b}");
    assert_eq!(
        (st["sessions_cut"].as_u64(), st["turns_not_sent"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(st["ttft_first_turn_ms"]["count"], 2);
    assert_eq!(st["ttft_later_turns_ms"]["count"], 4);
    // Four later turns, each 200 ms after its reply ended: asked exactly
    // that, kept within the timer's lateness.
    assert_eq!(f(&st["think_time_scheduled_s"]), 0.8);
    let kept = f(&st["think_time_actual_s"]);
    assert!((0.8..0.9).contains(&kept), "think time kept {kept}");
    assert!(f(&st["think_lag_ms"]["p99"]) < 20.0, "{st}");
    let mut hits_wanted = 0;
    for (session, turns) in turns_by_session(&req) {
        assert_eq!(turns.len(), 3, "session {session}");
        assert_eq!(turns[0]["input_tokens"], 20);
        for k in 1..3 {
            let (prev, this) = (&turns[k - 1], &turns[k]);
            let out = prev["output_tokens"].as_u64().unwrap();
            assert_eq!(out, 15, "the recorded reply's length asks the output");
            let grew =
                this["input_tokens"].as_u64().unwrap() - prev["input_tokens"].as_u64().unwrap();
            assert_eq!(
                grew,
                out + 20,
                "session {session} turn {k}: the live reply and the turn"
            );
            // Sent after the previous reply ended plus the think time.
            let end = f(&prev["sent_s"]) + f(&prev["e2e_ms"]) / 1e3;
            let wait = f(&this["sent_s"]) - end;
            assert!((0.195..0.25).contains(&wait), "think {wait}");
            // llm-sim's cache (16-token blocks) holds the last turn's full
            // blocks; the reply after them was never a prompt.
            hits_wanted += prev["input_tokens"].as_u64().unwrap() / 16 * 16;
        }
    }
    assert_eq!(
        sim_metric(&s, "vllm:prefix_cache_hits_total"),
        hits_wanted as f64
    );
    assert!(hits_wanted >= 4 * 16, "later turns hit the prefix cache");
}

#[test]
fn a_session_trace_starts_sessions_on_time_and_waits_each_recorded_delay() {
    let s = sim(&["--zero-delay", "--personality", "vllm"]);
    let dir = testkit::temp_dir("loadgen-session-trace");
    // Session a at 0 ms, its turn 2 300 ms after its reply; session b at
    // 200 ms (Mooncake blocks), its turn 2 at 900 ms on the trace's clock.
    let text = "{\"session_id\":\"a\",\"timestamp\":0,\"text_input\":\"hello there\",\"output_length\":4}\n\
        {\"session_id\":\"b\",\"timestamp\":200,\"input_length\":24,\"hash_ids\":[7,8],\"output_length\":4}\n\
        {\"session_id\":\"a\",\"delay\":300,\"text_input\":\"and then\",\"output_length\":4}\n\
        {\"session_id\":\"b\",\"timestamp\":900,\"input_length\":5,\"hash_ids\":[9],\"output_length\":4}\n";
    let file = dir.join("sessions.jsonl");
    std::fs::write(&file, text).unwrap();
    let req = dir.join("requests.jsonl");
    let r = load(
        &s.base_url(),
        &[
            "--sessions",
            file.to_str().unwrap(),
            "--block-size",
            "16",
            "--speed",
            "2",
            "--ignore-eos",
            "--requests-out",
            req.to_str().unwrap(),
            "--quiet",
        ],
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    assert_eq!(b["load"]["mode"], "trace");
    let w = &b["load"]["workload"];
    assert_eq!((w["block_size"].as_u64(), f(&w["speed"])), (Some(16), 2.0));
    assert_eq!(w["sessions"]["source"], "trace");
    assert_eq!(w["sessions"]["sessions_completed"], 2);
    let by = turns_by_session(&req);
    let (a, bb) = (&by[&0], &by[&1]);
    let sent = |v: &Value| f(&v["sent_s"]);
    let end = |v: &Value| sent(v) + f(&v["e2e_ms"]) / 1e3;
    // At twice the pace: b starts at 100 ms, a waits 150 ms after its
    // reply, b's second turn goes at 450 ms.
    assert!(sent(&a[0]) < 0.02, "{}", sent(&a[0]));
    assert!((0.1..0.12).contains(&sent(&bb[0])), "{}", sent(&bb[0]));
    let wait = sent(&a[1]) - end(&a[0]);
    assert!((0.148..0.17).contains(&wait), "a waits {wait}");
    assert!((0.45..0.47).contains(&sent(&bb[1])), "{}", sent(&bb[1]));
    // Each second turn is its first plus the live reply plus its own.
    assert_eq!(a[1]["input_tokens"].as_u64(), Some(2 + 4 + 2));
    assert_eq!(bb[1]["input_tokens"].as_u64(), Some(24 + 4 + 5));
    assert_eq!(sim_metric(&s, "vllm:prefix_cache_hits_total"), 16.0);
}

#[test]
fn a_cancelled_turn_ends_its_session() {
    let s = exact_sim("5ms", "5ms");
    let dir = testkit::temp_dir("loadgen-session-cancel");
    let text = "{\"session_id\":1,\"text_input\":\"a b c\"}\n{\"session_id\":1,\"text_input\":\"d\"}\n\
                {\"session_id\":2,\"text_input\":\"e f g\"}\n{\"session_id\":2,\"text_input\":\"h\"}\n";
    let file = dir.join("s.jsonl");
    std::fs::write(&file, text).unwrap();
    let r = load(
        &s.base_url(),
        &[
            "--sessions",
            file.to_str().unwrap(),
            "--concurrency",
            "2",
            "--max-tokens",
            "64",
            // Every turn runs its 64 tokens (about 0.3 s): none ends at a
            // random end of text before its cancel at 50 ms (CI saw one).
            "--ignore-eos",
            "--cancel-rate",
            "1",
            "--cancel-after",
            "50ms",
            "--quiet",
        ],
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    assert_eq!(b["counts"]["cancelled"], 2, "{b}");
    let st = &b["load"]["workload"]["sessions"];
    assert_eq!(
        (st["sessions_cut"].as_u64(), st["turns_not_sent"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(st["sessions_completed"], 0);
}

/// Each bad file: exit 3, one error line naming the file and the line, no
/// stdout, and no connection made to the server.
#[test]
fn bad_sessions_are_one_line_errors_and_nothing_is_sent() {
    let dir = testkit::temp_dir("loadgen-bad-sessions");
    let cases = [
        (
            "{\"messages\":[{\"role\":\"system\",\"content\":\"s\"}]}\n",
            "line 1: no user turn",
        ),
        (
            "{\"session_id\":1,\"timestamp\":500,\"text_input\":\"a\"}\n\
             {\"session_id\":1,\"timestamp\":400,\"text_input\":\"b\"}\n",
            "line 2: turns out of order: timestamp 400 ms goes back from line 1's 500 ms",
        ),
        (
            "{\"session_id\":1,\"text_input\":\"a\"}\n{\"session_id\":1,\"delay\":-5,\"text_input\":\"b\"}\n",
            "line 2: \"delay\" -5 ms is negative",
        ),
        (
            "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n\
             {\"messages\":[{\"role\":\"assistant\",\"content\":\"b\"}]}\n",
            "line 2: turns out of order: message 1 is assistant after system",
        ),
    ];
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = dir.join(format!("bad{i}.jsonl"));
        std::fs::write(&p, text).unwrap();
        let r = load(&url, &["--sessions", p.to_str().unwrap()]);
        r.expect_one_error(3, want);
        assert_contains(&r.stderr(), &format!("--sessions {}: line", p.display()));
        assert_eq!(r.stdout(), "");
    }
    // A session trace given to --trace would lose its histories: refused.
    let p = dir.join("bad1.jsonl");
    let r = load(&url, &["--trace", p.to_str().unwrap()]);
    r.expect_one_error(
        3,
        "line 1: has a \"session_id\": replay multi-turn sessions with --sessions FILE",
    );
    let r = load(
        &url,
        &["--sessions", p.to_str().unwrap(), "--think-time", "-1s"],
    );
    r.expect_code(2);
    l.set_nonblocking(true).unwrap();
    assert!(l.accept().is_err(), "a bad file must send nothing");
}
