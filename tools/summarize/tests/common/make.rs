//! Hand-made records for the decision-view tests: a bench record of one
//! config at one concurrency with the figures a test sets, and failures,
//! swap and ready records.

use serde_json::{json, Value};

fn config(cfg: &[(&str, &str)]) -> Value {
    Value::Object(
        cfg.iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    )
}

/// A bench record at concurrency `c`: output tok/s `tput`, TPOT p50
/// `tpot` ms, TTFT p99 `ttft` ms over 200 requests, achieved concurrency
/// `c`.
pub fn bench(cfg: &[(&str, &str)], c: u64, tput: f64, tpot: f64, ttft: f64) -> Value {
    let stats = |p50: f64, p99: f64| json!({"count": 200, "mean": p50, "p50": p50, "p90": p99, "p95": p99, "p99": p99, "max": p99});
    json!({
        "type": "bench", "schema": 1, "config": config(cfg),
        "provenance": {"tool": "loadgen", "version": "0.1.0", "started_at": "2026-11-28T10:00:00Z",
                        "finished_at": "2026-11-28T10:01:00Z"},
        "server": {"kind": "sglang", "version": "0.5.23", "model": "m", "simulated": false},
        "load": {"mode": "closed", "concurrency": c, "endpoint": "/v1/completions", "stream": true,
                 "warmup_requests": 1, "requests": 200, "ignore_eos": true, "prompts": "synthetic"},
        "counts": {"completed": 200, "failed": 0, "early_stops": 0, "usage_missing": 0,
                   "input_tokens": 25600, "output_tokens": 25600},
        "errors": {},
        "throughput": {"elapsed_s": 60.0, "requests_per_s": tput / 128.0, "output_tok_per_s": tput,
                       "total_tok_per_s": 2.0 * tput, "achieved_concurrency": c as f64},
        "ttft_ms": stats(ttft / 2.0, ttft),
        "tpot_ms": stats(tpot, tpot * 1.2),
        "itl_ms": stats(tpot, tpot * 1.2),
        "chunk_gap_ms": stats(tpot, tpot * 1.2),
        "e2e_ms": stats(ttft + 127.0 * tpot, ttft + 150.0 * tpot),
        "queue_ms": stats(0.1, 0.2),
        "start_lag_ms": stats(0.1, 0.2),
    })
}

/// Put a hardware record listing `gpus` GPUs into a bench record.
pub fn on_host(mut rec: Value, gpus: usize) -> Value {
    let list: Vec<Value> = (0..gpus)
        .map(|_| json!({"name": "NVIDIA H200", "memory_mib": 143771}))
        .collect();
    rec["server"]["host"] = json!({"name": "gpu1", "hostname": "gpu1", "gpus": list,
                                   "fingerprint": format!("{gpus}x NVIDIA H200")});
    rec
}

/// A failure of `cfg` at stage `stage` (level `c` when given).
pub fn failure(cfg: &[(&str, &str)], stage: &str, kind: &str, c: Option<u64>) -> Value {
    let mut f = json!({
        "type": "failure", "schema": 1, "config": config(cfg),
        "provenance": {"tool": "wait-ready", "version": "0.1.0", "started_at": "2026-11-28T10:02:00Z",
                        "finished_at": "2026-11-28T10:03:00Z"},
        "stage": stage, "kind": kind, "class": "config",
        "reason": "CUDA out of memory. Tried to allocate 2.00 GiB",
        "exit_code": 41,
        "log_tail": ["loading weights", "torch.OutOfMemoryError: CUDA out of memory"],
    });
    if let Some(c) = c {
        f["load"] = json!({"mode": "closed", "concurrency": c});
    }
    f
}

/// A swap record of `cfg` whose old server took `stop_s` to stop.
pub fn swap(cfg: &[(&str, &str)], stop_s: f64) -> Value {
    json!({
        "type": "swap", "schema": 1, "config": config(cfg),
        "provenance": {"tool": "svc-swap", "version": "0.1.0", "started_at": "2026-11-28T09:58:00Z",
                        "finished_at": "2026-11-28T09:58:10Z"},
        "target": {"manager": "process", "unit": "x.spec"}, "changes": [],
        "exec_start": ["python", "-m", "sglang.launch_server", "--tp-size", "1"],
        "stop": {"result": "clean", "duration_s": stop_s}, "start": {"started_at": "2026-11-28T09:58:05Z"},
        "method": "spec",
    })
}

/// A ready record of `cfg` ready after `ready_s`.
pub fn ready(cfg: &[(&str, &str)], ready_s: f64) -> Value {
    json!({
        "type": "ready", "schema": 1, "config": config(cfg),
        "provenance": {"tool": "wait-ready", "version": "0.1.0", "started_at": "2026-11-28T09:58:10Z",
                        "finished_at": "2026-11-28T09:59:40Z"},
        "outcome": "ready", "reason": "ready", "targets": [], "time_to_ready_s": ready_s,
        "elapsed_s": ready_s, "attempts": 9,
    })
}

/// A bench record of a validated schedule (`sweep --schedule`): the
/// flags it set as its config, and `schedule` (the derived `schedule`
/// record) upstream of its ready and swap records.
pub fn schedule_bench(c: u64, tput: f64, schedule: &Value) -> Value {
    let mut r = bench(
        &[
            ("speculative-num-steps", "5"),
            ("speculative-adaptive", ""),
            ("speculative-adaptive-config", "/far/adaptive.json"),
        ],
        c,
        tput,
        10.0,
        50.0,
    );
    r["upstream"] = json!({"type": "ready", "upstream": {"type": "swap", "upstream": schedule}});
    r
}

/// Three runs (0.5% apart) each of steps 2, 4, 5 at c=1 / 16 / 64 (the
/// best depth differs by level: 5, 4, 2; the weighted pick is 4), and
/// the schedule's three runs, given per level by `at`.
pub fn schedule_campaign(at: [f64; 3], schedule: &Value) -> String {
    let curve = [
        ("2", [1100.0, 11000.0, 15000.0]),
        ("4", [1500.0, 15000.0, 14000.0]),
        ("5", [1600.0, 13000.0, 12000.0]),
    ];
    let mut recs = Vec::new();
    for rep in [-1.0, 0.0, 1.0] {
        for (n, tput) in curve {
            for (i, c) in [1, 16, 64].into_iter().enumerate() {
                let cfg = [("speculative-num-steps", n)];
                recs.push(bench(&cfg, c, tput[i] * (1.0 + 0.005 * rep), 10.0, 50.0));
            }
        }
        for (i, c) in [1, 16, 64].into_iter().enumerate() {
            recs.push(schedule_bench(c, at[i] * (1.0 + 0.005 * rep), schedule));
        }
    }
    lines(&recs)
}

/// Records as JSON Lines.
pub fn lines(recs: &[Value]) -> String {
    let mut s = String::new();
    for r in recs {
        s.push_str(&r.to_string());
        s.push('\n');
    }
    s
}
