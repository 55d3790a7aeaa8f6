//! Capacity under `--slo` from hand-made results: the highest measured
//! concurrency meeting every term, the bracket when the next level misses
//! or fails, none when the lowest level misses, the ranking, goodput
//! there, and each config's start-up cost from its swap and ready records.

mod common;

use common::make::{bench, failure, lines, ready, swap};
use common::{summarize, summary};
use serde_json::{json, Value};
use testkit::assert_contains;

fn cell(steps: &str, c: u64, ttft: f64, goodput: Option<f64>) -> Value {
    let mut r = bench(
        &[("speculative-num-steps", steps)],
        c,
        100.0 * c as f64,
        10.0,
        ttft,
    );
    if let Some(g) = goodput {
        r["throughput"]["goodput_req_per_s"] = json!(g);
    }
    r
}

fn campaign() -> String {
    let mut recs = Vec::new();
    let levels = [1u64, 2, 4, 8, 16];
    let ttft = |s: &str, c: u64| match s {
        "1" => [100.0, 200.0, 300.0, 600.0, 900.0][levels.iter().position(|&x| x == c).unwrap()],
        "2" => 50.0 * c as f64 / 4.0,
        "3" => 100.0,
        _ => 700.0,
    };
    for s in ["1", "2", "3", "4"] {
        for &c in &levels {
            if s == "3" && c >= 8 {
                continue;
            }
            let g = (c == 4).then_some(if s == "1" { 3.0 } else { 2.0 });
            recs.push(cell(s, c, ttft(s, c), g));
        }
    }
    recs.push(failure(
        &[("speculative-num-steps", "3")],
        "bench",
        "crashed_mid_run",
        Some(8),
    ));
    recs.push(swap(&[("speculative-num-steps", "1")], 3.0));
    recs.push(ready(&[("speculative-num-steps", "1")], 95.0));
    recs.push(swap(&[("speculative-num-steps", "1")], 5.0));
    recs.push(ready(&[("speculative-num-steps", "1")], 105.0));
    lines(&recs)
}

#[test]
fn capacity_brackets_and_ranks_configs() {
    let input = campaign();
    let run = summarize(&testkit::words("-f json --slo p99_ttft_ms<=500"), &input);
    run.expect_code(0);
    let rec = summary(&run);
    let caps = rec["details"]["capacity"].as_array().unwrap();
    let order: Vec<&str> = caps.iter().map(|c| c["label"].as_str().unwrap()).collect();
    // s2 meets it up to c=16; s1 and s3 both to c=4, s1 with more goodput;
    // s4 nowhere.
    assert_eq!(
        order,
        [
            "speculative-num-steps=2",
            "speculative-num-steps=1",
            "speculative-num-steps=3",
            "speculative-num-steps=4"
        ]
    );
    assert_eq!(caps[0]["capacity_concurrency"], 16);
    assert_eq!(caps[0]["next_concurrency"], Value::Null);
    assert_eq!(caps[1]["capacity_concurrency"], 4);
    assert_eq!(caps[1]["next_concurrency"], 8);
    assert_eq!(caps[1]["next"], "misses (p99_ttft_ms 600)");
    assert_eq!(caps[1]["goodput_req_per_s"], 3.0);
    assert_eq!(caps[2]["next"], "failed (crashed mid-run)");
    assert_eq!(caps[3]["capacity_concurrency"], Value::Null);
    let text = summarize(&testkit::words("-f text --slo p99_ttft_ms<=500"), &input);
    text.expect_code(0);
    let out = text.stdout();
    assert_contains(&out, "  1. speculative-num-steps=2: c=16 or more (the highest level measured meets it); 1600 output tok/s");
    assert_contains(&out, "  2. speculative-num-steps=1: c=4, between c=4 and c=8, which misses (p99_ttft_ms 600); goodput 3 req/s; 400 output tok/s; ready in 100 s, stop 4 s");
    assert_contains(&out, "  4. speculative-num-steps=4: none: below c=1, the lowest level measured, which misses (p99_ttft_ms 700)");
}

#[test]
fn startup_cost_is_shown_without_an_slo() {
    let run = summarize(&["-f", "text"], &campaign());
    run.expect_code(0);
    let out = run.stdout();
    assert_contains(&out, "start-up cost (median over starts):");
    assert_contains(&out, "  speculative-num-steps=1: ready in 100 s, stop 4 s");
    assert_contains(&out, "  speculative-num-steps=2: not recorded");
    let rec = summary(&summarize(&["-f", "json"], &campaign()));
    let s = &rec["details"]["startup"][0];
    assert_eq!(s["time_to_ready_s"], 100.0);
    assert_eq!(s["starts"], 4);
}
