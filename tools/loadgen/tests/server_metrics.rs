//! The server's own figures in each level's record, against llm-sim's KV
//! model (requests reserve prompt + max_tokens + N x
//! --speculative-kv-per-step and queue when that does not fit): the deeper
//! depth fills its KV cache and queues at c=16 where the shallower does
//! not, each figure names the metric it came from, the capacity is read
//! once, and a server without /metrics gets one line and no fields.

mod common;
use common::*;
use serde_json::Value;

/// KV per request at depth N: 32 prompt + 32 output + N x 256 tokens, so
/// 19000 tokens hold 16 requests at depth 4 (91%) and 14 at depth 5 (99%,
/// two waiting at c=16).
const KV: &[&str] = &[
    "--kv-capacity-tokens",
    "19000",
    "--speculative-kv-per-step",
    "256",
];

const LOAD: &str = "-c 16 --duration 2s --warmup 0 --input-tokens 32 --max-tokens 32 \
                    --ignore-eos --scrape-interval 100ms";

fn vllm_depth(k: u32) -> Sim {
    let spec = format!(r#"{{"method":"eagle","num_speculative_tokens":{k}}}"#);
    let mut a = vec!["--personality", "vllm", "--speculative-config", &spec];
    a.extend_from_slice(KV);
    sim(&a)
}

fn gauge(rec: &Value, name: &str) -> (f64, f64, String) {
    let g = &rec["server_metrics"][name];
    assert!(g.is_object(), "{name} in {}", rec["server_metrics"]);
    (
        g["mean"].as_f64().unwrap(),
        g["peak"].as_f64().unwrap(),
        g["source"].as_str().unwrap().to_string(),
    )
}

#[test]
fn the_deeper_depth_fills_its_kv_cache_and_queues_where_the_shallower_does_not() {
    let (s4, s5) = (vllm_depth(4), vllm_depth(5));
    let one = |s: &Sim| {
        let r = load_sim(s, LOAD);
        r.expect_code(0);
        check_contract(&r);
        let b = benches(&r);
        assert_eq!(b.len(), 1, "{}", r.stderr());
        b[0].clone()
    };
    let (r4, r5) = (one(&s4), one(&s5));
    let (_, kv5, src) = gauge(&r5, "kv_cache_usage_ratio");
    assert_eq!(src, "vllm:kv_cache_usage_perc");
    let (wait5, _, src) = gauge(&r5, "waiting_requests");
    assert_eq!(src, "vllm:num_requests_waiting");
    assert!(
        kv5 >= 0.95 && wait5 >= 0.5,
        "depth 5: {}",
        r5["server_metrics"]
    );
    let (_, kv4, _) = gauge(&r4, "kv_cache_usage_ratio");
    let (_, wait4, _) = gauge(&r4, "waiting_requests");
    assert!(
        kv4 < 0.95 && wait4 == 0.0,
        "depth 4: {}",
        r4["server_metrics"]
    );
    for r in [&r4, &r5] {
        let m = &r["server_metrics"];
        assert_eq!(m["gauge_window"], "steady", "{m}");
        assert_eq!(m["interval_s"], 0.1);
        assert!(m["scrapes"].as_u64().unwrap() >= 10, "{m}");
        // llm-sim never preempts (it reserves at admission): 0, published.
        assert_eq!(m["preemptions"]["increase"], 0.0, "{m}");
        assert_eq!(m["preemptions"]["source"], "vllm:num_preemptions_total");
        let drafted = m["spec_draft_tokens"]["increase"].as_f64().unwrap();
        assert_eq!(Some(drafted as u64), r["spec"]["draft_tokens"].as_u64());
        // The capacity, from vllm:cache_config_info.
        let l = &r["server"]["limits"];
        assert_eq!(l["kv_tokens"], 19000, "{l}");
        assert_eq!(l["block_size"], 1, "{l}");
        testkit::assert_contains(l["origin"].as_str().unwrap(), "vllm:cache_config_info");
    }
}

#[test]
fn sglang_gauges_name_their_sources_and_the_capacity_comes_from_server_info() {
    let s = sim(&[
        "--personality",
        "sglang",
        "--enable-metrics",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
    ]);
    let r = load_sim(
        &s,
        "-c 4 --duration 1s --warmup 0 --max-tokens 16 --scrape-interval 100ms",
    );
    r.expect_code(0);
    let b = benches(&r);
    let m = &b[0]["server_metrics"];
    for (name, source) in [
        ("kv_cache_usage_ratio", "sglang:token_usage"),
        ("running_requests", "sglang:num_running_reqs"),
        ("waiting_requests", "sglang:num_queue_reqs"),
        ("prefix_cache_hit_rate", "sglang:cache_hit_rate"),
        ("spec_accept_length", "sglang:spec_accept_length"),
    ] {
        assert_eq!(m[name]["source"], source, "{m}");
    }
    let (running, _, _) = gauge(&b[0], "running_requests");
    assert!(running > 2.0, "{m}");
    // SGLang has no preemption counter until it retracted a request, and
    // no vLLM counters: absent, not zero.
    for absent in ["preemptions", "spec_drafts", "prefix_cache_hit_tokens"] {
        assert!(m.get(absent).is_none(), "{absent} in {m}");
    }
    let l = &b[0]["server"]["limits"];
    assert_eq!(l["kv_tokens"], 36864, "{l}");
    assert_eq!(l["max_running_requests"], 48, "{l}");
    assert_eq!(
        l["origin"],
        "/server_info max_total_num_tokens, max_running_requests"
    );
}

#[test]
fn a_server_without_metrics_gets_one_line_and_no_fields() {
    // SGLang serves /metrics only with --enable-metrics.
    let s = sim(&["--personality", "sglang"]);
    let r = load_sim(&s, "-c 1,2 -n 4 --max-tokens 8 --scrape-interval 100ms");
    r.expect_code(0);
    let b = benches(&r);
    assert_eq!(b.len(), 2);
    for rec in &b {
        assert!(rec.get("server_metrics").is_none(), "{rec}");
    }
    let err = r.stderr();
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("/metrics")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    testkit::assert_contains(lines[0], "HTTP 404");
    testkit::assert_contains(lines[0], "--enable-metrics");
    // The capacity still comes from /server_info.
    assert_eq!(b[0]["server"]["limits"]["kv_tokens"], 36864);
    // --no-scrape reads none of it and says nothing.
    let r = load_sim(&s, "-c 1 -n 2 --max-tokens 8 --no-scrape");
    r.expect_code(0);
    testkit::assert_lacks(&r.stderr(), "/metrics");
    assert!(benches(&r)[0]["server"].get("limits").is_none());
}
