//! `summarize --schedule` run as a binary: the reference campaign's SGLang
//! schedule, a vLLM sweep in the dotted flag form, and every refusal as one
//! line on stderr with exit 56 and nothing on stdout.

mod common;

use common::{fixture, summarize, temp_file};
use serde_json::{json, Value};

/// The one schedule object printed.
fn schedule(run: &testkit::Run) -> Value {
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "one object expected:\n{}", run.stdout());
    assert_eq!(lines[0]["type"], "schedule");
    lines[0].clone()
}

/// Expect a refusal: exit 56, empty stdout, one error line containing `why`.
fn refused(run: &testkit::Run, why: &str) {
    run.expect_code(56);
    assert_eq!(run.stdout(), "", "nothing on stdout");
    let errors: Vec<String> = run
        .stderr()
        .lines()
        .filter(|l| l.starts_with("summarize: error:"))
        .map(String::from)
        .collect();
    assert_eq!(errors.len(), 1, "{}", run.stderr());
    assert!(errors[0].contains(why), "{}", errors[0]);
}

fn vllm_bench(k: Option<u32>, c: u64, tok_s: f64) -> String {
    let mut cfg = json!({"model": "/m"});
    if let Some(k) = k {
        cfg["speculative-config.method"] = json!("eagle");
        cfg["speculative-config.model"] = json!("/draft");
        cfg["speculative-config.num_speculative_tokens"] = json!(k.to_string());
    }
    json!({
        "type": "bench", "schema": 1, "config": cfg,
        "server": {"kind": "vllm", "argv": ["vllm", "serve", "/m", "--max-num-seqs", "64"]},
        "load": {"mode": "closed", "concurrency": c},
        "throughput": {"output_tok_per_s": tok_s},
    })
    .to_string()
}

#[test]
fn the_reference_campaign_gives_an_sglang_schedule() {
    let run = summarize(&["--schedule", "sglang", &fixture()], "");
    run.expect_code(0);
    let s = schedule(&run);
    assert_eq!(s["server"], "sglang");
    let cfg = &s["adaptive_config"];
    // c=1: 5 (282 vs 277, 1.8% apart); c=4 and c=16: 4; c=32: 3.
    assert_eq!(cfg["1"]["candidate_steps"], json!([5]), "{s}");
    assert_eq!(cfg["4"]["candidate_steps"], json!([4]), "{s}");
    assert_eq!(cfg["16"]["candidate_steps"], json!([4]), "{s}");
    assert_eq!(cfg["32"]["candidate_steps"], json!([3]), "{s}");
    // c=64: off (3100) and steps 1 (3150, repeats 2950..3200) within noise.
    let c64: Vec<u64> = cfg
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.parse::<u64>().unwrap() > 32)
        .flat_map(|(_, v)| v["candidate_steps"].as_array().unwrap().clone())
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert!(c64.contains(&0) && c64.contains(&1), "{s}");
    let flags = testkit::output::strs(&s["flags"]);
    let steps = flags[flags
        .iter()
        .position(|f| *f == "--speculative-num-steps")
        .unwrap()
        + 1];
    assert_eq!(steps, "5", "{flags:?}");
    assert!(flags.contains(&"--speculative-adaptive"));
    assert_eq!(s["max_batch"], 48, "SGLang's default under speculation");
    // Its times to first token grow alike for every depth: no depth waited
    // for KV, so nothing is capped (c=1 keeps 5).
    assert!(!run.stderr().contains("depth capped"), "{}", run.stderr());
    assert!(
        !run.stderr().contains("depth not capped"),
        "{}",
        run.stderr()
    );
}

/// One level of one depth: tok/s, mean TTFT and mean E2E (ms).
type Point = (f64, f64, f64);

/// An SGLang bench record of `steps` at concurrency `c`: tok/s, mean TTFT
/// and mean E2E (ms).
fn sglang_bench(steps: u32, c: u64, tok_s: f64, ttft: f64, e2e: f64) -> String {
    json!({
        "type": "bench", "schema": 1,
        "config": {"speculative-algorithm": "EAGLE", "speculative-eagle-topk": "1",
                   "speculative-num-steps": steps.to_string()},
        "server": {"kind": "llm-sim", "max_running_requests": 48},
        "load": {"mode": "closed", "concurrency": c},
        "throughput": {"output_tok_per_s": tok_s},
        "ttft_ms": {"count": 128, "mean": ttft},
        "e2e_ms": {"count": 128, "mean": e2e},
    })
    .to_string()
}

#[test]
fn a_sweep_whose_deepest_depth_waited_for_kv_gets_a_capped_schedule() {
    // llm-sim's campaign curve, one start per value (bench/README.md):
    // static 5 is best at c=1 but its requests waited for KV at c=16 and
    // c=48, so uncapped the schedule would run like static 5 there.
    let curve: [(u32, [Point; 4]); 4] = [
        (
            1,
            [
                (847.0, 3.1, 151.0),
                (3153.0, 5.3, 161.0),
                (9700.0, 8.6, 209.0),
                (17732.0, 117.0, 444.0),
            ],
        ),
        (
            3,
            [
                (1346.0, 3.8, 95.0),
                (4312.0, 6.7, 114.0),
                (14469.0, 9.6, 140.0),
                (16696.0, 317.0, 463.0),
            ],
        ),
        (
            4,
            [
                (1490.0, 4.0, 94.0),
                (5625.0, 5.3, 89.0),
                (16256.0, 8.4, 121.0),
                (16436.0, 353.0, 472.0),
            ],
        ),
        (
            5,
            [
                (1573.0, 3.8, 81.0),
                (5677.0, 5.9, 88.0),
                (13989.0, 30.4, 140.0),
                (13408.0, 462.0, 580.0),
            ],
        ),
    ];
    let mut lines = Vec::new();
    for (steps, points) in curve {
        for (c, (x, ttft, e2e)) in [1, 4, 16, 48].into_iter().zip(points) {
            lines.push(sglang_bench(steps, c, x, ttft, e2e));
        }
    }
    let f = temp_file("kv-bound.jsonl", &lines.join("\n"));
    let run = summarize(&["--schedule", "sglang", &f], "");
    run.expect_code(0);
    let s = schedule(&run);
    let want = json!({"1": {"candidate_steps": [4]}, "4": {"candidate_steps": [4]},
                      "16": {"candidate_steps": [4]}, "48": {"candidate_steps": [1]}});
    assert_eq!(s["adaptive_config"], want, "{s}");
    let flags = testkit::output::strs(&s["flags"]);
    let at = flags
        .iter()
        .position(|f| *f == "--speculative-num-steps")
        .unwrap();
    assert_eq!(flags[at + 1], "4", "{flags:?}");
    let note = s["warnings"][0].as_str().unwrap();
    assert!(
        note.starts_with("depth capped at 4: static 5 is KV-bound where the uncapped schedule"),
        "{note}"
    );
    assert!(
        run.stderr()
            .contains(&format!("summarize: warning: {note}")),
        "{}",
        run.stderr()
    );
    // --max-depth replaces the rule: 5 at c=1 again, and no note.
    let run = summarize(&["--schedule", "sglang", "--max-depth", "5", &f], "");
    run.expect_code(0);
    let s = schedule(&run);
    assert_eq!(
        s["adaptive_config"]["1"]["candidate_steps"],
        json!([5]),
        "{s}"
    );
    assert!(!run.stderr().contains("depth capped"), "{}", run.stderr());
}

#[test]
fn a_vllm_sweep_gives_the_complete_speculative_config() {
    let mut lines = Vec::new();
    for (k, pts) in [
        (None, [80.0, 600.0, 2000.0]),
        (Some(1), [120.0, 700.0, 1900.0]),
        (Some(3), [230.0, 650.0, 1500.0]),
    ] {
        for (c, x) in [1, 8, 32].into_iter().zip(pts) {
            lines.push(vllm_bench(k, c, x));
        }
    }
    let f = temp_file("vllm.jsonl", &lines.join("\n"));
    let run = summarize(&["--schedule", "vllm", &f], "");
    run.expect_code(0);
    let s = schedule(&run);
    let want = json!({
        "method": "eagle", "model": "/draft", "num_speculative_tokens": 3,
        "num_speculative_tokens_per_batch_size": [[1, 7, 3], [8, 31, 1], [32, 64, 0]],
    });
    assert_eq!(s["speculative_config"], want, "{s}");
    assert_eq!(s["flags"][0], "--speculative-config");
    let text: Value = serde_json::from_str(s["flags"][1].as_str().unwrap()).unwrap();
    assert_eq!(text, want);
    assert_eq!(s["max_batch"], 64, "from --max-num-seqs in the argv: {s}");
    assert_eq!(s["per_level"][2]["k"], 0);
    // --max-batch overrides the records.
    let run = summarize(&["--schedule", "vllm", "--max-batch", "512", &f], "");
    assert_eq!(
        schedule(&run)["speculative_config"]["num_speculative_tokens_per_batch_size"][2],
        json!([32, 512, 0])
    );
}

#[test]
fn every_refusal_is_one_line_and_exit_56() {
    let one_level: Vec<String> = [None, Some(2)]
        .into_iter()
        .map(|k| vllm_bench(k, 1, 100.0 + k.unwrap_or(0) as f64))
        .collect();
    let f = temp_file("one-level.jsonl", &one_level.join("\n"));
    refused(
        &summarize(&["--schedule", "vllm", &f], ""),
        "only one level",
    );

    let one_value: Vec<String> = [1, 8]
        .into_iter()
        .map(|c| vllm_bench(Some(2), c, 100.0 * c as f64))
        .collect();
    let f = temp_file("one-value.jsonl", &one_value.join("\n"));
    refused(
        &summarize(&["--schedule", "vllm", &f], ""),
        "only one depth",
    );

    let mut failing = one_value.clone();
    failing.extend([1, 8].map(|c| vllm_bench(Some(4), c, 50.0 * c as f64)));
    for k in [2, 4] {
        failing.push(
            json!({
                "type": "failure", "schema": 1, "stage": "bench", "kind": "timeout",
                "reason": "every request timed out",
                "config": {"model": "/m", "speculative-config.method": "eagle",
                    "speculative-config.model": "/draft",
                    "speculative-config.num_speculative_tokens": k.to_string()},
                "load": {"mode": "closed", "concurrency": 64},
            })
            .to_string(),
        );
    }
    let f = temp_file("failing.jsonl", &failing.join("\n"));
    refused(
        &summarize(&["--schedule", "vllm", &f], ""),
        "c=64: every config failed there",
    );

    let mut noisy = Vec::new();
    for k in [1, 2] {
        for c in [1, 8] {
            for d in [-50.0, 0.0, 50.0] {
                noisy.push(vllm_bench(Some(k), c, 1000.0 + k as f64 * 5.0 + d));
            }
        }
    }
    let f = temp_file("noisy.jsonl", &noisy.join("\n"));
    refused(&summarize(&["--schedule", "vllm", &f], ""), "within noise");

    let off: Vec<String> = [
        (None, 1, 300.0),
        (None, 8, 900.0),
        (Some(2), 1, 200.0),
        (Some(2), 8, 500.0),
    ]
    .into_iter()
    .map(|(k, c, x)| vllm_bench(k, c, x))
    .collect();
    let f = temp_file("off.jsonl", &off.join("\n"));
    refused(
        &summarize(&["--schedule", "vllm", &f], ""),
        "speculation off wins at every level",
    );
}

#[test]
fn schedule_conflicts_with_format() {
    let run = summarize(&["--schedule", "vllm", "-f", "text", &fixture()], "");
    run.expect_code(2);
}
