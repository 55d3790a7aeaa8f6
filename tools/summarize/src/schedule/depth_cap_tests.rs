//! Unit tests of the depth cap on hand-made results with times to first
//! token and E2E latencies: a memory-bound curve is capped where the
//! deepest depth's requests waited for KV, the same throughputs without
//! those waits are not, a compute-bound curve is not, a KV-bound deepest
//! depth that still predicts best stays, `--max-depth` replaces the rule,
//! the rule applies to vLLM's largest k alike, and the servers' own KV
//! figures, where the records carry them, decide instead of the waits.

use super::*;
use crate::analysis::analysis_of_lines as analysis_of;
use serde_json::json;

/// One level of one depth: (concurrency, tok/s, mean TTFT ms, mean E2E ms).
type Point = (u64, f64, f64, f64);

fn config(server: Server, k: u32) -> Value {
    match server {
        Server::Sglang => json!({
            "speculative-algorithm": "EAGLE", "speculative-eagle-topk": "1",
            "speculative-num-steps": k.to_string(),
        }),
        Server::Vllm => json!({
            "speculative-config.method": "eagle",
            "speculative-config.num_speculative_tokens": k.to_string(),
        }),
    }
}

fn lines(server: Server, curve: &[(u32, &[Point])]) -> Vec<String> {
    let mut out = Vec::new();
    for &(k, points) in curve {
        for &(c, tok_s, ttft, e2e) in points {
            out.push(
                json!({
                    "type": "bench", "schema": 1, "config": config(server, k),
                    "server": {"kind": "sim", "max_running_requests": 48},
                    "load": {"mode": "closed", "concurrency": c},
                    "throughput": {"output_tok_per_s": tok_s},
                    "ttft_ms": {"count": 64, "mean": ttft},
                    "e2e_ms": {"count": 64, "mean": e2e},
                })
                .to_string(),
            );
        }
    }
    out
}

fn mb() -> MaxBatch {
    MaxBatch {
        value: 48,
        source: "test".into(),
    }
}

/// llm-sim's campaign curve from one start per value (bench/README.md):
/// 5 best at c=1, 4 within 1% of it at c=4 and best at c=16, 1 at c=48.
/// Static 5 waited for KV at c=16 and c=48, static 4 and 3 at c=48.
fn memory_bound(server: Server) -> Analysis {
    analysis_of(&memory_bound_lines(server))
}

fn memory_bound_lines(server: Server) -> Vec<String> {
    lines(
        server,
        &[
            (
                1,
                &[
                    (1, 847.0, 3.1, 151.0),
                    (4, 3153.0, 5.3, 161.0),
                    (16, 9700.0, 8.6, 209.0),
                    (48, 17732.0, 117.0, 444.0),
                ],
            ),
            (
                3,
                &[
                    (1, 1346.0, 3.8, 95.0),
                    (4, 4312.0, 6.7, 114.0),
                    (16, 14469.0, 9.6, 140.0),
                    (48, 16696.0, 317.0, 463.0),
                ],
            ),
            (
                4,
                &[
                    (1, 1490.0, 4.0, 94.0),
                    (4, 5625.0, 5.3, 89.0),
                    (16, 16256.0, 8.4, 121.0),
                    (48, 16436.0, 353.0, 472.0),
                ],
            ),
            (
                5,
                &[
                    (1, 1573.0, 3.8, 81.0),
                    (4, 5677.0, 5.9, 88.0),
                    (16, 13989.0, 30.4, 140.0),
                    (48, 13408.0, 462.0, 580.0),
                ],
            ),
        ],
    )
}

fn ks(s: &Schedule) -> Vec<u32> {
    s.levels.iter().map(|l| l.k).collect()
}

fn note_of(s: &Schedule) -> Option<&String> {
    s.warnings.iter().find(|w| w.starts_with("depth "))
}

#[test]
fn a_memory_bound_curve_is_capped_below_the_depth_that_waited_for_kv() {
    let a = memory_bound(Server::Sglang);
    let free = schedule::derive(&a, Server::Sglang, &mb()).unwrap();
    assert_eq!((ks(&free), deepest(&free)), (vec![5, 4, 4, 1], 5));
    let s = derive(&a, Server::Sglang, &mb(), None).unwrap();
    assert_eq!((ks(&s), deepest(&s)), (vec![4, 4, 4, 1], 4));
    let slots: Vec<(u64, Vec<u32>)> = s.slots.clone().into_iter().collect();
    assert_eq!(
        slots,
        vec![(1, vec![4]), (4, vec![4]), (16, vec![4]), (48, vec![1])]
    );
    // Uncapped: 5 runs like static 5 at c=16 and c=48 (0.902); capped at 4:
    // 4 everywhere but c=48, where 4 waited for KV too (0.966); at 3, 0.862.
    assert_eq!(
        s.warnings[0],
        "depth capped at 4: static 5 is KV-bound where the uncapped schedule drafts \
         less (its requests waited longer for a first token, by 16% of its latency at \
         c=16 (depth 4 drafted there), 59% of its latency at c=48 (depth 1 drafted \
         there), inferred from waits), and both servers reserve speculative KV for a schedule's deepest \
         depth at every load (SGLang get_alloc_len_per_decode, vLLM \
         num_lookahead_tokens); predicted weighted score capped at 3 0.862, capped at 4 \
         0.966, uncapped (deepest 5) 0.902 (summarize(1) SCHEDULE, Depth cap)"
    );
}

#[test]
fn a_wait_under_five_percent_of_the_latency_is_not_kv_bound() {
    // Static 5's first tokens at c=16 now wait 3.4% of its latency longer
    // than depth 4's (under KV_WAIT_SHARE): only c=48 counts.
    let mut lines = lines(Server::Sglang, &[(5, &[(16, 13989.0, 13.0, 140.0)])]);
    let mut all: Vec<String> = memory_bound_lines(Server::Sglang)
        .into_iter()
        .filter(|l| {
            !(l.contains("\"speculative-num-steps\":\"5\"") && l.contains("\"concurrency\":16"))
        })
        .collect();
    all.append(&mut lines);
    let s = derive(&analysis_of(&all), Server::Sglang, &mb(), None).unwrap();
    assert_eq!(deepest(&s), 4);
    let note = note_of(&s).unwrap();
    assert!(
        note.contains(
            "by 59% of its latency at c=48 (depth 1 drafted there), inferred from waits)"
        ),
        "{note}"
    );
    assert!(!note.contains("at c=16"), "{note}");
}

#[test]
fn the_same_throughputs_without_waits_are_not_capped() {
    // Each depth's first token takes as long at every level (a longer
    // draft prefill, no queue): nothing says memory, the schedule stands.
    let flat = |k: u32, pts: [(u64, f64); 4]| -> Vec<Point> {
        pts.iter()
            .map(|&(c, x)| (c, x, 3.0 + k as f64, 100.0))
            .collect()
    };
    let c = [1, 4, 16, 48];
    let curve = |xs: [f64; 4]| -> [(u64, f64); 4] { std::array::from_fn(|i| (c[i], xs[i])) };
    let p1 = flat(1, curve([847.0, 3153.0, 9700.0, 17732.0]));
    let p4 = flat(4, curve([1490.0, 5625.0, 16256.0, 16436.0]));
    let p5 = flat(5, curve([1573.0, 5677.0, 13989.0, 13408.0]));
    let a = analysis_of(&lines(Server::Sglang, &[(1, &p1), (4, &p4), (5, &p5)]));
    let s = derive(&a, Server::Sglang, &mb(), None).unwrap();
    assert_eq!((ks(&s), deepest(&s)), (vec![5, 4, 4, 1], 5));
    assert_eq!(note_of(&s), None, "{:?}", s.warnings);
}

#[test]
fn a_compute_bound_curve_keeps_its_schedule() {
    // tests/tests/sweep_schedule.rs keep_winner's curve: k=1 best at c=1
    // (4 loses on draft time there, with no queue), 4 best at c=32.
    let a = analysis_of(&lines(
        Server::Vllm,
        &[
            (1, &[(1, 574.0, 3.0, 220.0), (32, 2994.0, 9.0, 1360.0)]),
            (4, &[(1, 369.0, 6.0, 340.0), (32, 3976.0, 12.0, 1020.0)]),
        ],
    ));
    let s = derive(&a, Server::Vllm, &mb(), None).unwrap();
    assert_eq!((ks(&s), s.k_max), (vec![1, 4], 4));
    assert_eq!(note_of(&s), None, "{:?}", s.warnings);
}

#[test]
fn a_kv_bound_deepest_depth_that_still_predicts_best_is_kept_and_said() {
    // 5 waited for KV at c=48 but lost only 1.3% there; capped at 4 the
    // schedule would give up c=1 to c=16.
    let a = analysis_of(&lines(
        Server::Sglang,
        &[
            (
                1,
                &[
                    (1, 847.0, 3.0, 150.0),
                    (16, 9700.0, 8.0, 209.0),
                    (48, 17732.0, 117.0, 444.0),
                ],
            ),
            (
                4,
                &[
                    (1, 1300.0, 3.0, 94.0),
                    (16, 14000.0, 8.0, 121.0),
                    (48, 17000.0, 120.0, 472.0),
                ],
            ),
            (
                5,
                &[
                    (1, 1573.0, 3.0, 81.0),
                    (16, 16256.0, 8.0, 120.0),
                    (48, 17500.0, 300.0, 500.0),
                ],
            ),
        ],
    ));
    let s = derive(&a, Server::Sglang, &mb(), None).unwrap();
    assert_eq!((ks(&s), deepest(&s)), (vec![5, 5, 1], 5));
    let note = note_of(&s).unwrap();
    assert!(
        note.starts_with(
            "depth not capped: static 5 is KV-bound where the uncapped schedule drafts \
             less (its requests waited longer for a first token, by 37% of its latency \
             at c=48 (depth 1 drafted there), inferred from waits)"
        ),
        "{note}"
    );
    assert!(
        note.ends_with(
            "capped at 4 0.896, uncapped (deepest 5) 0.996 (summarize(1) SCHEDULE, Depth cap)"
        ),
        "{note}"
    );
}

#[test]
fn max_depth_replaces_the_rule() {
    let a = memory_bound(Server::Sglang);
    let s = derive(&a, Server::Sglang, &mb(), Some(5)).unwrap();
    assert_eq!(ks(&s), vec![5, 4, 4, 1]);
    assert_eq!(note_of(&s), None);
    let s = derive(&a, Server::Sglang, &mb(), Some(3)).unwrap();
    assert_eq!(ks(&s), vec![3, 3, 3, 1]);
}

#[test]
fn vllm_caps_its_largest_k_alike() {
    let a = memory_bound(Server::Vllm);
    let s = derive(&a, Server::Vllm, &mb(), None).unwrap();
    assert_eq!((ks(&s), s.k_max), (vec![4, 4, 4, 1], 4));
    assert_eq!(s.ranges, vec![(1, 47, 4), (48, 48, 1)]);
    assert!(note_of(&s).unwrap().starts_with("depth capped at 4: "));
}

#[test]
fn a_cap_that_leaves_one_value_is_no_candidate() {
    // Only 4 and 5: capped at 4 the schedule is static 4, so the
    // uncapped one stays, and the note says it is KV-bound.
    let a = analysis_of(&lines(
        Server::Sglang,
        &[
            (4, &[(1, 1490.0, 4.0, 94.0), (16, 16256.0, 8.4, 121.0)]),
            (5, &[(1, 1573.0, 3.8, 81.0), (16, 13989.0, 30.4, 140.0)]),
        ],
    ));
    let s = derive(&a, Server::Sglang, &mb(), None).unwrap();
    assert_eq!(ks(&s), vec![5, 4]);
    let note = note_of(&s).unwrap();
    assert!(
        note.starts_with("depth not capped: static 5 is KV-bound"),
        "{note}"
    );
    assert!(
        note.ends_with("score uncapped (deepest 5) 0.930 (summarize(1) SCHEDULE, Depth cap)"),
        "{note}"
    );
}

/// `lines` with each record's `server_metrics` from `kv(k, c)`: (KV peak,
/// mean waiting), None for a record without the block.
fn with_server(lines: Vec<String>, kv: impl Fn(u32, u64) -> Option<(f64, f64)>) -> Vec<String> {
    lines
        .into_iter()
        .map(|l| {
            let mut v: Value = serde_json::from_str(&l).unwrap();
            let k: u32 = v["config"]["speculative-num-steps"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            let c = v["load"]["concurrency"].as_u64().unwrap();
            if let Some((peak, waiting)) = kv(k, c) {
                let g =
                    |x: f64, src: &str| json!({"mean": x, "peak": x, "samples": 5, "source": src});
                v["server_metrics"] = json!({
                    "scrapes": 7, "interval_s": 1.0, "gauge_window": "steady",
                    "kv_cache_usage_ratio": g(peak, "sglang:token_usage"),
                    "waiting_requests": g(waiting, "sglang:num_queue_reqs"),
                });
            }
            v.to_string()
        })
        .collect()
}

#[test]
fn measured_kv_decides_over_the_waits() {
    // The waits say static 5 was KV-bound at c=16 and c=48; the servers
    // say no KV cache ever filled: nothing is capped.
    let roomy = with_server(memory_bound_lines(Server::Sglang), |_, _| Some((0.6, 0.0)));
    let s = derive(&analysis_of(&roomy), Server::Sglang, &mb(), None).unwrap();
    assert_eq!(deepest(&s), 5);
    assert_eq!(note_of(&s), None, "{:?}", s.warnings);
    // Static 5's first tokens at c=16 wait only 3.4% longer than depth
    // 4's (under KV_WAIT_SHARE), but its server was full with requests
    // queued there and depth 4's was not: KV-bound, by the server.
    let mut all: Vec<String> = memory_bound_lines(Server::Sglang)
        .into_iter()
        .filter(|l| {
            !(l.contains("\"speculative-num-steps\":\"5\"") && l.contains("\"concurrency\":16"))
        })
        .collect();
    all.extend(lines(Server::Sglang, &[(5, &[(16, 13989.0, 13.0, 140.0)])]));
    let full = with_server(all, |k, c| match (k, c) {
        (5, 16) => Some((0.99, 3.2)),
        (_, 48) => Some((1.0, 20.0)),
        _ => Some((0.7, 0.0)),
    });
    let s = derive(&analysis_of(&full), Server::Sglang, &mb(), None).unwrap();
    assert_eq!(deepest(&s), 4);
    let note = note_of(&s).unwrap();
    testkit::assert_contains(
        note,
        "measured by the servers: speculative-num-steps=5 at c=16: KV cache 99% peak, 3.2 \
         waiting on average; speculative-num-steps=4: 70%, 0",
    );
    // Every depth was full at c=48: not one more than another there.
    assert!(!note.contains("at c=48"), "{note}");
    assert!(!note.contains("inferred from waits"), "{note}");
}
