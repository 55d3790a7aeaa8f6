//! The HTTP API over real sockets: SSE framing, usage, speculative stats,
//! info and metrics endpoints, tokenizer, EOS, queueing and determinism.

mod common;

use std::time::Duration;

use common::{completion, eagle_with, post, post_json, sim, stream};
use serde_json::{json, Value};
use testkit::assert_contains;
use testkit::http_get;

fn chat(max_tokens: u64) -> Value {
    json!({
        "model": "sim", "messages": [{"role": "user", "content": "hello there friend"}],
        "max_tokens": max_tokens, "ignore_eos": true, "temperature": 0, "stream": true,
        "stream_options": {"include_usage": true},
    })
}

#[test]
fn chat_stream_is_framed_sse_with_usage_and_done() {
    let sim = sim(&eagle_with("3", &["--seed", "1"]));
    let s = stream(sim.port, "/v1/chat/completions", &chat(40));
    assert_eq!(s.status, 200);
    assert!(s.clean_end && s.done(), "{:?}", s.lines);
    // Every event is `data: ...` followed by one blank line.
    for pair in s.lines.chunks(2) {
        assert!(pair[0].starts_with("data: "), "{pair:?}");
        assert_eq!(pair.get(1).map(String::as_str), Some(""), "{pair:?}");
    }
    let chunks: Vec<Value> = s.events[..s.events.len() - 1]
        .iter()
        .map(|e| e.json().expect("JSON chunk"))
        .collect();
    assert!(chunks.iter().all(|c| c["simulated"] == true));
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    assert_eq!(
        chunks[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    let usage = s.usage_event().expect("usage chunk");
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["prompt_tokens"], 3);
    assert_eq!(usage["usage"]["completion_tokens"], 40);
    assert_eq!(usage["usage"]["total_tokens"], 43);
    // Generated text re-tokenizes to exactly the reported count.
    let (_, tok) = post_json(sim.port, "/tokenize", &json!({"content": s.text()}));
    assert_eq!(tok["count"], 40);
    let finish: Vec<&Value> = chunks
        .iter()
        .filter(|c| c["choices"][0]["finish_reason"].is_string())
        .collect();
    assert_eq!(finish.len(), 1);
    assert_eq!(finish[0]["choices"][0]["finish_reason"], "length");
    assert_eq!(finish[0]["timings"], usage["timings"]);
}

#[test]
fn spec_stats_match_chunks_and_metrics() {
    // vLLM's counters: the personality that exports them.
    let sim = sim(&[
        "--personality",
        "vllm",
        "--speculative-config",
        r#"{"method": "eagle", "num_speculative_tokens": 4}"#,
        "--seed",
        "2",
    ]);
    let s = stream(sim.port, "/v1/completions", &completion(100, true));
    let content: Vec<Value> = s
        .events
        .iter()
        .filter_map(|e| e.json())
        .filter(|v| v["choices"][0]["text"].is_string())
        .collect();
    let t = &s.usage_event().unwrap()["timings"];
    let n = content.len() as u64;
    // Each chunk is one step: 1 + accepted tokens; the first is prefill.
    assert_eq!(t["predicted_n"], 100);
    assert_eq!(t["draft_n"].as_u64().unwrap(), 4 * (n - 1));
    assert_eq!(t["draft_n_accepted"].as_u64().unwrap(), 100 - n);
    assert!(
        n < 50,
        "spec decoding should put several tokens in a chunk ({n} chunks)"
    );
    let (_, metrics) = http_get(sim.port, "/metrics").unwrap();
    let metric = |name: &str| -> u64 {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(name) && l.contains("model_name"))
            .unwrap_or_else(|| panic!("{name} missing:\n{metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert_eq!(
        metric("vllm:spec_decode_num_draft_tokens_total"),
        t["draft_n"].as_u64().unwrap()
    );
    assert_eq!(
        metric("vllm:spec_decode_num_accepted_tokens_total"),
        t["draft_n_accepted"].as_u64().unwrap()
    );
    assert_eq!(metric("vllm:spec_decode_num_drafts_total"), n - 1);
    assert_eq!(metric("vllm:generation_tokens_total"), 100);
    assert!(metrics.contains("vllm:spec_decode_num_accepted_tokens_per_pos_total{"));
}

#[test]
fn continuous_usage_puts_usage_in_every_chunk() {
    let sim = sim(&eagle_with("2", &["--zero-delay"]));
    let mut body = completion(30, true);
    body["stream_options"]["continuous_usage_stats"] = json!(true);
    let s = stream(sim.port, "/v1/completions", &body);
    let mut last = 0;
    for v in s.events.iter().filter_map(|e| e.json()) {
        let n = v["usage"]["completion_tokens"]
            .as_u64()
            .expect("usage in chunk");
        assert!(n >= last);
        last = n;
    }
    assert_eq!(last, 30);
}

#[test]
fn non_streaming_completion_and_chat() {
    let sim = sim(&["--seed", "3"]);
    let (code, v) = post_json(sim.port, "/v1/completions", &completion(12, false));
    assert_eq!(code, 200);
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["usage"]["completion_tokens"], 12);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["timings"]["draft_n"], 0);
    assert_eq!(v["simulated"], true);
    let mut body = chat(5);
    body["stream"] = json!(false);
    let (code, v) = post_json(sim.port, "/v1/chat/completions", &body);
    assert_eq!(code, 200);
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(v["usage"]["completion_tokens"], 5);
}

#[test]
fn info_models_metrics_and_labels() {
    let sim = sim(&eagle_with(
        "3",
        &["--model-name", "m-x", "--enable-metrics"],
    ));
    for path in ["/server_info", "/get_server_info"] {
        let (code, body) = http_get(sim.port, path).unwrap();
        assert_eq!(code, 200);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["speculative_num_steps"], 3);
        assert_eq!(v["served_model_name"], "m-x");
        assert_eq!(v["simulated"], true);
    }
    let (_, body) = http_get(sim.port, "/v1/models").unwrap();
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["data"][0]["id"], "m-x");
    assert_eq!(v["data"][0]["owned_by"], "llm-sim (simulated)");
    let (_, m) = http_get(sim.port, "/metrics").unwrap();
    assert!(m.contains("SIMULATED"));
    assert_contains(&m, "sglang:num_running_reqs{");
    assert_contains(&m, "model_name=\"m-x\"");
    let (code, body) = http_get(sim.port, "/health_generate").unwrap();
    assert_eq!((code, body.contains("\"simulated\":true")), (200, true));
    let (code, sim_header, body) = post(sim.port, "/nowhere", &json!({}));
    assert_eq!((code, sim_header.as_deref()), (404, Some("llm-sim")));
    assert!(body.contains("\"simulated\":true"));
}

#[test]
fn bad_requests_get_400_json() {
    let sim = sim(&[]);
    let url = format!("{}/v1/completions", sim.base_url());
    let err = ureq::post(&url).send_string("{not json").unwrap_err();
    let ureq::Error::Status(400, resp) = err else {
        panic!("{err}")
    };
    assert_eq!(resp.header("x-simulated"), Some("llm-sim"));
    assert!(resp.into_string().unwrap().contains("not JSON"));
    let (code, v) = post_json(
        sim.port,
        "/v1/completions",
        &json!({"prompt": "a", "max_tokens": 5000}),
    );
    assert_eq!(code, 400);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("maximum context length"));
}

#[test]
fn tokenize_counts_words() {
    let sim = sim(&[]);
    let (code, v) = post_json(sim.port, "/tokenize", &json!({"content": "a b  c\nd"}));
    assert_eq!((code, v["count"].clone()), (200, json!(4)));
    assert_eq!(v["tokens"].as_array().unwrap().len(), 4);
    let (_, v) = post_json(sim.port, "/tokenize", &json!({"prompt": "x y"}));
    assert_eq!(v["count"], 2);
    assert_eq!(post_json(sim.port, "/tokenize", &json!({})).0, 400);
}

#[test]
fn eos_ends_early_unless_ignore_eos() {
    let sim = sim(&["--eos-prob", "1"]);
    let mut body = completion(50, false);
    body["ignore_eos"] = json!(false);
    let (_, v) = post_json(sim.port, "/v1/completions", &body);
    assert_eq!(v["usage"]["completion_tokens"], 2);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    body["ignore_eos"] = json!(true);
    let (_, v) = post_json(sim.port, "/v1/completions", &body);
    assert_eq!(v["usage"]["completion_tokens"], 50);
}

#[test]
fn temperature_lowers_acceptance() {
    let sim = sim(&eagle_with("4", &["--seed", "5", "--zero-delay"]));
    let accepted = |t: f64| {
        let mut body = completion(2000, false);
        body["temperature"] = json!(t);
        body["max_tokens"] = json!(1000);
        let (_, v) = post_json(sim.port, "/v1/completions", &body);
        let t = &v["timings"];
        t["draft_n_accepted"].as_f64().unwrap() / t["draft_n"].as_f64().unwrap()
    };
    let (cold, hot) = (accepted(0.0), accepted(1.0));
    assert!(
        cold > 0.7 && hot < 0.5,
        "acceptance: t=0 {cold:.2}, t=1 {hot:.2}"
    );
}

#[test]
fn same_seed_same_answers() {
    let answers = |seed: &str| -> Vec<Value> {
        let sim = sim(&eagle_with("4", &["--seed", seed, "--zero-delay"]));
        (0..3)
            .map(|_| {
                let (_, v) = post_json(sim.port, "/v1/completions", &completion(60, false));
                json!([
                    v["choices"][0]["text"],
                    v["timings"]["draft_n"],
                    v["timings"]["draft_n_accepted"]
                ])
            })
            .collect()
    };
    let a = answers("11");
    assert_eq!(a, answers("11"));
    assert_ne!(a, answers("12"));
}

#[test]
fn requests_beyond_max_running_queue() {
    let sim = sim(&testkit::words(
        "--personality vllm --max-running-requests 1 --step-time 2ms",
    ));
    let port = sim.port;
    let first = std::thread::spawn(move || stream(port, "/v1/completions", &completion(100, true)));
    std::thread::sleep(Duration::from_millis(30));
    let (_, m) = http_get(port, "/metrics").unwrap();
    let second = stream(port, "/v1/completions", &completion(5, true));
    let first = first.join().unwrap();
    let first_end = first.events.last().unwrap().at;
    // The second waited for the first to finish before its first token.
    let ttft = second.usage_event().unwrap()["timings"]["prompt_ms"]
        .as_f64()
        .unwrap();
    assert!(
        ttft > 100.0,
        "second request's TTFT {ttft} ms; first ran {first_end:?}"
    );
    assert_contains(
        &m,
        "vllm:num_requests_running{model_name=\"sim-llama-8b\"} 1",
    );
}
