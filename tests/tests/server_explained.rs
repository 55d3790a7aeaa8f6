//! What the server saw, through the pipeline: loadgen over two llm-sim
//! depths whose KV model (each request reserves prompt + max_tokens + N x
//! --speculative-kv-per-step, and waits when that does not fit) fills the
//! deeper depth's KV cache at c=16 and queues its requests, then
//! summarize: the capacity beside each config, a note that names KV for
//! the deep depth and not for the shallow one, in the server's own
//! numbers, and the report's KV and queue charts.

mod sweep_support;

use serde_json::{json, Value};
use sweep_support::records::conforms;
use testkit::{cmd, run, temp_dir, Sim};

const K: &str = "speculative-config.num_speculative_tokens";

/// A ready record for config `k` at `url`: what wait-ready hands loadgen.
fn ready(url: &str, k: u32) -> Value {
    json!({
        "type": "ready", "schema": 2, "config": {K: k.to_string()},
        "provenance": {"tool": "wait-ready", "version": "0", "started_at": "2026-01-01T00:00:00Z",
                       "finished_at": "2026-01-01T00:00:01Z"},
        "outcome": "ready", "reason": "ready", "targets": [], "elapsed_s": 1.0, "attempts": 1,
        "server": {"kind": "llm-sim", "base_url": url, "simulated": true},
    })
}

fn depth(k: u32) -> Sim {
    let spec = format!(r#"{{"method":"eagle","num_speculative_tokens":{k}}}"#);
    Sim::start_ready(&[
        "--personality",
        "vllm",
        "--load-time",
        "0s",
        "--warmup-time",
        "0s",
        "--speculative-config",
        &spec,
        // 32 + 32 + k x 512 tokens a request: at c=16 all 16 fit at k=2
        // (92% of the cache), 7 at k=5 (97%) and 9 wait.
        "--kv-capacity-tokens",
        "19000",
        "--speculative-kv-per-step",
        "512",
    ])
}

#[test]
fn summarize_names_kv_for_the_deep_depth_in_the_servers_numbers() {
    let dir = temp_dir("server-explained");
    let results = dir.join("results.jsonl");
    let mut lines = String::new();
    for k in [2, 5] {
        let sim = depth(k);
        let url = sim.base_url();
        let args = [
            "--concurrency",
            "1,16",
            "--duration",
            "2s",
            "--warmup",
            "0",
            "--input-tokens",
            "32",
            "--max-tokens",
            "32",
            "--ignore-eos",
            "--scrape-interval",
            "100ms",
        ];
        let r = run(cmd("loadgen", &args), &ready(&url, k).to_string());
        r.expect_code(0);
        for rec in r.json_lines() {
            conforms(&rec, "loadgen");
            lines += &format!("{rec}\n");
        }
    }
    std::fs::write(&results, &lines).unwrap();
    let report = dir.join("report.html");
    let s = run(
        cmd(
            "summarize",
            &[
                "--format",
                "text",
                "--report",
                report.to_str().unwrap(),
                results.to_str().unwrap(),
            ],
        ),
        "",
    );
    s.expect_code(0);
    let out = s.stdout();
    // The capacity each config started with (vllm:cache_config_info).
    let text = out.replace("\n    ", " ");
    testkit::assert_contains(&text, "server capacity (as reported once ready):");
    testkit::assert_contains(&text, &format!("{K}=5: 19k KV tokens (19000 blocks of 1)"));
    // One note, for the deep depth at the high level, in measured numbers.
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" waiting on average"))
        .collect();
    assert_eq!(notes.len(), 1, "{out}");
    let note = notes[0];
    testkit::assert_contains(note, &format!("{K}=5 at c=16: KV cache 9"));
    testkit::assert_contains(note, &format!("; {K}=2: 92%, 0, 0"));
    testkit::assert_contains(note, "(KV-bound, measured)");
    assert!(!text.contains(&format!("{K}=2 at c=16:")), "{out}");
    // The report draws the KV cache and the queue by level.
    let html = std::fs::read_to_string(&report).unwrap();
    for id in [
        "id=\"server\"",
        "id=\"chart-kv-cache\"",
        "id=\"chart-waiting\"",
    ] {
        testkit::assert_contains(&html, id);
    }
    testkit::assert_lacks(&html, "id=\"chart-gpu-power\"");
}

/// A server without `/metrics` (SGLang started without --enable-metrics):
/// a sweep says so in one line naming the flag, once for the whole sweep,
/// not once per config (loadgen says it in each config's run; sweep points
/// `SWEEPKIT_SAID` at its work folder). Regression: one line per config.
#[test]
fn a_sweep_says_a_missing_metrics_endpoint_once() {
    use sweep_support::{dump, SimExec, SweepArgs};
    let (spec, url) = SimExec::free()
        .load("100ms")
        .eagle(1)
        .flags("--personality sglang")
        .spec("sweep-no-metrics");
    let out = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .param("speculative-num-steps", "1,2,3")
        .levels("1")
        .load(&["-n", "2", "--max-tokens", "8", "--scrape-interval", "100ms"])
        .results(&spec.results())
        .expect(0);
    let err = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("GET /metrics")).collect();
    assert_eq!(said.len(), 1, "{}", dump(&out));
    testkit::assert_contains(said[0], "--enable-metrics");
    let recs = sweep_support::records(&spec.results());
    let benches = recs.iter().filter(|r| r["type"] == "bench").count();
    assert_eq!(benches, 3, "{}", dump(&out));
}
