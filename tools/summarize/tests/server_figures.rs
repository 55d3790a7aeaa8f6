//! What the server and GPUs measured, as summarize reads it from bench
//! records: energy per output token and tokens/s per watt are metrics to
//! pick on (each in its own direction) and to draw; records of a loadgen
//! that reads server metrics but carry none are named once with the flag
//! their server needs; the capacity is shown beside each config.

mod common;

use common::{summarize, summary_of, temp_file};
use serde_json::{json, Value};
use testkit::assert_contains;

/// A bench record of `steps` at concurrency `c`, with `extra` merged in.
fn bench(steps: &str, c: u64, tok_s: f64, extra: Value) -> String {
    let mut r = json!({
        "type": "bench", "schema": 2, "config": {"speculative-num-steps": steps},
        "server": {"kind": "sglang", "args": {"enable_metrics": false},
                   "limits": {"origin": "/server_info max_total_num_tokens, max_running_requests",
                              "kv_tokens": 41000, "max_running_requests": 48}},
        "load": {"mode": "closed", "concurrency": c},
        "throughput": {"output_tok_per_s": tok_s},
    });
    for (k, v) in extra.as_object().unwrap() {
        r[k] = v.clone();
    }
    r.to_string()
}

fn gpu(per_token: f64, per_w: f64) -> Value {
    json!({"gpu": {"source": "dcgm", "origin": "http://gpu1:9400/metrics", "samples": 10,
                   "gpus": 1, "energy_j": 100.0, "energy_method": "counter",
                   "power_w": {"mean": 400.0, "peak": 450.0, "samples": 10,
                               "source": "DCGM_FI_DEV_POWER_USAGE"},
                   "energy_per_output_token_j": per_token, "output_tok_per_s_per_w": per_w}})
}

fn records() -> String {
    // steps=5 is faster but spends more energy per token.
    [
        bench("4", 1, 1000.0, gpu(0.30, 2.5)),
        bench("4", 16, 8000.0, gpu(0.10, 20.0)),
        bench("5", 1, 1100.0, gpu(0.40, 2.75)),
        bench("5", 16, 8800.0, gpu(0.15, 22.0)),
    ]
    .join("\n")
}

#[test]
fn energy_per_token_and_tokens_per_watt_are_picked_each_its_way() {
    let path = temp_file("gpu.jsonl", &records());
    let s = summary_of(
        &["-f", "json", "--metric", "energy_per_output_token_j", &path],
        "",
    );
    assert_eq!(s["metric"], "gpu.energy_per_output_token_j", "{s}");
    assert_eq!(s["details"]["better"], "lower", "{s}");
    assert_eq!(s["best_config"]["speculative-num-steps"], "4", "{s}");
    let s = summary_of(
        &["-f", "json", "--metric", "output_tok_per_s_per_w", &path],
        "",
    );
    assert_eq!(s["details"]["better"], "higher", "{s}");
    assert_eq!(s["best_config"]["speculative-num-steps"], "5", "{s}");
    let svg = temp_file("gpu.svg", "");
    let r = summarize(
        &[
            "--metric",
            "gpu.energy_per_output_token_j",
            "--plot",
            &svg,
            &path,
        ],
        "",
    );
    r.expect_code(0);
    assert_contains(
        &std::fs::read_to_string(&svg).unwrap(),
        "energy per output token (J)",
    );
}

#[test]
fn records_without_server_metrics_are_named_once_with_the_flag() {
    let path = temp_file("gpu.jsonl", &records());
    let r = summarize(&["-f", "text", &path], "");
    r.expect_code(0);
    let out = r.stdout().replace("\n    ", " ");
    assert_eq!(
        out.matches("no server metrics in the records of").count(),
        1,
        "{out}"
    );
    assert_contains(
        &out,
        "no server metrics in the records of speculative-num-steps=4, speculative-num-steps=5: \
         SGLang serves /metrics only when started with --enable-metrics",
    );
    assert_contains(
        &out,
        "speculative-num-steps=5: 41k KV tokens, 48 running max",
    );
    // Records of schema 1 came from a loadgen that read none: nothing said.
    let old = records().replace("\"schema\":2", "\"schema\":1");
    let r = summarize(&["-f", "text", &temp_file("old.jsonl", &old)], "");
    assert!(!r.stdout().contains("no server metrics"), "{}", r.stdout());
}
