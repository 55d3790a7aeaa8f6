//! The sglang personality runs SGLang's adaptive speculation
//! (`--speculative-adaptive --speculative-adaptive-config FILE`): a batch
//! drafts its slot's steps, steps climb by the EMA of accepted drafts and
//! are logged as SGLang logs them, /server_info reports the resolved args,
//! and what SGLang refuses or turns off it refuses or turns off.

mod common;

use common::{run_sim, sim, throughput};
use serde_json::Value;
use testkit::assert_contains;
use testkit::http_get;

fn config_file(name: &str, text: &str) -> String {
    let dir = testkit::temp_dir("llm-sim-adaptive");
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

fn server_info(port: u16) -> Value {
    let (_, body) = http_get(port, "/server_info").unwrap();
    serde_json::from_str(&body).unwrap()
}

/// `line`'s words, then `--speculative-adaptive` with the config file `cfg`.
fn adaptive<'a>(line: &'a str, cfg: &'a str) -> Vec<&'a str> {
    let mut v = testkit::words(line);
    v.extend([
        "--speculative-adaptive",
        "--speculative-adaptive-config",
        cfg,
    ]);
    v
}

/// A ready adaptive sim with every draft accepted (accept length = steps + 1).
fn adaptive_sim(cfg: &str, steps: &str) -> testkit::Sim {
    sim(&[
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-num-steps",
        steps,
        "--speculative-adaptive",
        "--speculative-adaptive-config",
        cfg,
        "--speculative-accept-rate",
        "1",
        "--speculative-draft-horizon",
        "8",
        "--seed",
        "5",
    ])
}

#[test]
fn each_batch_drafts_its_slots_steps() {
    // No movement: one candidate per slot.
    let cfg = config_file(
        "slots.json",
        r#"{"1": {"candidate_steps": [4]}, "4": {"candidate_steps": [1]}}"#,
    );
    let alone = adaptive_sim(&cfg, "4");
    throughput(alone.port, 1, 3, 41);
    let info = server_info(alone.port);
    assert_eq!(info["speculative_adaptive"], true, "{info}");
    assert_eq!(info["speculative_num_steps"], 4);
    assert_eq!(info["speculative_eagle_topk"], 1);
    assert_eq!(info["speculative_num_draft_tokens"], 5);
    let len1 = info["internal_states"][0]["avg_spec_accept_length"]
        .as_f64()
        .unwrap();
    assert!((len1 - 5.0).abs() < 1e-9, "c=1 drafts 4: {len1}");
    let busy = adaptive_sim(&cfg, "4");
    throughput(busy.port, 8, 24, 41);
    let info = server_info(busy.port);
    let len8 = info["internal_states"][0]["avg_spec_accept_length"]
        .as_f64()
        .unwrap();
    assert!(len8 < 3.0, "c=8 mostly drafts 1: {len8}");
}

#[test]
fn steps_climb_by_the_ema_and_are_logged() {
    let cfg = config_file(
        "climb.json",
        r#"{"warmup_batches": 2, "update_interval": 1,
            "1": {"candidate_steps": [1, 3, 5]}}"#,
    );
    let s = adaptive_sim(&cfg, "1");
    throughput(s.port, 1, 2, 120);
    let err = s.stderr();
    assert_contains(
        &err,
        "Adaptive spec params updated: steps 1 -> 3 (ema_accept_len=",
    );
    assert_contains(&err, "steps 3 -> 5");
}

#[test]
fn what_sglang_refuses_or_turns_off() {
    let cfg = config_file("two.json", r#"{"1": {"candidate_steps": [1, 3]}}"#);
    let r = run_sim(&adaptive(
        "--load-time 50ms --speculative-algorithm EAGLE --speculative-num-steps 2",
        &cfg,
    ));
    r.expect_code(1);
    let want = "ValueError: --speculative-num-steps=2 is not in the adaptive config \
                candidate_steps [1, 3]. Pass one of those values.";
    assert_eq!(
        r.stderr().trim_end().lines().last(),
        Some(want),
        "{}",
        r.stderr()
    );

    let bad = config_file("bad.json", r#"{"1": {"candidate_steps": []}}"#);
    let r = run_sim(&adaptive(
        "--load-time 50ms --speculative-algorithm EAGLE",
        &bad,
    ));
    r.expect_code(1);
    assert!(
        r.stderr().contains(
            "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got []"
        ),
        "{}",
        r.stderr()
    );

    // topk 2: a warning, and static steps.
    let s = sim(&adaptive(
        "--speculative-algorithm EAGLE --speculative-num-steps 3 \
         --speculative-eagle-topk 2 --speculative-num-draft-tokens 4",
        &cfg,
    ));
    let info = server_info(s.port);
    assert_eq!(info["speculative_adaptive"], false, "{info}");
    assert!(
        s.stderr().contains(
            "speculative_adaptive disabled: speculative_eagle_topk=2 (only topk=1 is \
             supported). Falling back to static speculative params."
        ),
        "{}",
        s.stderr()
    );
}
