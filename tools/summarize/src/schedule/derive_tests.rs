//! Unit tests of the schedule derivation on hand-made results: two levels,
//! five levels, ties, a level where speculation off wins, a level with only
//! failures, noise, and every refusal.

use super::*;
use crate::analysis::analysis_of_lines as analysis_of;

/// A bench record of `config` at concurrency `c` with `tok_s` tokens/s.
fn bench(config: &[(&str, &str)], c: u64, tok_s: f64) -> String {
    let cfg: Map<String, Value> = config
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    serde_json::json!({
        "type": "bench", "schema": 1, "config": cfg,
        "server": {"kind": "sglang", "max_running_requests": 48},
        "load": {"mode": "closed", "concurrency": c},
        "throughput": {"output_tok_per_s": tok_s},
    })
    .to_string()
}

/// A failure of `config` while benchmarking concurrency `c`.
fn failed(config: &[(&str, &str)], c: u64) -> String {
    let cfg: Map<String, Value> = config
        .iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect();
    serde_json::json!({
        "type": "failure", "schema": 1, "config": cfg, "stage": "bench",
        "kind": "oom", "reason": "CUDA out of memory",
        "load": {"mode": "closed", "concurrency": c},
    })
    .to_string()
}

fn steps(n: &str) -> Vec<(&'static str, String)> {
    if n == "0" {
        vec![("speculative-num-steps", "0".into())]
    } else {
        vec![
            ("speculative-algorithm", "EAGLE3".into()),
            ("speculative-eagle-topk", "1".into()),
            ("speculative-num-steps", n.to_string()),
        ]
    }
}

/// Lines for an SGLang sweep: `curve[i] = (steps, [(c, tok/s)])`.
fn sglang_lines(curve: &[(&str, &[(u64, f64)])]) -> Vec<String> {
    let mut out = Vec::new();
    for (n, points) in curve {
        let cfg = steps(n);
        let cfg: Vec<(&str, &str)> = cfg.iter().map(|(k, v)| (*k, v.as_str())).collect();
        for &(c, x) in *points {
            out.push(bench(&cfg, c, x));
        }
    }
    out
}

fn mb(n: u64) -> MaxBatch {
    MaxBatch {
        value: n,
        source: "test".into(),
    }
}

fn derive_of(lines: &[String], server: Server, max: u64) -> Result<Schedule, Refusal> {
    derive(&analysis_of(lines), server, &mb(max))
}

#[test]
fn two_levels_make_two_ranges() {
    let lines = sglang_lines(&[
        ("1", &[(1, 120.0), (16, 1300.0)]),
        ("4", &[(1, 280.0), (16, 1100.0)]),
    ]);
    let s = derive_of(&lines, Server::Sglang, 48).unwrap();
    assert_eq!(s.ranges, vec![(1, 15, 4), (16, 48, 1)]);
    assert_eq!(s.k_max, 4);
    let slots: Vec<(u64, Vec<u32>)> = s.slots.into_iter().collect();
    assert_eq!(slots, vec![(1, vec![4]), (16, vec![1])]);
    assert_eq!(
        s.settings.get("speculative-algorithm"),
        Some(&Value::String("EAGLE3".into()))
    );
}

#[test]
fn five_levels_merge_equal_neighbours() {
    let c = |a: f64, b: f64, d: f64, e: f64, f: f64| -> Vec<(u64, f64)> {
        vec![(1, a), (4, b), (16, d), (32, e), (64, f)]
    };
    let (s1, s3, s5) = (
        c(120.0, 430.0, 1260.0, 1980.0, 3150.0),
        c(234.0, 790.0, 1480.0, 2240.0, 3010.0),
        c(282.0, 880.0, 1119.0, 1450.0, 1700.0),
    );
    let lines = sglang_lines(&[("1", &s1), ("3", &s3), ("5", &s5)]);
    let s = derive_of(&lines, Server::Sglang, 256).unwrap();
    let ks: Vec<u32> = s.levels.iter().map(|l| l.k).collect();
    assert_eq!(ks, vec![5, 5, 3, 3, 1]);
    assert_eq!(s.ranges, vec![(1, 15, 5), (16, 63, 3), (64, 256, 1)]);
}

#[test]
fn a_tie_goes_to_the_smaller_depth_and_sglang_keeps_both() {
    // 278 vs 280 at c=1: within 1%, so depth 4, and SGLang lists 4 and 5.
    let lines = sglang_lines(&[
        ("4", &[(1, 278.0), (8, 900.0)]),
        ("5", &[(1, 280.0), (8, 700.0)]),
    ]);
    let s = derive_of(&lines, Server::Sglang, 48).unwrap();
    assert_eq!(s.levels[0].k, 4);
    assert_eq!(s.levels[0].close, vec![4, 5]);
    assert_eq!(s.levels[1].close, vec![4]);
}

#[test]
fn speculation_off_wins_a_level_as_depth_zero() {
    let lines = sglang_lines(&[
        ("0", &[(1, 80.0), (32, 3100.0)]),
        ("3", &[(1, 234.0), (32, 2200.0)]),
    ]);
    let s = derive_of(&lines, Server::Sglang, 128).unwrap();
    assert_eq!(s.ranges, vec![(1, 31, 3), (32, 128, 0)]);
    assert_eq!(s.k_max, 3);
    // The off config's settings (none) are not the schedule's.
    assert!(s.settings.contains_key("speculative-algorithm"));
}

#[test]
fn a_level_with_only_failures_is_refused() {
    let mut lines = sglang_lines(&[
        ("1", &[(1, 120.0), (16, 1300.0)]),
        ("4", &[(1, 280.0), (16, 1100.0)]),
    ]);
    let s4 = steps("4");
    let s1 = steps("1");
    let cfg = |v: &[(&'static str, String)]| -> Vec<(&'static str, String)> { v.to_vec() };
    let (a, b) = (cfg(&s1), cfg(&s4));
    let a: Vec<(&str, &str)> = a.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let b: Vec<(&str, &str)> = b.iter().map(|(k, v)| (*k, v.as_str())).collect();
    lines.push(failed(&a, 64));
    lines.push(failed(&b, 64));
    let e = derive_of(&lines, Server::Sglang, 256).unwrap_err();
    assert!(
        e.0.starts_with("c=64: every config failed there"),
        "{}",
        e.0
    );
}

#[test]
fn refusals_say_why() {
    let one_level = sglang_lines(&[("1", &[(1, 120.0)]), ("4", &[(1, 280.0)])]);
    let e = derive_of(&one_level, Server::Sglang, 48).unwrap_err();
    assert!(e.0.contains("only one level (c=1)"), "{}", e.0);

    let one_value = sglang_lines(&[("4", &[(1, 280.0), (16, 1100.0)])]);
    let e = derive_of(&one_value, Server::Sglang, 48).unwrap_err();
    assert!(e.0.contains("only one depth (4)"), "{}", e.0);

    let off_everywhere = sglang_lines(&[
        ("0", &[(1, 300.0), (16, 1500.0)]),
        ("2", &[(1, 200.0), (16, 1100.0)]),
    ]);
    let e = derive_of(&one_value, Server::Vllm, 256).unwrap_err();
    assert!(
        e.0.contains("no config sets --speculative-config"),
        "{}",
        e.0
    );

    let e = derive_of(&off_everywhere, Server::Sglang, 48).unwrap_err();
    assert!(
        e.0.contains("speculation off wins at every level"),
        "{}",
        e.0
    );

    let open = serde_json::json!({
        "type": "bench", "schema": 1, "config": {"speculative-num-steps": "1"},
        "load": {"mode": "open", "rate_rps": 2.0},
        "throughput": {"output_tok_per_s": 1.0},
    });
    let rate = vec![
        open.to_string(),
        bench(&[("speculative-num-steps", "2")], 1, 2.0),
    ];
    let e = derive_of(&rate, Server::Sglang, 48).unwrap_err();
    assert!(e.0.contains("open-loop level"), "{}", e.0);
}

#[test]
fn picks_within_noise_everywhere_are_refused() {
    // Three repeats each, spread 200, medians 10 apart at both levels.
    let mut lines = Vec::new();
    for (n, base) in [("1", 1000.0), ("2", 1010.0)] {
        for c in [1, 16] {
            for d in [-100.0, 0.0, 100.0] {
                let cfg = steps(n);
                let cfg: Vec<(&str, &str)> = cfg.iter().map(|(k, v)| (*k, v.as_str())).collect();
                lines.push(bench(&cfg, c, base + d));
            }
        }
    }
    let e = derive_of(&lines, Server::Sglang, 48).unwrap_err();
    assert!(e.0.contains("within noise"), "{}", e.0);
}

#[test]
fn another_varying_parameter_or_draft_is_refused() {
    let mut lines = sglang_lines(&[("1", &[(1, 120.0), (16, 1300.0)])]);
    lines.push(bench(
        &[("speculative-num-steps", "2"), ("tp-size", "2")],
        1,
        1.0,
    ));
    let e = derive_of(&lines, Server::Sglang, 48).unwrap_err();
    assert!(e.0.starts_with("tp-size varies too"), "{}", e.0);

    let k = "speculative-config.num_speculative_tokens";
    let m = "speculative-config.method";
    let lines = vec![
        bench(&[(k, "2"), (m, "eagle")], 1, 100.0),
        bench(&[(k, "2"), (m, "eagle")], 8, 500.0),
        bench(&[(k, "4"), (m, "eagle3")], 1, 150.0),
        bench(&[(k, "4"), (m, "eagle3")], 8, 400.0),
    ];
    let e = derive_of(&lines, Server::Vllm, 256).unwrap_err();
    assert!(e.0.contains("differ in more than the depth"), "{}", e.0);
}

#[test]
fn sglang_needs_eagle_and_topk_one() {
    let mk = |alg: &str, topk: &str, n: &str, c: u64, x: f64| {
        bench(
            &[
                ("speculative-algorithm", alg),
                ("speculative-eagle-topk", topk),
                ("speculative-num-steps", n),
            ],
            c,
            x,
        )
    };
    let lines = [
        mk("STANDALONE", "1", "1", 1, 1.0),
        mk("STANDALONE", "1", "1", 8, 5.0),
        mk("STANDALONE", "1", "3", 1, 2.0),
        mk("STANDALONE", "1", "3", 8, 4.0),
    ];
    let e = derive_of(&lines, Server::Sglang, 48).unwrap_err();
    assert!(e.0.contains("EAGLE and EAGLE3 only"), "{}", e.0);
    let lines = lines.map(|l| {
        l.replace("STANDALONE", "EAGLE")
            .replace(r#"topk":"1"#, r#"topk":"4"#)
    });
    let e = derive_of(&lines, Server::Sglang, 48).unwrap_err();
    assert!(e.0.contains("topk 1 only"), "{}", e.0);
}

#[test]
fn vllm_dotted_and_whole_json_forms_read_alike() {
    let k = "speculative-config.num_speculative_tokens";
    let dotted = vec![
        bench(
            &[(k, "1"), ("speculative-config.method", "eagle")],
            1,
            100.0,
        ),
        bench(
            &[(k, "1"), ("speculative-config.method", "eagle")],
            8,
            700.0,
        ),
        bench(
            &[(k, "3"), ("speculative-config.method", "eagle")],
            1,
            200.0,
        ),
        bench(
            &[(k, "3"), ("speculative-config.method", "eagle")],
            8,
            600.0,
        ),
    ];
    let s = derive_of(&dotted, Server::Vllm, 256).unwrap();
    let cfg = crate::schedule::command::vllm_config(&s);
    assert_eq!(
        Value::Object(cfg).to_string(),
        r#"{"method":"eagle","num_speculative_tokens":3,"num_speculative_tokens_per_batch_size":[[1,7,3],[8,256,1]]}"#
    );
    let j = |n: u32| format!(r#"{{"method":"eagle","num_speculative_tokens":{n}}}"#);
    let (j1, j3) = (j(1), j(3));
    let whole = vec![
        bench(&[("speculative-config", &j1)], 1, 100.0),
        bench(&[("speculative-config", &j1)], 8, 700.0),
        bench(&[("speculative-config", &j3)], 1, 200.0),
        bench(&[("speculative-config", &j3)], 8, 600.0),
    ];
    let w = derive_of(&whole, Server::Vllm, 256).unwrap();
    assert_eq!(w.ranges, s.ranges);
    assert_eq!(w.settings, s.settings);
}

#[test]
fn levels_above_the_max_batch_run_at_it() {
    let lines = sglang_lines(&[
        ("1", &[(1, 120.0), (64, 3000.0), (128, 3100.0)]),
        ("4", &[(1, 280.0), (64, 2000.0), (128, 2000.0)]),
    ]);
    let s = derive_of(&lines, Server::Sglang, 48).unwrap();
    assert_eq!(s.levels.len(), 2, "c=128 ran the same batches as c=64");
    assert_eq!(s.levels[1].batch, 48);
    assert_eq!(s.ranges, vec![(1, 47, 4), (48, 48, 1)]);
    assert!(
        s.warnings.iter().any(|w| w.contains("c=128")),
        "{:?}",
        s.warnings
    );
}

#[test]
fn sglang_flags_name_a_candidate_and_the_file() {
    let lines = sglang_lines(&[
        ("1", &[(1, 120.0), (16, 1300.0)]),
        ("4", &[(1, 280.0), (16, 1100.0)]),
    ]);
    let s = derive_of(&lines, Server::Sglang, 48).unwrap();
    let f = crate::schedule::command::sglang_flags(&s, "/etc/a.json");
    assert_eq!(
        f.join(" "),
        "--speculative-algorithm EAGLE3 --speculative-eagle-topk 1 \
         --speculative-num-steps 4 --speculative-adaptive \
         --speculative-adaptive-config /etc/a.json"
    );
    assert_eq!(
        serde_json::to_string(&crate::schedule::command::sglang_config(&s)).unwrap(),
        r#"{"1":{"candidate_steps":[4]},"16":{"candidate_steps":[1]}}"#
    );
}

#[test]
fn max_depth_caps_every_level_at_its_best_within_the_cap() {
    // Best 5 at c=1 and c=4, 4 at c=16, 2 at c=48; capped at 4, the
    // deep levels take 4 (the best <= 4 there), the others keep theirs.
    let lines = sglang_lines(&[
        ("2", &[(1, 200.0), (4, 700.0), (16, 1500.0), (48, 3000.0)]),
        ("4", &[(1, 270.0), (4, 850.0), (16, 1700.0), (48, 2500.0)]),
        ("5", &[(1, 290.0), (4, 900.0), (16, 1500.0), (48, 2000.0)]),
    ]);
    let a = analysis_of(&lines);
    let free = derive(&a, Server::Sglang, &mb(48)).unwrap();
    let ks: Vec<u32> = free.levels.iter().map(|l| l.k).collect();
    assert_eq!((ks, free.k_max), (vec![5, 5, 4, 2], 5));
    let capped = derive_capped(&a, Server::Sglang, &mb(48), Some(4)).unwrap();
    let ks: Vec<u32> = capped.levels.iter().map(|l| l.k).collect();
    assert_eq!((ks, capped.k_max), (vec![4, 4, 4, 2], 4));
    assert!(capped.slots.values().flatten().all(|&k| k <= 4));
    let r = derive_capped(&a, Server::Sglang, &mb(48), Some(2)).unwrap_err();
    assert_eq!(
        r.0,
        "only one depth (2) was measured up to --max-depth 2: nothing to choose between per level"
    );
}
