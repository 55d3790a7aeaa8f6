//! The record contract, checked on real output: a pipeline of the built tools
//! over llm-sim (svc-swap's process manager -> wait-ready -> loadgen ->
//! summarize), plus a failure, and every field of every record they write
//! must be documented in man/sweepkit-records.5 and parse as the shared type.

mod sweep_support;

use sweep_support::records::{bench_two_levels, conforms, one, two_levels, Server};
use sweep_support::sim::eagle;
use testkit::{cmd, run, temp_dir};

#[test]
fn every_tool_writes_documented_records_through_a_real_pipeline() {
    let dir = temp_dir("contract");
    let server = Server::new(&dir, &eagle(1));

    // svc-swap: a swap record with the new config.
    let swap = run(
        cmd(
            "svc-swap",
            &["--spec", &server.spec, "--set", "speculative-num-steps=3"],
        ),
        "",
    );
    swap.expect_code(0);
    let swap_rec = one(&swap, "swap");
    conforms(&swap_rec, "svc-swap");
    assert_eq!(swap_rec["config"]["speculative-num-steps"], "3");

    // wait-ready reads the swap record: watches the new PID, checks the config.
    let url = format!("http://127.0.0.1:{}", server.port);
    let ready = run(
        cmd(
            "wait-ready",
            &[
                "--server",
                "llm-sim",
                &url,
                "--timeout",
                "30s",
                "--expect-config",
                "speculative_num_steps=3",
            ],
        ),
        &swap_rec.to_string(),
    );
    ready.expect_code(0);
    let ready_rec = one(&ready, "ready");
    conforms(&ready_rec, "wait-ready");
    assert_eq!(ready_rec["config"], swap_rec["config"]);
    assert_eq!(ready_rec["upstream"]["type"], "swap");

    // loadgen reads the ready record: one bench record per level.
    let load_args = two_levels(&url, "16");
    let benches = bench_two_levels(&load_args, &ready_rec);
    for b in &benches {
        assert_eq!(b["type"], "bench");
        conforms(b, "loadgen");
        assert_eq!(
            b["config"]["speculative-num-steps"], "3",
            "config carried to bench"
        );
        assert_eq!(b["server"]["simulated"], true);
        assert_eq!(
            b["upstream"]["upstream"]["type"], "swap",
            "whole chain kept"
        );
    }

    // loadgen's CSV reads back (summarize accepts it) with the same columns.
    let mut csv_args = load_args.to_vec();
    csv_args.extend(["--format", "csv", "--no-upstream", "--concurrency", "1"]);
    let csv = run(cmd("loadgen", &csv_args), "");
    csv.expect_code(0);
    let csv_path = dir.join("bench.csv");
    std::fs::write(&csv_path, csv.stdout()).unwrap();
    let from_csv = run(
        cmd(
            "summarize",
            &["--format", "json", csv_path.to_str().unwrap()],
        ),
        "",
    );
    from_csv.expect_code(0);
    conforms(&one(&from_csv, "summary"), "summarize (CSV input)");

    // summarize: a summary record whose pick is the config measured.
    let input: String = benches.iter().map(|b| format!("{b}\n")).collect();
    let summary = run(cmd("summarize", &["--format", "json", "-"]), &input);
    summary.expect_code(0);
    let summary_rec = one(&summary, "summary");
    conforms(&summary_rec, "summarize");
    assert_eq!(summary_rec["simulated"], true);
    assert_eq!(summary_rec["best_config"]["speculative-num-steps"], "3");

    // A failure: a port nobody listens on is unreachable (exit 12), and the
    // failure record passes through loadgen unchanged (exit 4, no load sent).
    let dead = format!("http://127.0.0.1:{}", testkit::free_port());
    let fail = run(
        cmd(
            "wait-ready",
            &[&dead, "--no-stdin", "--unreachable-after", "300ms"],
        ),
        "",
    );
    fail.expect_code(12);
    let fail_rec = one(&fail, "failure");
    conforms(&fail_rec, "wait-ready failure");
    assert_eq!(fail_rec["kind"], "unreachable");
    let passed = run(
        cmd("loadgen", &["--url", &dead, "--concurrency", "1"]),
        &fail.stdout(),
    );
    passed.expect_code(4);
    assert_eq!(one(&passed, "failure")["kind"], "unreachable");

    drop(server);
    let _ = std::fs::remove_dir_all(dir);
}

/// A vLLM sweep of `num_speculative_tokens` (off, 1, 3) at three levels,
/// in the dotted flag form: enough for `summarize --schedule vllm`.
fn vllm_sweep() -> String {
    let mut out = String::new();
    for (k, points) in [
        (None, [80.0, 600.0, 2000.0]),
        (Some(1), [120.0, 700.0, 1900.0]),
        (Some(3), [230.0, 650.0, 1500.0]),
    ] {
        for (c, tok_s) in [1, 8, 32].into_iter().zip(points) {
            let mut cfg = serde_json::json!({"model": "/m"});
            if let Some(k) = k {
                cfg["speculative-config.method"] = "eagle".into();
                cfg["speculative-config.num_speculative_tokens"] = format!("{k}").into();
            }
            let b = serde_json::json!({
                "type": "bench", "schema": 1, "config": cfg,
                "server": {"kind": "vllm", "argv": ["vllm", "serve", "/m", "--max-num-seqs", "64"]},
                "load": {"mode": "closed", "concurrency": c},
                "throughput": {"output_tok_per_s": tok_s},
            });
            out.push_str(&format!("{b}\n"));
        }
    }
    out
}

/// `summarize --schedule` writes a documented `schedule` record for both
/// servers, and summarize reading it back skips it as a known record.
#[test]
fn summarize_schedules_are_documented_records() {
    let dir = temp_dir("contract-schedule");
    let vllm = dir.join("vllm.jsonl");
    std::fs::write(&vllm, vllm_sweep()).unwrap();
    let campaign = testkit::repo_root().join("tests/fixtures/campaign.jsonl");
    let mut written = Vec::new();
    for (server, input) in [("vllm", &vllm), ("sglang", &campaign)] {
        let r = run(
            cmd(
                "summarize",
                &["--schedule", server, input.to_str().unwrap()],
            ),
            "",
        );
        r.expect_code(0);
        let rec = one(&r, "schedule");
        conforms(&rec, &format!("summarize --schedule {server}"));
        assert_eq!(rec["server"], server);
        let key = match server {
            "vllm" => "speculative_config",
            _ => "adaptive_config",
        };
        assert!(rec[key].is_object(), "{rec}");
        let path = dir.join(format!("schedule-{server}.jsonl"));
        std::fs::write(&path, r.stdout()).unwrap();
        written.push(path);
    }
    // Read back beside the results: skipped like any known record.
    let mut args = vec![vllm.to_str().unwrap()];
    args.extend(written.iter().map(|p| p.to_str().unwrap()));
    let back = run(cmd("summarize", &args), "");
    back.expect_code(0);
    let err = back.stderr();
    assert!(!err.contains("unknown record type"), "{err}");
    assert_eq!(err.matches("skipped 1 schedule record").count(), 2, "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
