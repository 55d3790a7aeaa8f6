//! Speculative KV is reserved for the deepest step a server may draft, not
//! the step it drafts now: SGLang's adaptive mode for the deepest candidate
//! of any slot (`get_alloc_len_per_decode`, `max_speculative_num_draft_tokens`),
//! vLLM's per-batch schedule for the static `num_speculative_tokens`
//! (`num_lookahead_tokens`). Seen as admission, in the servers' own
//! running-requests gauges, under a KV pool that limits it.

mod common;

use std::time::{Duration, Instant};

use common::{sim, throughput};
use testkit::http_get;

/// Client threads: more than any of the configs below admits except the
/// shallow static ones.
const CONCURRENCY: usize = 24;

/// The most requests `gauge` showed running while 2 x CONCURRENCY
/// requests of 200 tokens ran at CONCURRENCY (KV: 36864 tokens, 512 per
/// draft step, so 13 fit at depth 5, 16 at 4, 24 at 1 or 2).
fn peak_running(args: &[&str], gauge: &str) -> u64 {
    let mut all = args.to_vec();
    all.extend([
        "--kv-capacity-tokens",
        "36864",
        "--speculative-kv-per-step",
        "512",
    ]);
    all.extend(["--enable-metrics", "--seed", "9"]);
    let s = sim(&all);
    let port = s.port;
    let load = std::thread::spawn(move || throughput(port, CONCURRENCY, 2 * CONCURRENCY, 200));
    let mut peak = 0;
    let t0 = Instant::now();
    while !load.is_finished() && t0.elapsed() < Duration::from_secs(60) {
        let (_, m) = http_get(port, "/metrics").unwrap();
        let line = m.lines().find(|l| l.starts_with(gauge));
        let v = line.and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        peak = peak.max(v.unwrap_or_else(|| panic!("{gauge} in\n{m}")) as u64);
        std::thread::sleep(Duration::from_millis(5));
    }
    load.join().unwrap();
    peak
}

fn sglang(steps: &str, extra: &[&str]) -> u64 {
    let mut a = vec![
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        steps,
        "--speculative-eagle-topk",
        "1",
    ];
    a.extend_from_slice(extra);
    peak_running(&a, "sglang:num_running_reqs")
}

#[test]
fn sglang_adaptive_reserves_for_the_deepest_candidate() {
    // Launched at 2; only the c=1 slot may climb to 5.
    let cfg = testkit::temp_file(
        "llm-sim-spec-kv",
        "adaptive.json",
        r#"{"1": {"candidate_steps": [2, 5]}, "4": {"candidate_steps": [2]}}"#,
    );
    let deep = sglang("5", &[]);
    let shallow = sglang("2", &[]);
    let adaptive = sglang(
        "2",
        &[
            "--speculative-adaptive",
            "--speculative-adaptive-config",
            &cfg,
        ],
    );
    assert_eq!((deep, shallow), (13, CONCURRENCY as u64), "static 5 and 2");
    assert_eq!(adaptive, deep, "adaptive launched at 2 with a candidate 5");
}

fn vllm(config: &str) -> u64 {
    let a = ["--personality", "vllm", "--speculative-config", config];
    peak_running(&a, "vllm:num_requests_running")
}

#[test]
fn vllm_per_batch_schedule_reserves_the_static_tokens() {
    let deep = vllm(r#"{"method":"eagle","num_speculative_tokens":4}"#);
    let shallow = vllm(r#"{"method":"eagle","num_speculative_tokens":1}"#);
    let schedule = vllm(
        r#"{"method":"eagle","num_speculative_tokens":4,
            "num_speculative_tokens_per_batch_size":[[1,1,4],[2,64,1]]}"#,
    );
    assert_eq!((deep, shallow), (16, CONCURRENCY as u64), "static 4 and 1");
    assert_eq!(
        schedule, deep,
        "drafting 1 above one request still reserves 4"
    );
}
