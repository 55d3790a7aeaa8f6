//! End to end on llm-sim's personalities, the built tools in a
//! pipeline: svc-swap (process manager) | wait-ready | loadgen | summarize
//! for `--personality sglang` (native `/generate`, per-request acceptance)
//! and `--personality vllm` (the `--speculative-config` JSON flag edited by
//! svc-swap, checked from the live argv, acceptance from vLLM's counters);
//! acceptance per level equal to what the sim's model makes exact; the
//! 48-request cap warning. Needs `cargo build --workspace` first.

mod sweep_support;

use serde_json::Value;
use sweep_support::records::one;
use sweep_support::sim::{eagle, eagle_words};
use sweep_support::{SimExec, SpecFile};
use testkit::{cmd, run, Run};

/// llm-sim under svc-swap's process manager, with `flags` after the
/// common fast-start ones (deterministic: greedy acceptance, no EOS).
fn sim_spec(tag: &str, flags: &str) -> (SpecFile, String) {
    let sim = SimExec::free().load("100ms").warmup("50ms").probe("0s");
    let sim = sim.flags("--eos-prob 0 --speculative-accept-rate 1.0");
    sim.flags(flags).spec(tag)
}

/// llm-sim on its own (no spec), ready: SGLang's speculative flags at
/// `steps`, then `more`.
fn eagle_sim(steps: u32, more: &[&str]) -> testkit::Sim {
    let mut words = eagle_words(steps);
    words.extend(more.iter().map(|w| w.to_string()));
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    testkit::Sim::start_ready(&words)
}

/// svc-swap `--set EDIT` then wait-ready `READY_ARGS` on its record, then
/// loadgen `LOAD_ARGS` on wait-ready's, then summarize's table: the bench
/// records and the table.
fn pipeline(
    spec: &SpecFile,
    url: &str,
    edit: &str,
    ready_args: &[&str],
    load_args: &[&str],
) -> (Value, Vec<Value>, String) {
    let swap = run(cmd("svc-swap", &["--spec", spec.s(), "--set", edit]), "");
    swap.expect_code(0);
    let swap_rec = one(&swap, "swap");
    let mut a = vec![url, "--timeout", "30s"];
    a.extend_from_slice(ready_args);
    let ready = run(cmd("wait-ready", &a), &swap.stdout());
    ready.expect_code(0);
    let ready_rec = one(&ready, "ready");
    assert_eq!(ready_rec["config"], swap_rec["config"], "config carried");
    let mut l = vec!["--url", url, "--temperature", "0", "--max-tokens", "16"];
    l.extend_from_slice(load_args);
    let bench = run(cmd("loadgen", &l), &ready.stdout());
    bench.expect_code(0);
    let benches = bench.json_lines();
    let table = run(
        cmd("summarize", &["--format", "text", "-"]),
        &bench.stdout(),
    );
    table.expect_code(0);
    (ready_rec, benches, table.stdout())
}

/// Tokens per verify step with every draft accepted: the first token comes
/// from prefill (no verify), the other `max - 1` in steps of `steps + 1`
/// (SGLang's `completion_tokens / spec_verify_ct`,
/// `python/sglang/srt/managers/scheduler_output_processor_mixin.py`).
fn verify_steps(max: u64, steps: u64) -> u64 {
    (max - 1).div_ceil(steps + 1)
}

#[test]
fn sglang_pipeline_swaps_checks_measures_per_request_and_tabulates() {
    let (spec, url) = sim_spec("i11-sglang", &eagle(1));
    let (ready, benches, table) = pipeline(
        &spec,
        &url,
        "speculative-num-steps=3",
        &[
            "--server",
            "sglang",
            "--expect-config",
            "speculative_num_steps=3",
        ],
        &["--endpoint", "generate", "--concurrency", "1,4", "-n", "8"],
    );
    assert_eq!(ready["config_source"], "server_info", "{ready}");
    // The sim names itself (kind llm-sim, simulated) whatever --server says.
    assert_eq!(ready["server"]["simulated"], true, "{ready}");
    // SGLang forces draft tokens to steps + 1 at topk 1 (server_args.py
    // `_handle_speculative_decoding`): the sim resolves it the same way.
    assert_eq!(ready["server"]["args"]["speculative_num_draft_tokens"], 4);
    assert_eq!(benches.len(), 2);
    let per_req = verify_steps(16, 3);
    for b in &benches {
        assert_eq!(b["config"]["speculative-num-steps"], "3");
        assert_eq!(b["counts"]["completed"], 8, "{b}");
        let s = &b["spec"];
        assert_eq!(s["source"], "per_request", "{b}");
        assert_eq!(s["drafts"], 8 * per_req, "this level's verifies only: {s}");
        let want = round3(16.0 / per_req as f64);
        assert_eq!(s["accept_length"].as_f64(), Some(want), "{s}");
    }
    assert!(table.contains("speculative-num-steps=3"), "{table}");
    assert!(table.contains("c=4"), "{table}");
}

#[test]
fn vllm_pipeline_edits_the_json_flag_checks_argv_and_reads_counters() {
    let (spec, url) = sim_spec(
        "i11-vllm",
        r#"--personality vllm --speculative-config '{"method":"eagle","num_speculative_tokens":2}'"#,
    );
    let (ready, benches, table) = pipeline(
        &spec,
        &url,
        r#"speculative-config={"method":"eagle","num_speculative_tokens":3}"#,
        &[
            "--server",
            "vllm",
            "--expect-config",
            "speculative-config.num_speculative_tokens=3",
            "--expect-config",
            "speculative_config.method=eagle",
        ],
        &["--concurrency", "1,2", "-n", "4"],
    );
    assert_eq!(ready["config_source"], "argv", "{ready}");
    assert_eq!(
        ready["server"]["version"], "0.32.0",
        "vLLM's /version: {ready}"
    );
    let live = spec.live_pid().expect("the new instance runs");
    assert_eq!(ready["upstream"]["start"]["main_pid"], live, "{ready}");
    let argv = ready["server"]["argv"].as_array().expect("the live argv");
    let want = r#"{"method":"eagle","num_speculative_tokens":3}"#;
    assert!(argv.iter().any(|w| w == want), "{ready}");
    assert_eq!(benches.len(), 2);
    let per_req = verify_steps(16, 3);
    for b in &benches {
        assert_eq!(b["counts"]["completed"], 4, "{b}");
        let s = &b["spec"];
        assert_eq!(s["source"], "metrics", "vLLM's counter deltas: {b}");
        assert_eq!(s["drafts"], 4 * per_req, "{s}");
        // Each verify proposes 3 and yields its accepted drafts plus one
        // token; the last is cut at max_tokens, so accepted = 15 - verifies.
        assert_eq!(s["draft_tokens"], 4 * per_req * 3, "{s}");
        assert_eq!(s["accepted_tokens"], 4 * (15 - per_req), "{s}");
        let len = 1.0 + (15 - per_req) as f64 / per_req as f64;
        assert_eq!(s["accept_length"].as_f64(), Some(round3(len)), "{s}");
    }
    assert!(table.contains("num_speculative_tokens"), "{table}");
}

/// loadgen's records keep 3 decimals.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A running sim for the loadgen-only checks (no swap needed).
fn loadgen(url: &str, args: &[&str]) -> Run {
    let mut a = vec![
        "--url",
        url,
        "--temperature",
        "0",
        "--max-tokens",
        "16",
        "--no-upstream",
    ];
    a.extend_from_slice(args);
    let r = run(cmd("loadgen", &a), "");
    r.expect_code(0);
    r
}

#[test]
fn generate_acceptance_per_level_is_the_sims_exact_figure() {
    // Every draft rejected: one token per verify step, so the level's
    // accept length is 16 / 15 exactly, whatever ran before it.
    let sim = eagle_sim(2, &["--speculative-accept-rate", "0", "--eos-prob", "0"]);
    let url = sim.base_url();
    let r = loadgen(
        &url,
        &["--endpoint", "generate", "--concurrency", "1,3", "-n", "6"],
    );
    let benches = r.json_lines();
    assert_eq!(benches.len(), 2, "{}", r.stderr());
    for b in &benches {
        let s = &b["spec"];
        assert_eq!(s["source"], "per_request", "{b}");
        assert_eq!(s["drafts"], 6 * 15, "{s}");
        assert_eq!(
            s["accept_length"].as_f64(),
            Some(round3(16.0 / 15.0)),
            "{s}"
        );
    }
}

#[test]
fn speculation_without_a_cap_warns_at_64_not_at_1() {
    let sim = eagle_sim(1, &["--eos-prob", "0"]);
    let url = sim.base_url();
    let r = loadgen(
        &url,
        &[
            "--endpoint",
            "generate",
            "--concurrency",
            "1,64",
            "-n",
            "64",
        ],
    );
    let err = r.stderr();
    let warn = "loadgen: warning: c=64: concurrency 64 exceeds the server's \
                max_running_requests 48: 16 requests queue";
    assert!(err.contains(warn), "{err}");
    assert_eq!(err.matches("max_running_requests").count(), 1, "{err}");
    let benches = r.json_lines();
    assert_eq!(benches.len(), 2);
    assert!(benches[0].get("warnings").is_none(), "{}", benches[0]);
    let w = benches[1]["warnings"].to_string();
    assert!(w.contains("max_running_requests 48"), "{w}");
}
