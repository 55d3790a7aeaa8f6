//! Where a validated schedule loses beyond noise to a static value
//! shallower than the schedule's deepest depth, the table and JSON say why
//! in one line: both servers reserve speculative KV for the deepest depth
//! at every load, so a schedule cannot win that loss back; and what to try
//! (a schedule capped at that depth, `--max-depth`). From hand-made files.

mod common;

use common::{summarize, summary_of, temp_file};
use serde_json::{json, Value};

/// The derived schedule record: SGLang's adaptive config, deepest
/// candidate 5.
fn schedule() -> Value {
    let cfg = json!({"1": {"candidate_steps": [5]}, "16": {"candidate_steps": [4]},
                     "64": {"candidate_steps": [2]}});
    json!({"type": "schedule", "server": "sglang",
           "flags": ["--speculative-adaptive"], "adaptive_config": cfg})
}

/// The campaign (`schedule_campaign`) with the schedule's runs at `at`.
fn results(at: [f64; 3]) -> String {
    common::make::schedule_campaign(at, &schedule())
}

#[test]
fn a_loss_to_a_shallower_static_value_names_the_memory_cause_and_the_cap() {
    // Worse at c=1 (best 5, as deep as the schedule: no note) and at c=16
    // (best 4 < 5: the note); within noise at c=64.
    let f = temp_file("sched-memory.jsonl", &results([1400.0, 13000.0, 15000.0]));
    let sc = summary_of(&["--format", "json", &f], "")["details"]["schedule"][0].clone();
    let at = |l: &str| {
        sc["levels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["level"] == l)
            .unwrap()
            .clone()
    };
    assert_eq!(at("c=1")["vs_best_static"]["verdict"], "worse");
    assert_eq!(at("c=1")["memory_note"], Value::Null);
    assert_eq!(at("c=64")["memory_note"], Value::Null);
    let note = at("c=16")["memory_note"].as_str().unwrap().to_string();
    assert_eq!(
        note,
        "the schedule reserves speculative KV for its deepest depth 5 at every load \
         (both servers do), which speculative-num-steps=4 does not: try it capped at 4 \
         (summarize --schedule sglang --max-depth 4)"
    );
    let text = summarize(&["--format", "text", &f], "");
    text.expect_code(0);
    // The text wraps its lines between words: read them as one.
    let words = text
        .stdout()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let line = words
        .split("schedule (sglang) at ")
        .find(|l| l.starts_with("c=16"))
        .map(str::to_string);
    assert!(
        line.is_some_and(|l| l.trim_end().ends_with(&note)),
        "{}",
        text.stdout()
    );
}
