//! Two workloads, two best depths: llm-sim's acceptance depends on the
//! prompts (`--speculative-accept-by`), loadgen replays two traces whose
//! prompts differ at depths 1 and 4, and summarize never pools them: one
//! pick per workload with `--by workload` (they differ), a refusal (exit
//! 57) for one json pick without it. The trace's bench record is checked
//! against sweepkit-records(5). `sweep --load-arg --trace FILE` replays
//! the trace at every config. Needs `cargo build --workspace --bins`.

mod sweep_support;

use serde_json::Value;
use sweep_support::{dump, records, six_request_trace, stderr, SimExec, SweepArgs};
use testkit::{cmd, run};

/// A plain JSONL trace: 12 requests 40 ms apart, each prompt starting
/// with `word`, 24 output tokens.
fn trace(dir: &std::path::Path, word: &str) -> std::path::PathBuf {
    let text: String = (0..12)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"prompt\": \"{word} problem {i} says what it asks\", \
                 \"output_tokens\": 24}}\n",
                i * 40
            )
        })
        .collect();
    let p = dir.join(format!("{word}.jsonl"));
    std::fs::write(&p, text).unwrap();
    p
}

/// A ready record naming the depth, for loadgen's stdin (the config a
/// sweep would carry).
fn ready(url: &str, depth: u32) -> String {
    format!(
        r#"{{"type":"ready","schema":1,"config":{{"speculative-config.num_speculative_tokens":"{depth}"}},"provenance":{{"tool":"wait-ready","version":"0.1.0","started_at":"2026-12-04T05:00:00.000Z","finished_at":"2026-12-04T05:00:01.000Z"}},"outcome":"ready","reason":"ready","targets":[],"elapsed_s":1.0,"attempts":1,"server":{{"kind":"llm-sim","base_url":"{url}","simulated":true}}}}"#
    ) + "\n"
}

#[test]
fn two_workloads_on_llm_sim_pick_two_depths() {
    let dir = testkit::temp_dir("trace-workloads");
    let traces = [trace(&dir, "math"), trace(&dir, "chat")];
    let mut results = String::new();
    for depth in [1u32, 4] {
        let spec = format!(r#"{{"method": "eagle", "num_speculative_tokens": {depth}}}"#);
        let sim = testkit::Sim::start_ready(&[
            "--load-time",
            "0s",
            "--warmup-time",
            "0s",
            "--personality",
            "vllm",
            "--speculative-config",
            &spec,
            "--speculative-accept-by",
            "math=0.95,chat=0.1",
            "--eos-prob",
            "0",
            // Drafting costs a quarter of a step, as a small draft model
            // does: depth must pay for itself.
            "--draft-step-time",
            "500us",
            "--seed",
            "3",
        ]);
        for t in &traces {
            let r = run(
                cmd(
                    "loadgen",
                    &[
                        "--trace",
                        t.to_str().unwrap(),
                        "--temperature",
                        "0",
                        "--quiet",
                    ],
                ),
                &ready(&sim.base_url(), depth),
            );
            r.expect_code(0);
            results.push_str(&r.stdout());
        }
    }
    let bench: Value = serde_json::from_str(results.lines().next().unwrap()).unwrap();
    let missing = sweepkit_tests::undocumented(&sweepkit_tests::records_source(), &bench);
    assert!(missing.is_empty(), "undocumented: {missing:?} in {bench}");
    assert_eq!(bench["load"]["workload"]["kind"], "jsonl_trace");

    let summarize = |extra: &[&str]| {
        let args = [&["--metric", "tpot_ms.p50"][..], extra].concat();
        run(cmd("summarize", &args), &results)
    };
    let one = summarize(&["--format", "json"]);
    one.expect_code(57);
    assert!(
        one.stderr().contains("the records come from 2 workloads"),
        "{}",
        one.stderr()
    );
    assert_eq!(one.stdout(), "");

    let by = summarize(&["--format", "json", "--by", "workload"]);
    by.expect_code(0);
    let picks: Vec<Value> = by.json_lines();
    assert_eq!(picks.len(), 2, "{}", by.stdout());
    // Which summary is which: the workload digests differ; match them to
    // the bench records' digests.
    let digest = |path: &std::path::Path| sweepkit::sha256::hex(&std::fs::read(path).unwrap());
    let pick_for = |path: &std::path::Path| {
        let d = digest(path);
        picks
            .iter()
            .find(|s| s["workload"].as_str().unwrap().contains(&d[..12]))
            .unwrap_or_else(|| panic!("no pick for {}", path.display()))["best_config"]
            ["speculative-config.num_speculative_tokens"]
            .clone()
    };
    assert_eq!(pick_for(&traces[0]), "4", "math: deep drafts pay");
    assert_eq!(pick_for(&traces[1]), "1", "chat: drafts mostly rejected");

    // Without --by workload: one table per workload, no closing best table.
    let plain = summarize(&["--format", "text"]);
    plain.expect_code(0);
    assert!(plain.stdout().contains("== workload jsonl_trace:"));
    assert!(!plain.stdout().contains("best config per workload"));
    let text = summarize(&["--format", "text", "--by", "workload"]);
    text.expect_code(0);
    let out = text.stdout();
    assert!(out.contains("== workload jsonl_trace:"), "{out}");
    assert!(
        out.contains("best config per workload and level (tpot_ms.p50):"),
        "{out}"
    );
}

#[test]
fn sweep_replays_a_trace_at_every_config() {
    let (spec, url) = SimExec::free().load("100ms").eagle(1).spec("sweep-trace");
    let dir = testkit::temp_dir("sweep-trace");
    let trace = six_request_trace(&dir, "trace.jsonl");
    let args = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .param("speculative-num-steps", "1,3")
        .load(&["--trace", trace.to_str().unwrap(), "--block-size", "32"]);
    let out = args.expect(0);
    // A trace is an open loop: no "concurrency 1 only" note.
    assert!(
        !stderr(&out).contains("concurrency 1 only"),
        "{}",
        dump(&out)
    );
    let recs = records(&spec.results());
    let benches: Vec<&Value> = recs.iter().filter(|r| r["type"] == "bench").collect();
    assert_eq!(benches.len(), 2, "{}", dump(&out));
    let digest = sweepkit::sha256::hex(&std::fs::read(&trace).unwrap());
    for (b, steps) in benches.iter().zip(["1", "3"]) {
        assert_eq!(b["config"]["speculative-num-steps"], steps, "{b}");
        assert_eq!(b["load"]["mode"], "trace", "{b}");
        let w = &b["load"]["workload"];
        assert_eq!(w["sha256"], digest.as_str());
        assert_eq!(w["requests"], 6);
        assert_eq!(w["reused_blocks"], 1);
        assert_eq!(b["counts"]["completed"], 6, "{b}");
    }
}
