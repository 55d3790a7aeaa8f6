//! `--endpoint generate` against a stub shaped like SGLang: `/generate`
//! streams copied from upstream (tests/fixtures/sglang_generate_stream_*),
//! `/server_info` with the resolved args (max_running_requests 48), and
//! the OpenAI `/v1/completions` stream that carries no `meta_info`.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// What the stub saw and serves.
#[derive(Default)]
struct Stub {
    generate_calls: AtomicUsize,
    last_body: Mutex<Option<Value>>,
    /// `/metrics` text; None: 404 (SGLang without --enable-metrics).
    metrics: Option<String>,
}

/// An SGLang-shaped server on 127.0.0.1 (one thread per connection,
/// `Connection: close`). `/generate` alternates stream a and stream b.
fn sglang_stub(metrics: Option<&str>) -> (String, Arc<Stub>) {
    let stub = Arc::new(Stub {
        metrics: metrics.map(str::to_string),
        ..Stub::default()
    });
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let st = stub.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(s) = conn else { continue };
            let st = st.clone();
            std::thread::spawn(move || serve_one(s, &st));
        }
    });
    (url, stub)
}

fn read_request(s: &std::net::TcpStream) -> Option<(String, String)> {
    let mut r = BufReader::new(s.try_clone().ok()?);
    let mut first = String::new();
    r.read_line(&mut first).ok()?;
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok()?;
    let path = first.split_whitespace().nth(1)?.to_string();
    Some((path, String::from_utf8_lossy(&body).into_owned()))
}

fn serve_one(mut s: std::net::TcpStream, st: &Stub) {
    let Some((path, body)) = read_request(&s) else {
        return;
    };
    let reply = |s: &mut std::net::TcpStream, status: &str, ctype: &str, body: &str| {
        let _ = write!(
            s,
            "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    };
    match path.as_str() {
        "/v1/models" => reply(
            &mut s,
            "200 OK",
            "application/json",
            r#"{"object":"list","data":[{"id":"Qwen/Qwen3-8B","object":"model","owned_by":"sglang"}]}"#,
        ),
        "/server_info" => reply(
            &mut s,
            "200 OK",
            "application/json",
            &fixture("sglang_server_info.json"),
        ),
        "/metrics" => match &st.metrics {
            Some(m) => reply(&mut s, "200 OK", "text/plain", m),
            None => reply(&mut s, "404 Not Found", "application/json", "{}"),
        },
        "/generate" => {
            *st.last_body.lock().unwrap() = serde_json::from_str(&body).ok();
            let n = st.generate_calls.fetch_add(1, Ordering::SeqCst);
            let name = if n.is_multiple_of(2) { "a" } else { "b" };
            let text = fixture(&format!("sglang_generate_stream_{name}.txt"));
            if body.contains("\"stream\":false") {
                // Not streamed: http_server.py returns the final output
                // object itself, the last data line of the stream.
                let last = text.lines().rfind(|l| l.starts_with("data: {"));
                let last = last.unwrap().trim_start_matches("data: ");
                reply(&mut s, "200 OK", "application/json", last);
            } else {
                stream(&mut s, &text);
            }
        }
        "/v1/completions" => stream(&mut s, &completions_stream()),
        _ => reply(&mut s, "404 Not Found", "application/json", "{}"),
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
}

/// Send an SSE body event by event, a little apart (TTFT and ITL > 0).
fn stream(s: &mut std::net::TcpStream, text: &str) {
    let _ = s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
    );
    for ev in text.split_inclusive("\n\n") {
        std::thread::sleep(Duration::from_millis(2));
        if s.write_all(ev.as_bytes()).is_err() {
            return;
        }
        let _ = s.flush();
    }
}

/// SGLang's OpenAI completions stream (serving_completions.py): no
/// meta_info in any chunk; usage in a separate `choices: []` chunk.
fn completions_stream() -> String {
    let chunk = |text: &str, fin: &str| {
        format!(
            "data: {{\"id\":\"c1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[{{\"index\":0,\"text\":\"{text}\",\"logprobs\":null,\"finish_reason\":{fin},\"matched_stop\":null}}],\"usage\":null}}\n\n"
        )
    };
    [
        chunk(" a", "null"),
        chunk(" b c", "null"),
        chunk(" d", "\"length\""),
        "data: {\"id\":\"c1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"Qwen/Qwen3-8B\",\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"total_tokens\":13,\"completion_tokens\":4}}\n\n".into(),
        "data: [DONE]\n\n".into(),
    ]
    .concat()
}

fn spec_of(b: &Value) -> &Value {
    &b["spec"]
}

#[test]
fn generate_endpoint_gives_per_request_acceptance_and_exact_token_totals() {
    let (url, stub) = sglang_stub(None);
    let (r, b) = benches_at(&url, "--endpoint generate -c 2 -n 4 --warmup 0 --max-tokens 7 --temperature 0 --ignore-eos --no-tokenize", 1);
    check_contract(&r);
    let b = &b[0];
    assert_eq!(b["load"]["endpoint"], "/generate");
    assert_eq!(b["counts"]["completed"], 4, "{b}");
    // Two of each stream: 7 + 5 output tokens, 9 prompt tokens, each.
    assert_eq!(b["counts"]["output_tokens"], 24, "{b}");
    assert_eq!(b["counts"]["input_tokens"], 36, "{b}");
    let s = spec_of(b);
    assert_eq!(s["source"], "per_request", "{b}");
    // SGLang's formula over the level: sum(completion_tokens) /
    // sum(spec_verify_ct) = 24 / 14, not the mean of 7/3 and 5/4.
    assert_eq!(s["accept_length"], 1.714, "{b}");
    assert_eq!(s["drafts"], 14);
    assert_eq!(s["accepted_tokens"], 6);
    assert_eq!(s["draft_tokens"], 42);
    assert_eq!(s["acceptance_rate"], 0.143);
    assert!(s["origin"].as_str().unwrap().contains("spec_verify_ct"));
    // Cumulative text was read as deltas: every chunk counted once, and
    // the running completion_tokens gave each chunk's tokens.
    assert_eq!(b["itl_method"], "usage_per_chunk", "{b}");
    // 4 + 5 chunks per pair of requests, 12 tokens: 24 / 18.
    assert_eq!(b["tokens_per_chunk"], 1.333, "{b}");
    assert!(f(&b["ttft_ms"]["p50"]) > 0.0);
    assert!(f(&b["itl_ms"]["p50"]) > 0.0);
    assert_eq!(b["server"]["max_running_requests"], 48);
    let body = stub.last_body.lock().unwrap().clone().unwrap();
    assert_eq!(body["stream"], true);
    assert_eq!(body["sampling_params"]["max_new_tokens"], 7);
    assert_eq!(body["sampling_params"]["ignore_eos"], true);
    assert_eq!(body["sampling_params"]["temperature"], 0.0);
    assert!(body["text"].is_string());
    assert_eq!(stub.generate_calls.load(Ordering::SeqCst), 4);
    assert!(!r.stderr().contains("lifetime"), "{}", r.stderr());
}

#[test]
fn openai_stream_on_sglang_says_its_acceptance_is_a_lifetime_average() {
    let (url, _stub) = sglang_stub(None);
    let (r, b) = benches_at(&url, "-c 1 -n 2 --warmup 0 --max-tokens 4 --no-tokenize", 1);
    check_contract(&r);
    let s = spec_of(&b[0]);
    assert_eq!(s["source"], "lifetime_average", "{}", b[0]);
    assert_eq!(s["accept_length"], 2.84);
    assert!(s["origin"]
        .as_str()
        .unwrap()
        .contains("avg_spec_accept_length"));
    assert!(
        r.stderr().contains("lifetime average") && r.stderr().contains("--endpoint generate"),
        "{}",
        r.stderr()
    );
}

#[test]
fn sglang_metrics_gauge_is_recorded_as_a_gauge() {
    let metrics = "# TYPE sglang:spec_accept_length gauge\n\
        sglang:spec_accept_length{model_name=\"Qwen/Qwen3-8B\"} 3.1\n\
        sglang:generation_tokens_total{model_name=\"Qwen/Qwen3-8B\"} 80\n";
    let (url, _stub) = sglang_stub(Some(metrics));
    let (r, b) = benches_at(&url, "-c 1 -n 2 --warmup 0 --max-tokens 4 --no-tokenize", 1);
    let s = spec_of(&b[0]);
    assert_eq!(s["source"], "gauge", "{}", b[0]);
    assert_eq!(s["accept_length"], 3.1);
    assert!(r.stderr().contains("gauge"), "{}", r.stderr());
}

#[test]
fn concurrency_above_max_running_requests_warns_at_that_level_only() {
    let (url, _stub) = sglang_stub(None);
    let (r, b) = benches_at(
        &url,
        "--endpoint generate -c 1,64 -n 64 --warmup 0 --max-tokens 7 --no-tokenize",
        2,
    );
    let want = "concurrency 64 exceeds the server's max_running_requests 48: 16 requests \
                queue in the server; raise --max-running-requests or expect queueing in TTFT";
    let err = r.stderr();
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(want)).collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(lines[0].starts_with("loadgen: warning: "), "{err}");
    assert!(!b[0]["warnings"]
        .to_string()
        .contains("max_running_requests"));
    assert!(b[1]["warnings"].to_string().contains(want), "{}", b[1]);
    assert_eq!(b[1]["server"]["max_running_requests"], 48);
}

#[test]
fn generate_without_stream_reads_meta_info_from_the_whole_response() {
    let (url, stub) = sglang_stub(None);
    let (_, b) = benches_at(
        &url,
        "--endpoint generate --no-stream -c 2 -n 4 --warmup 0 --max-tokens 7 --no-tokenize",
        1,
    );
    assert_eq!(
        stub.last_body.lock().unwrap().as_ref().unwrap()["stream"],
        false
    );
    assert_eq!(b[0]["counts"]["output_tokens"], 24, "{}", b[0]);
    assert_eq!(b[0]["counts"]["usage_missing"], 0);
    assert_eq!(b[0]["spec"]["source"], "per_request");
    assert_eq!(b[0]["spec"]["accept_length"], 1.714);
}

#[test]
fn the_cap_comes_from_the_ready_record_when_server_info_is_not_read() {
    // --no-scrape: no /server_info call; wait-ready's record carries the
    // server's args (max_running_requests resolved to 48).
    let (url, _stub) = sglang_stub(None);
    let up = format!(
        r#"{{"type":"ready","schema":1,"config":{{"speculative-num-steps":"3"}},"provenance":{{"tool":"wait-ready","version":"0.1.0","started_at":"2026-11-30T05:00:00.000Z","finished_at":"2026-11-30T05:00:01.000Z"}},"outcome":"ready","reason":"ready","targets":[],"elapsed_s":1.0,"attempts":3,"server":{{"kind":"sglang","base_url":"{url}","args":{{"max_running_requests":48,"speculative_algorithm":"EAGLE"}}}}}}"#
    );
    let r = run(
        loadgen(&words(
            "--endpoint generate -c 50 -n 50 --warmup 0 --max-tokens 7 --no-tokenize --no-scrape",
        )),
        &up,
    );
    let b = benches(&r);
    assert_eq!(b.len(), 1, "{}", r.stderr());
    assert_eq!(b[0]["server"]["max_running_requests"], 48);
    assert!(
        r.stderr()
            .contains("concurrency 50 exceeds the server's max_running_requests 48: 2 requests"),
        "{}",
        r.stderr()
    );
    // meta_info needs no scrape: the level's own acceptance is still there.
    assert_eq!(b[0]["spec"]["source"], "per_request");
}
