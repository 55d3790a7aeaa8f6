//! The recorded real-server fixtures (tests/fixtures/real/, written by
//! scripts/record-real.py) are whole, carry no API key, and still show the
//! behaviours llm-sim's personalities are checked against. No server runs.

use std::path::PathBuf;

use serde_json::Value;

fn fixture(rel: &str) -> Value {
    let p: PathBuf = testkit::repo_root().join("tests/fixtures/real").join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The first `t_s` at which `endpoint` answered `status`.
fn first(rec: &Value, endpoint: &str, status: u64) -> Option<f64> {
    rec["timeline"].as_array()?.iter().find_map(|e| {
        (e["endpoint"] == endpoint && e["status"] == status).then(|| e["t_s"].as_f64().unwrap())
    })
}

/// A streamed transcript ends with `[DONE]`, after a usage-only chunk.
fn check_sse(t: &Value) {
    assert_eq!(t["status"], 200);
    let lines: Vec<&str> = t["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["line"].as_str().unwrap())
        .collect();
    assert_eq!(lines.last(), Some(&"data: [DONE]"), "{lines:?}");
    let usage: Value = serde_json::from_str(&lines[lines.len() - 2][6..]).unwrap();
    assert_eq!(usage["choices"], serde_json::json!([]), "{usage}");
    assert_eq!(usage["usage"]["completion_tokens"], 16, "{usage}");
}

#[test]
fn vllm_fixture_port_refused_until_every_endpoint_answers() {
    let r = fixture("vllm/serve-spec-k2.json");
    assert_eq!(r["version"], "0.32.0");
    let ready = first(&r, "/health", 200).expect("/health 200");
    assert!(first(&r, "/health", 0).unwrap() < ready, "refused first");
    // No 503 phase: the port opens when the engine can serve.
    assert_eq!(first(&r, "/health", 503), None);
    for ep in ["/v1/models", "/version", "/metrics"] {
        let t = first(&r, ep, 200).unwrap_or_else(|| panic!("{ep} 200"));
        assert!((t - ready).abs() < 2.0, "{ep} at {t}, /health at {ready}");
    }
    // No /server_info without VLLM_SERVER_DEV_MODE, no /health_generate.
    assert!(first(&r, "/server_info", 404).is_some());
    assert!(first(&r, "/health_generate", 404).is_some());
    let s = &r["served"];
    check_sse(&s["completion_sse"]);
    check_sse(&s["chat_sse"]);
    assert_eq!(s["/version"]["body"]["version"], "0.32.0");
    let m = s["/metrics"]["body"].as_str().unwrap();
    for c in ["drafts", "draft_tokens", "accepted_tokens"] {
        assert!(
            m.contains(&format!("vllm:spec_decode_num_{c}_total{{")),
            "{c}"
        );
    }
    assert_eq!(r["sigterm_exit"]["code"], 0);
}

#[test]
fn sglang_fixture_models_before_health_and_no_key_anywhere() {
    let r = fixture("sglang/serve-api-key.json");
    let text = serde_json::to_string(&r).unwrap();
    assert!(
        !text.contains("sk-sweepkit-fixture-key"),
        "API key in the fixture"
    );
    assert_eq!(r["version"], "0.5.23");
    // Port refused, then /v1/models (with the key) answers while /health
    // still says 503; /health_generate turns 200 after /health.
    let models = first(&r, "/v1/models +key", 200).unwrap();
    let h503 = first(&r, "/health", 503).unwrap();
    let h200 = first(&r, "/health", 200).unwrap();
    assert!(first(&r, "/health", 0).unwrap() < h503);
    assert!(models < h200 && h503 < h200, "{models} {h503} {h200}");
    assert!(first(&r, "/health_generate", 200).unwrap() >= h200);
    // The key guards the API, not the health checks or /metrics.
    assert!(first(&r, "/v1/models", 401).is_some());
    assert!(first(&r, "/server_info", 401).is_some());
    assert!(first(&r, "/metrics", 200).is_some());
    let s = &r["served"];
    check_sse(&s["completion_sse"]);
    check_sse(&s["chat_sse"]);
    let info = &s["/server_info"]["body"];
    assert_eq!(info["api_key"], "<redacted:api-key>");
    assert_eq!(info["internal_states"][0]["api_key"], "<redacted:api-key>");
    let m = s["/metrics"]["body"].as_str().unwrap();
    assert!(m.contains("sglang:generation_tokens_total{"));
}

#[test]
fn sglang_fixture_steps_without_an_algorithm_serve_with_the_steps_reported() {
    let r = fixture("sglang/serve-steps-no-algorithm.json");
    assert_eq!(r["version"], "0.5.23");
    assert!(
        r["ready_s"].as_f64().is_some(),
        "it served: no start-up crash"
    );
    let s = &r["served"];
    check_sse(&s["completion_sse"]);
    check_sse(&s["chat_sse"]);
    // Speculation off, the flag's value kept in the reported args.
    let info = &s["/server_info"]["body"];
    for at in [info, &info["internal_states"][0]] {
        assert_eq!(at["speculative_num_steps"], 3, "{at}");
        assert_eq!(at["speculative_algorithm"], Value::Null, "{at}");
        assert_eq!(at["speculative_eagle_topk"], Value::Null, "{at}");
        assert_eq!(at["speculative_num_draft_tokens"], Value::Null, "{at}");
    }
    // No API key was set: nothing to redact, and none reported.
    assert_eq!(info["api_key"], Value::Null);
    let m = s["/metrics"]["body"].as_str().unwrap();
    assert!(m.contains("sglang:generation_tokens_total{"));
}
