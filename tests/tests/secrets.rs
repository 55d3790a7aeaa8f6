//! No secret in any record or message: a stub server shaped like SGLang's
//! (its `/server_info` reports `api_key`, `admin_api_key`,
//! `ssl_keyfile_password` and `hf_token` in clear, at the top level and in
//! `internal_states[0]`, as sgl-project/sglang
//! `python/sglang/srt/entrypoints/http_server.py` `get_server_info` does),
//! then wait-ready | loadgen | summarize over it, every output byte grepped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;

use serde_json::{json, Value};
use testkit::{cmd, run, Run};

const API_KEY: &str = "sk-stub-api-7f3a";
const SECRETS: [&str; 4] = [API_KEY, "adm-stub-9c1e", "pw-stub-4d2b", "hf_stubtoken5e6f"];

/// The shape of SGLang's `get_server_info`: `ServerArgs` fields at the top
/// level, scheduler info, `internal_states` per DP rank, `version`.
fn server_info() -> Value {
    let args = json!({
        "model_path": "stub/model", "tokenizer_path": "stub/model",
        "served_model_name": "stub", "host": "127.0.0.1", "tp_size": 1,
        "chunked_prefill_size": 8192, "max_running_requests": 48,
        "max_total_tokens": 32768, "speculative_num_steps": null,
        "api_key": SECRETS[0], "admin_api_key": SECRETS[1],
        "ssl_keyfile": null, "ssl_keyfile_password": SECRETS[2], "hf_token": SECRETS[3],
    });
    let mut v = args.clone();
    v["max_req_input_len"] = json!(32762);
    v["internal_states"] = json!([{
        "api_key": SECRETS[0], "admin_api_key": SECRETS[1],
        "avg_spec_accept_length": null, "last_gen_throughput": 10.0
    }]);
    v["version"] = json!("0.5.23");
    v
}

/// SGLang's stream: text chunks, a finish chunk with `usage: null`, a
/// `choices: []` chunk with usage, then `[DONE]`.
fn completion_stream() -> String {
    let mut s = String::new();
    let chunk = |choices: Value, usage: Value| {
        let c = json!({"id": "c1", "object": "text_completion", "created": 1,
            "model": "stub", "choices": choices, "usage": usage});
        format!("data: {c}\n\n")
    };
    for t in ["a", " b", " c"] {
        s += &chunk(
            json!([{"index": 0, "text": t, "finish_reason": null}]),
            Value::Null,
        );
    }
    s += &chunk(
        json!([{"index": 0, "text": " d", "finish_reason": "length"}]),
        Value::Null,
    );
    s += &chunk(
        json!([]),
        json!({"prompt_tokens": 8, "completion_tokens": 4, "total_tokens": 12}),
    );
    s + "data: [DONE]\n\n"
}

fn respond(s: &mut TcpStream, status: &str, ctype: &str, body: &str) {
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
}

/// One request: SGLang with `--api-key` answers 401 without the key on
/// everything but the health endpoints.
fn serve_one(mut s: TcpStream) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).is_err() {
        return;
    }
    let (mut len, mut authed) = (0usize, false);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        authed |= h.trim_end() == format!("Authorization: Bearer {API_KEY}")
            || h.trim_end() == format!("authorization: Bearer {API_KEY}");
    }
    let mut body = vec![0; len];
    let _ = r.read_exact(&mut body);
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let path = path.split('?').next().unwrap_or("/");
    if matches!(path, "/health" | "/health_generate") {
        return respond(&mut s, "200 OK", "text/plain", "");
    }
    if !authed {
        return respond(&mut s, "401 Unauthorized", "application/json", "{}");
    }
    match path {
        "/server_info" | "/get_server_info" => respond(
            &mut s,
            "200 OK",
            "application/json",
            &server_info().to_string(),
        ),
        "/v1/models" => {
            let m = json!({"object": "list", "data": [{"id": "stub", "object": "model",
                "owned_by": "sglang"}]});
            respond(&mut s, "200 OK", "application/json", &m.to_string())
        }
        "/v1/completions" => respond(&mut s, "200 OK", "text/event-stream", &completion_stream()),
        _ => respond(&mut s, "404 Not Found", "application/json", "{}"),
    }
}

fn stub_sglang() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve_one(s));
        }
    });
    port
}

/// Every byte a tool wrote, stdout and stderr.
fn all_output(runs: &[&Run]) -> String {
    runs.iter()
        .map(|r| format!("{}\n{}\n", r.stdout(), r.stderr()))
        .collect()
}

fn assert_no_secret(text: &str, secrets: &[&str]) {
    for s in secrets {
        assert!(!text.contains(s), "secret {s} leaked:\n{text}");
    }
}

fn with_key(mut c: Command, key: &str) -> Command {
    c.env("SWEEPKIT_API_KEY", key).env("OPENAI_API_KEY", key);
    c
}

/// wait-ready | loadgen | summarize (JSON, text, CSV) over `url`.
fn pipeline(url: &str, key: &str, ready_args: &[&str]) -> (Vec<Run>, Value) {
    let mut a = vec![url, "--timeout", "30s", "--no-stdin"];
    a.extend_from_slice(ready_args);
    let ready = run(with_key(cmd("wait-ready", &a), key), "");
    ready.expect_code(0);
    let rec = ready.json_lines().remove(0);
    let load = [
        "--url",
        url,
        "--concurrency",
        "1",
        "--requests",
        "2",
        "--max-tokens",
        "4",
    ];
    let bench = run(with_key(cmd("loadgen", &load), key), &ready.stdout());
    bench.expect_code(0);
    let mut runs = vec![ready, bench];
    for fmt in ["json", "text", "csv"] {
        let s = run(cmd("summarize", &["--format", fmt, "-"]), &runs[1].stdout());
        // The leak scan of its output means something only if it wrote
        // one (issue 46: a summarize that died before writing passed).
        s.expect_code(0);
        assert!(
            !s.stdout().trim().is_empty(),
            "summarize --format {fmt}: no output"
        );
        runs.push(s);
    }
    (runs, rec)
}

#[test]
fn sglang_shaped_server_secrets_never_reach_records_or_stderr() {
    let port = stub_sglang();
    let url = format!("http://127.0.0.1:{port}");
    let (runs, ready) = pipeline(
        &url,
        API_KEY,
        &[
            "--server",
            "sglang",
            "--expect-config",
            "max-running-requests=48",
            "-v",
        ],
    );
    // Not vacuous: the server's args were read (with the key) and kept.
    assert_eq!(ready["config_source"], "server_info", "{ready}");
    let args = &ready["server"]["args"];
    assert_eq!(args["api_key"], "<redacted>");
    assert_eq!(args["internal_states"][0]["admin_api_key"], "<redacted>");
    assert_eq!(args["ssl_keyfile_password"], "<redacted>");
    assert_eq!(args["hf_token"], "<redacted>");
    assert_eq!(
        args["max_total_tokens"], 32768,
        "token counts are not secrets"
    );
    assert_eq!(ready["server"]["kind"], "sglang");
    let bench = runs[1].json_lines().remove(0);
    assert_eq!(bench["server"]["args"]["api_key"], "<redacted>", "{bench}");
    assert_eq!(bench["counts"]["completed"], 2, "{bench}");
    let refs: Vec<&Run> = runs.iter().collect();
    assert_no_secret(&all_output(&refs), &SECRETS);
}

#[test]
fn a_crash_log_quoting_server_args_is_redacted() {
    let log_s = testkit::temp_file(
        "secrets-log",
        "server.log",
        &format!(
            "server_args=ServerArgs(model_path='m', api_key='{}', hf_token='{}')\n\
             Traceback (most recent call last):\nRuntimeError: boom\n",
            SECRETS[0], SECRETS[3]
        ),
    );
    let dead = format!("http://127.0.0.1:{}/health", testkit::free_port());
    let r = run(
        cmd(
            "wait-ready",
            &[
                &dead,
                "--no-stdin",
                "--log",
                &log_s,
                "--log-offset",
                "0",
                "--timeout",
                "20s",
            ],
        ),
        "",
    );
    r.expect_code(10);
    let rec = r.json_lines().remove(0);
    let tail = rec["log_tail"].to_string();
    assert!(tail.contains("api_key='<redacted>'"), "{tail}");
    assert_no_secret(&all_output(&[&r]), &SECRETS);
}

#[test]
fn llm_sim_with_api_key_leaks_nothing() {
    let key = "sk-sim-secret-2b8d";
    let sim = testkit::Sim::start_ready(&["--api-key", key]);
    let url = sim.base_url();
    let (runs, ready) = pipeline(&url, key, &["--server", "llm-sim"]);
    assert_eq!(ready["outcome"], "ready");
    let refs: Vec<&Run> = runs.iter().collect();
    assert_no_secret(&all_output(&refs), &[key]);
}
