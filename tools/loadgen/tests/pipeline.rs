//! Upstream records, bad input, and stream edge cases from a scripted
//! server (an empty role chunk, missing usage, no [DONE]).

mod common;
use common::*;
use std::time::Duration;
use testkit::{assert_contains, assert_lacks};

fn ready_record(url: &str) -> String {
    format!(
        r#"{{"type":"ready","schema":1,"config":{{"speculative-num-steps":"3"}},"provenance":{{"tool":"wait-ready","version":"0.1.0","started_at":"2026-11-30T05:00:00.000Z","finished_at":"2026-11-30T05:00:01.000Z"}},"outcome":"ready","reason":"ready","targets":[],"elapsed_s":1.0,"attempts":3,"server":{{"kind":"llm-sim","base_url":"{url}","simulated":true}}}}"#
    )
}

#[test]
fn ready_record_gives_config_url_and_upstream() {
    let s = sim(&["--zero-delay"]);
    let up = ready_record(&s.base_url());
    let r = run(
        loadgen(&["-n", "3", "--max-tokens", "4"]),
        &format!("{up}\n"),
    );
    r.expect_code(0);
    check_contract(&r);
    let b = &benches(&r)[0];
    assert_eq!(b["config"]["speculative-num-steps"], "3");
    assert_eq!(b["upstream"]["type"], "ready");
    assert_eq!(b["server"]["base_url"], s.base_url());
    assert_eq!(b["provenance"]["tool"], "loadgen");
}

#[test]
fn tunnelled_loopback_url_is_not_benchmarked_on_this_machine() {
    // wait-ready probed 127.0.0.1 on the far side of an SSH tunnel; here a
    // different server listens on that address. loadgen must not load it.
    let local = sim(&["--zero-delay"]);
    let up = ready_record(&local.base_url()).replace(
        r#""outcome":"ready""#,
        r#""via":"ssh root@gpu1","outcome":"ready""#,
    );
    let r = run(
        loadgen(&["-n", "3", "--max-tokens", "4"]),
        &format!("{up}\n"),
    );
    r.expect_code(2);
    assert!(r.stdout().is_empty(), "{}", r.stdout());
    assert!(
        r.stderr()
            .contains("probed through a tunnel (ssh root@gpu1)")
            && r.stderr().contains("--url"),
        "{}",
        r.stderr()
    );
    // An explicit --url that reaches the server from here is used.
    let r = run(
        loadgen(&["--url", &local.base_url(), "-n", "3", "--max-tokens", "4"]),
        &format!("{up}\n"),
    );
    r.expect_code(0);
    assert_eq!(benches(&r)[0]["config"]["speculative-num-steps"], "3");
}

#[test]
fn failure_record_is_passed_through_and_no_load_is_sent() {
    // Nothing listens on this port: had loadgen sent load, it would fail.
    let url = format!("http://127.0.0.1:{}", testkit::free_port());
    let fail = r#"{"type":"failure","schema":1,"config":{"speculative-num-steps":"9"},"provenance":{"tool":"wait-ready","version":"0.1.0","started_at":"2026-11-30T05:00:00.000Z","finished_at":"2026-11-30T05:00:01.000Z"},"stage":"ready","kind":"oom","reason":"CUDA out of memory"}"#;
    let r = run(loadgen(&[&url]), &format!("{fail}\n"));
    r.expect_code(4);
    assert_eq!(r.stdout().trim(), fail, "passed through unchanged");
}

/// Issue 21: wait-ready (or svc-swap) killed before its record, loadgen
/// benched the server as `config: {}`. Run for a config, it sends nothing
/// and records that config's failure; standalone it still measures.
#[test]
fn run_for_a_config_with_no_upstream_record_sends_no_load() {
    // Nothing listens here: had loadgen sent load, it would be unreachable.
    let url = format!("http://127.0.0.1:{}", testkit::free_port());
    let args = [
        "--pipeline-config",
        "speculative-num-steps=3",
        "-n",
        "3",
        &url,
    ];
    let r = run(loadgen(&args), "");
    r.expect_code(4);
    let lines = r.json_lines();
    assert_eq!(lines.len(), 1, "{}", r.stdout());
    assert_eq!(lines[0]["type"], "failure");
    assert_eq!(lines[0]["kind"], "upstream_missing", "{}", lines[0]);
    assert_eq!(lines[0]["stage"], "ready");
    assert_eq!(lines[0]["config"]["speculative-num-steps"], "3");
    assert_contains(&r.stderr(), "no record from the wait-ready stage");
    // Standalone, with no --pipeline-config, it measures as before.
    let s = sim(&["--zero-delay"]);
    let r = run(
        loadgen(&["-n", "1", "--max-tokens", "4", &s.base_url()]),
        "",
    );
    r.expect_code(0);
}

#[test]
fn bad_input_is_one_error_line_with_a_code() {
    let s = sim(&["--zero-delay"]);
    let url = s.base_url();
    let cases: Vec<(Vec<&str>, &str, i32, &str)> = vec![
        (vec![&url], "{not json\n", 3, "<stdin>: line 1"),
        (
            vec![&url],
            "{\"type\":\"pizza\"}\n",
            3,
            "unknown record type",
        ),
        (
            vec![&url, "--extra-body", "[1]", "--no-upstream"],
            "",
            2,
            "--extra-body",
        ),
        (vec![&url, "--slo", "ttft", "--no-upstream"], "", 2, "--slo"),
        (
            vec!["https://example.invalid", "--no-upstream"],
            "",
            2,
            "only http://",
        ),
        (vec!["--no-upstream"], "", 2, "no server URL"),
        (vec![&url, "-c", "0", "--no-upstream"], "", 2, "0"),
    ];
    for (args, stdin, code, needle) in cases {
        let r = run(loadgen(&args), stdin);
        r.expect_code(code);
        assert!(r.stdout().is_empty(), "{args:?}: nothing on stdout");
        let err = r.stderr();
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_lacks(&err, "panicked");
    }
}

fn chunk(content: &str, finish: Option<&str>) -> String {
    let fin = finish.map_or("null".to_string(), |f| format!("\"{f}\""));
    format!(
        "data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{content}\"}},\"finish_reason\":{fin}}}]}}\n\n"
    )
}

#[test]
fn empty_role_chunk_is_not_ttft_and_missing_usage_is_flagged() {
    let ms = Duration::from_millis;
    let role = "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    let url = scripted_server(vec![
        (ms(0), role.to_string()),
        (ms(80), chunk("Hel", None)),
        (ms(20), chunk("lo", None)),
        (ms(20), chunk(" you", Some("length"))),
        (ms(0), "data: [DONE]\n\n".to_string()),
    ]);
    let r = load(
        &url,
        &words(
            "--model m --endpoint chat -n 2 --warmup 0 --max-tokens 3 --no-scrape --no-tokenize",
        ),
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    let ttft = f(&b["ttft_ms"]["p50"]);
    assert!(ttft >= 75.0, "TTFT clocked on the role chunk: {ttft}");
    assert_eq!(b["counts"]["usage_missing"], 2);
    assert_eq!(b["counts"]["output_tokens"], 6, "counted chunks");
    assert!(b["warnings"].to_string().contains("no usage"));
}

#[test]
fn stream_without_done_but_with_finish_reason_completes() {
    let ms = Duration::from_millis;
    let url = scripted_server(vec![
        (ms(0), chunk("a", None)),
        (ms(5), chunk("b", Some("stop"))),
    ]);
    let r = load(
        &url,
        &words("--model m -n 1 --warmup 0 --max-tokens 2 --no-scrape --no-tokenize"),
    );
    r.expect_code(0);
    // And one that just stops is a cut stream.
    let url = scripted_server(vec![(ms(0), chunk("a", None))]);
    let r = load(
        &url,
        &words("--model m -n 1 --warmup 0 --no-scrape --no-tokenize"),
    );
    r.expect_code(30);
    assert!(r.stdout().contains("cut_stream"), "{}", r.stdout());
}

#[test]
fn ignore_eos_not_honoured_is_flagged() {
    // vLLM issue 18687, llama.cpp PR 21203: a server that stops at EOS
    // although ignore_eos was asked gives short outputs.
    let ms = Duration::from_millis;
    let usage =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n";
    let url = scripted_server(vec![
        (ms(0), chunk("a", None)),
        (ms(2), chunk("b", Some("stop"))),
        (ms(0), usage.to_string()),
        (ms(0), "data: [DONE]\n\n".to_string()),
    ]);
    let r = load(
        &url,
        &words("--model m -n 2 --warmup 0 --max-tokens 8 --ignore-eos --no-scrape --no-tokenize"),
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    assert_eq!(b["counts"]["early_stops"], 2);
    assert!(
        b["warnings"].to_string().contains("ignore_eos"),
        "{}",
        b["warnings"]
    );
}

#[test]
fn stale_keepalive_connections_are_retried_not_failed() {
    // llama-server closes after a streamed response despite keep-alive;
    // vllm-rs and aiohttp clients lose requests to it.
    let ms = Duration::from_millis;
    let url = lying_keepalive_server(vec![
        (ms(0), chunk("a", None)),
        (ms(1), chunk("b", Some("length"))),
        (ms(0), "data: [DONE]\n\n".to_string()),
    ]);
    let r = load(
        &url,
        &words("--model m -n 12 --warmup 0 --max-tokens 2 --no-scrape --no-tokenize"),
    );
    r.expect_code(0);
    assert_eq!(benches(&r)[0]["counts"]["completed"], 12);
}
