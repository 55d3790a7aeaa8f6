//! The loop on a real SGLang (installed by `make real-peer` into
//! $SWEEPKIT_CACHE, on CPU through its pure-torch paths, with a stand-in
//! sgl_kernel that logs and raises on any call): a sweep over
//! `--max-running-requests` with `--api-key` set, wait-ready through the
//! closed port and the generating health check, the live config checked
//! from /server_info with the key, loadgen's tokens equal to SGLang's own
//! counter, the key in no record and no stderr, and steps-without-topk
//! refused by svc-swap's pre-flight while the real server runs on, and,
//! with pre-flight bypassed, recorded as `crashed_at_load` with SGLang's
//! own error line. `loadgen --endpoint generate` (SGLang's native API) is
//! checked against the server's counter as chat is. One value of the sweep
//! runs through a systemd unit in a testkit container (testkit::realunit)
//! instead of a second start of the process spec.
//! A missing cache fails the test.

mod sweep_support;

use std::path::{Path, PathBuf};

use serde_json::Value;
use sweep_support::{dump, ready_upstream, records, sweep, sweep_behind, with_config, SpecFile};
use testkit::realpeer::{http, metric_sum, tail, KillGroupOnDrop, Peers};
use testkit::realunit::{UnitHost, PORT};

const KEY: &str = "sk-sweepkit-real-sglang-7f3a9c";
const MRR: &str = "max-running-requests";
const MAX_TOKENS: u64 = 32;

/// The SGLang command line. `--max-total-tokens`: without it SGLang
/// reserves 15 GB of KV.
fn sglang_exec(p: &Peers, port: u16) -> String {
    format!(
        "{} -m sglang.launch_server --model-path {} --device cpu --host 127.0.0.1 \
         --port {port} --max-total-tokens 32768 --api-key {KEY} --enable-metrics \
         --{MRR} 4",
        p.get("sglang_python").display(),
        p.get("hf_target").display(),
    )
}

/// Its environment. `SGLANG_USE_CPU_ENGINE=1`: `--device cpu` alone is
/// ignored; the stand-in sgl_kernel first on the path, logging to `log`.
fn sglang_env(p: &Peers, log: &str) -> [(&'static str, String); 3] {
    [
        ("SGLANG_USE_CPU_ENGINE", "1".to_string()),
        ("PYTHONPATH", p.get("sgl_kernel_stub").display().to_string()),
        ("SWEEPKIT_KERNEL_STUB_LOG", log.to_string()),
    ]
}

/// The process spec. The environment goes in `Environment=`, not `env`
/// in ExecStart: svc-swap checks the pid's /proc cmdline against ExecStart.
fn sglang_spec(p: &Peers, port: u16, stub_log: &Path) -> SpecFile {
    let spec = SpecFile::new("real-sglang", &sglang_exec(p, port), port);
    let env = sglang_env(p, stub_log.to_str().unwrap());
    let words: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let mut text = std::fs::read_to_string(&spec.path).unwrap();
    text.push_str(&format!("Environment={}\n", words.join(" ")));
    std::fs::write(&spec.path, text).unwrap();
    spec
}

/// The stand-in sgl_kernel logs every call: a called kernel fails the test.
fn assert_no_kernel_called(stub_log: &Path, log: &str) {
    let calls = std::fs::read_to_string(stub_log).unwrap_or_default();
    assert!(
        calls.is_empty() && !log.contains("sgl_kernel stand-in called"),
        "SGLang reached the sgl_kernel stand-in:\n{calls}\n{}",
        tail(log)
    );
}

/// The sweep's arguments after its target (`--spec`/`--unit`, `--url`).
fn sweep_args<'a>(target: &[&'a str], results: &'a str) -> Vec<&'a str> {
    let mut args = target.to_vec();
    args.extend([
        "--server",
        "sglang",
        "--results",
        results,
        "--ready-timeout",
        "15m",
        "--concurrency",
        "2",
        "--swap-arg",
        "--force-kill",
        "--ready-arg",
        "--deep",
        "--ready-arg",
        "--api-key",
        "--ready-arg",
        KEY,
        "--load-arg",
        "--api-key",
        "--load-arg",
        KEY,
        "--load-arg",
        "-n",
        "--load-arg",
        "4",
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "32",
        "--load-arg",
        "--ignore-eos",
        "--load-arg",
        "--warmup",
        "--load-arg",
        "0",
        "--load-arg",
        "--scrape-interval",
        "--load-arg",
        "200ms",
        "--no-restore",
    ]);
    args
}

/// The checks each bench record passes, from a process spec or a unit.
fn check_bench(recs: &[Value], v: &str, ctx: &dyn Fn() -> String) {
    let b = with_config(recs, "bench", MRR, v);
    assert_eq!(b.len(), 1, "{MRR}={v}: one bench record\n{}", ctx());
    let r = b[0];
    assert_eq!(r["server"]["kind"], "sglang", "{r}");
    assert_eq!(r["counts"]["completed"], 4, "{r}");
    assert_eq!(
        r["counts"]["output_tokens"].as_u64(),
        Some(4 * MAX_TOKENS),
        "{r}"
    );
    // wait-ready's record rides along: SGLang's port stays refused while
    // it loads, then /health (and --deep's /health_generate) lag; only a
    // matching /server_info (read with the key) gets to a bench record.
    let (w, open, ready) = ready_upstream(r);
    assert_eq!(w["config_source"], "server_info", "{w}");
    assert!(open > 1.0 && ready >= open, "{w}");
    // Start-up cost per way of running SGLang, for the CI time budget.
    let how = &w["upstream"]["target"]["manager"];
    eprintln!("real_sglang: {MRR}={v} via {how}: ready after {ready:.1} s");
    // --enable-metrics: SGLang's gauges with their sources
    // (srt/observability/metrics_collector.py SchedulerMetricsCollector),
    // and the capacity from /server_info (read with the key, never kept).
    let m = &r["server_metrics"];
    for (f, src) in [
        ("kv_cache_usage_ratio", "sglang:token_usage"),
        ("running_requests", "sglang:num_running_reqs"),
        ("waiting_requests", "sglang:num_queue_reqs"),
        ("prefix_cache_hit_rate", "sglang:cache_hit_rate"),
    ] {
        assert_eq!(m[f]["source"], src, "{r}");
    }
    let l = &r["server"]["limits"];
    assert_eq!(l["kv_tokens"], 32768, "{l}");
    assert_eq!(l["max_running_requests"].to_string(), v, "{l}");
}

/// One SGLang start per way of running it: the process spec measures
/// `--max-running-requests` 2 (and serves the counter, pre-flight and
/// crash checks), the systemd unit in a container measures 6.
#[test]
fn sweep_on_real_sglang_with_an_api_key() {
    let p = Peers::load(&["sglang_python", "sgl_kernel_stub", "hf_target"]);
    let port = testkit::realpeer::server_port();
    let dir = testkit::temp_dir("real-sglang-stub");
    let stub_log: PathBuf = dir.join("sgl_kernel-calls.log");
    let spec = sglang_spec(&p, port, &stub_log);
    let group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let res = results.to_str().unwrap();
    let mut args = sweep_args(&["--spec", spec.s(), "--url", &url], res);
    args.extend(["--param", MRR, "--values", "2", "--expect-config"]);
    let out = sweep(&args).output().unwrap();
    let ctx = || format!("{}\n--- server log\n{}", dump(&out), tail(&spec.log()));
    assert_eq!(out.status.code(), Some(0), "{}", ctx());
    check_bench(&records(&results), "2", &ctx);
    tokens_match_the_server_counter(port, "chat");
    // SGLang's native /generate (loadgen --endpoint generate) counts the
    // same tokens in the same counter.
    tokens_match_the_server_counter(port, "generate");
    assert_no_kernel_called(&stub_log, &spec.log());
    preflight_refuses_steps_without_topk(&spec, &url);
    let mut printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let crash_results = crash_without_preflight(&spec, &url, &mut printed);
    drop(group); // one real server at a time: the unit's comes next
    let (unit_results, unit_printed) = unit_sweep(&p, &spec.dir);
    printed.push_str(&unit_printed);
    let _ = std::fs::remove_dir_all(&dir);
    // Last, so every check above runs: the key must appear nowhere sweepkit
    // wrote (records, tables, stderr). On main, loadgen copies SGLang's
    // /server_info (which holds the key in clear) into `server.args`.
    let mut leaks = vec![];
    for f in [&results, &crash_results, &unit_results] {
        let text = std::fs::read_to_string(f).unwrap();
        for (i, l) in text.lines().enumerate() {
            let at = format!("{}: line {}: ", f.display(), i + 1);
            key_paths(&serde_json::from_str(l).unwrap(), &at, &mut leaks);
        }
    }
    assert!(
        leaks.is_empty(),
        "API key in the results at:\n{}",
        leaks.join("\n")
    );
    assert!(
        !printed.contains(KEY),
        "API key in sweep's output:\n{printed}"
    );
}

/// EAGLE with steps but no topk, pre-flight bypassed, so the config
/// reaches SGLang, whose argument check compares the unset topk with 1
/// (sglang/srt/arg_groups/speculative_hook.py _handle_eagle_family:
/// `cfg.speculative_eagle_topk > 1`): TypeError, exit 1. Without
/// --speculative-algorithm SGLang ignores the speculative flags
/// (handle_speculative_decoding) and serves: seen here. Another set of
/// --param is another results file (its origin record is per file).
fn crash_without_preflight(spec: &SpecFile, url: &str, printed: &mut String) -> PathBuf {
    let crash_results = spec.results().with_extension("crash.jsonl");
    let crash_res = crash_results.to_str().unwrap();
    let mut args = sweep_args(&["--spec", spec.s(), "--url", url], crash_res);
    args.extend(["--swap-arg", "--no-preflight"]);
    args.extend(["--param-new", "speculative-algorithm", "--values", "EAGLE"]);
    args.extend(["--param-new", "speculative-num-steps", "--values", "2"]);
    let out = sweep(&args).output().unwrap();
    let recs = records(&crash_results);
    let f = with_config(&recs, "failure", "speculative-num-steps", "2");
    assert_eq!(f.len(), 1, "{}\n{}", dump(&out), tail(&spec.log()));
    assert_eq!(f[0]["kind"], "crashed_at_load", "{}", f[0]);
    let said = format!("{} {}", f[0]["reason"], f[0]["log_tail"]);
    assert!(
        said.contains("TypeError"),
        "SGLang's own error line: {}",
        f[0]
    );
    printed.push_str(&String::from_utf8_lossy(&out.stderr));
    crash_results
}

/// The sweep through a systemd unit in a container: svc-swap edits the
/// unit's ExecStart (the key in it) through `nsenter -t PID -a`, wait-ready
/// watches the unit and checks the live config from /server_info with the
/// key. Returns the results file and what the sweep printed.
fn unit_sweep(p: &Peers, dir: &Path) -> (PathBuf, String) {
    const STUB_LOG: &str = "/var/tmp/sgl_kernel-calls.log";
    let env = sglang_env(p, STUB_LOG);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let python = p.get("sglang_python");
    let host = UnitHost::install(p, &python, "sglang", &sglang_exec(p, PORT), &env);
    let results = dir.join("unit-results.jsonl");
    let target = host.sweep_target();
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    let mut args = sweep_args(&target, results.to_str().unwrap());
    args.extend(["--param", MRR, "--values", "6", "--expect-config"]);
    let prefix = host.net_prefix();
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let out = sweep_behind(&prefix, &args).output().unwrap();
    let journal = host.journal(200);
    let ctx = || format!("{}\n--- journal\n{}", dump(&out), tail(&journal));
    assert_eq!(out.status.code(), Some(0), "{}", ctx());
    let recs = records(&results);
    check_bench(&recs, "6", &ctx);
    let b = with_config(&recs, "bench", MRR, "6");
    let w = &b[0]["upstream"];
    assert_eq!(w["upstream"]["target"]["manager"], "systemd", "{w}");
    assert!(
        w["via"]
            .as_str()
            .unwrap_or("")
            .contains(&host.c.exec_prefix()),
        "wait-ready watched the unit through the prefix: {w}"
    );
    let calls = host.read(STUB_LOG);
    assert!(
        calls.is_empty() && !journal.contains("sgl_kernel stand-in called"),
        "SGLang in the unit reached the sgl_kernel stand-in:\n{calls}\n{}",
        tail(&journal)
    );
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (results, printed)
}

/// loadgen's output tokens equal the delta of SGLang's own counter.
fn tokens_match_the_server_counter(port: u16, endpoint: &str) {
    let auth = format!("Bearer {KEY}");
    let scrape = || {
        let (st, _, body) =
            http(port, "GET", "/metrics", &[("Authorization", &auth)], None).expect("/metrics");
        assert_eq!(st, 200, "{body}");
        body
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
                "--api-key",
                KEY,
                "-n",
                "3",
                "-c",
                "1",
                "--max-tokens",
                &n,
                "--ignore-eos",
                "--warmup",
                "0",
                "--endpoint",
                endpoint,
            ],
        ),
        "",
    );
    run.expect_code(0);
    assert!(!run.stderr().contains(KEY), "{}", run.stderr());
    let after = scrape();
    let r = &run.json_lines()[0];
    let m = "sglang:generation_tokens_total";
    let delta = metric_sum(&after, m).unwrap_or_else(|| panic!("{m}:\n{after}"))
        - metric_sum(&before, m).unwrap_or(0.0);
    assert_eq!(
        r["counts"]["output_tokens"].as_u64(),
        Some(3 * MAX_TOKENS),
        "{endpoint}: {r}"
    );
    assert_eq!(
        delta as u64,
        3 * MAX_TOKENS,
        "{endpoint}: SGLang's {m} delta"
    );
}

/// With pre-flight on, the steps-without-topk config is refused before
/// svc-swap stops anything: the real server keeps running untouched.
fn preflight_refuses_steps_without_topk(spec: &SpecFile, url: &str) {
    let pid = spec.live_pid().expect("SGLang running after the sweep");
    let original = spec.exec_start();
    let results = spec.results().with_extension("preflight.jsonl");
    let mut args = sweep_args(
        &["--spec", spec.s(), "--url", url],
        results.to_str().unwrap(),
    );
    args.extend(["--param-new", "speculative-algorithm", "--values", "EAGLE"]);
    args.extend(["--param-new", "speculative-num-steps", "--values", "2"]);
    let out = sweep(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(41), "{}", dump(&out));
    let recs = records(&results);
    assert_eq!(recs.len(), 1, "{}", dump(&out));
    assert_eq!(recs[0]["kind"], "preflight_rejected", "{}", recs[0]);
    let reason = recs[0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.contains("without --speculative-eagle-topk"),
        "{reason}"
    );
    assert_eq!(spec.live_pid(), Some(pid), "SGLang was never restarted");
    assert_eq!(spec.exec_start(), original, "the spec was never edited");
}

/// The JSON paths under `v` whose strings hold the API key.
fn key_paths(v: &serde_json::Value, at: &str, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) if s.contains(KEY) => out.push(at.to_string()),
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                key_paths(x, &format!("{at}[{i}]"), out);
            }
        }
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                key_paths(x, &format!("{at}.{k}"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn key_paths_names_each_place_the_key_is() {
    let v = serde_json::json!({"a": [1, format!("--api-key {KEY}")], "b": {"c": KEY, "d": "x"}});
    let mut out = vec![];
    key_paths(&v, "line 1: ", &mut out);
    assert_eq!(out, ["line 1: .a[1]", "line 1: .b.c"]);
}

/// svc-swap, then wait-ready with its record on stdin.
fn swap_then_ready(swap: &[&str], ready: &[&str]) -> (testkit::Run, Option<testkit::Run>) {
    let mut c = std::process::Command::new(testkit::bin("svc-swap"));
    c.args(swap);
    let s = testkit::run(c, "");
    if s.code() != 0 {
        return (s, None);
    }
    let mut w = std::process::Command::new(testkit::bin("wait-ready"));
    w.args(["--server", "sglang", "--api-key", KEY, "--timeout", "10m"])
        .args(ready);
    let r = testkit::run(w, &s.stdout());
    (s, Some(r))
}

/// SGLang's own start-up check of the adaptive flags (issue 23 item 5),
/// on the real SGLang 0.5.23 (CPU): steps outside the adaptive config's
/// candidates is SGLang's ValueError at argument resolution
/// (sglang/srt/arg_groups/speculative_hook.py:1417
/// `_init_adaptive_speculative_params`), before any model load: svc-swap's
/// pre-flight refuses it with the same line (exit 26, nothing started);
/// bypassed in a sweep, wait-ready sees `crashed_at_load` with that line
/// and the sweep records it as the config's failure. The
/// fall-back (`_maybe_disable_adaptive`, :1374) warns and serves: with no
/// EAGLE algorithm SGLang logs "speculative_adaptive disabled" and serves
/// static, /server_info reporting `speculative_adaptive: false`.
/// Speculative decoding itself (EAGLE with topk 1 running adaptive steps)
/// needs a GPU: the CPU build serves no draft model, so the fall-back seen
/// here is the no-algorithm one (topk > 1 is checked by pre-flight and on
/// llm-sim: tools/svc-swap/tests/preflight_schedule.rs).
#[test]
fn adaptive_flags_on_real_sglang() {
    let p = Peers::load(&["sglang_python", "sgl_kernel_stub", "hf_target", "hf_draft"]);
    let port = testkit::realpeer::server_port();
    let dir = testkit::temp_dir("real-sglang-adaptive");
    let stub_log: PathBuf = dir.join("sgl_kernel-calls.log");
    let spec = sglang_spec(&p, port, &stub_log);
    let _group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    let cfg = dir.join("adaptive.json");
    std::fs::write(
        &cfg,
        "{\"1\": {\"candidate_steps\": [1, 3]}, \"8\": {\"candidate_steps\": [1]}}\n",
    )
    .unwrap();
    let set_file = format!("speculative-adaptive-config={}", cfg.display());
    let draft = format!(
        "speculative-draft-model-path={}",
        p.get("hf_draft").display()
    );
    let bad = [
        "--spec",
        spec.s(),
        "--force-kill",
        "--set-file",
        &set_file,
        "--set",
        "speculative-adaptive",
        "--set",
        "speculative-algorithm=EAGLE",
        "--set",
        &draft,
        "--set",
        "speculative-eagle-topk=1",
        "--set",
        "speculative-num-steps=2",
    ];
    const LINE: &str = "ValueError: --speculative-num-steps=2 is not in the adaptive config \
                        candidate_steps [1, 3]. Pass one of those values.";
    let (s, _) = swap_then_ready(&bad, &[]);
    s.expect_code(26);
    assert!(s.stderr().contains(LINE), "{}", s.stderr());
    assert!(spec.live_pid().is_none(), "pre-flight started nothing");
    // Bypassed, through the sweep (svc-swap | wait-ready, its record kept):
    // the real SGLang refuses after its imports, before a load, and the
    // config is a crashed_at_load failure with SGLang's line.
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let mut args = sweep_args(
        &["--spec", spec.s(), "--url", &url],
        results.to_str().unwrap(),
    );
    for w in [
        "--no-preflight",
        "--set-file",
        &set_file,
        "--set",
        "speculative-adaptive",
    ] {
        args.extend(["--swap-arg", w]);
    }
    let draft_path = p.get("hf_draft").display().to_string();
    for (k, v) in [
        ("speculative-algorithm", "EAGLE"),
        ("speculative-draft-model-path", draft_path.as_str()),
        ("speculative-eagle-topk", "1"),
        ("speculative-num-steps", "2"),
    ] {
        args.extend(["--param-new", k, "--values", v]);
    }
    let out = sweep(&args).output().unwrap();
    let recs = records(&results);
    let f = with_config(&recs, "failure", "speculative-num-steps", "2");
    assert_eq!(f.len(), 1, "{}\n{}", dump(&out), tail(&spec.log()));
    let f = f[0];
    assert_eq!(f["kind"], "crashed_at_load", "{f}\n{}", tail(&spec.log()));
    assert_eq!(f["stage"], "ready", "{f}");
    let said = format!("{} {}", f["reason"], f["log_tail"]);
    assert!(said.contains(LINE), "SGLang's own line: {f}");
    assert!(with_config(&recs, "bench", "speculative-num-steps", "2").is_empty());
    // The fall-back: adaptive without an EAGLE algorithm warns and serves.
    let fallback = [
        "--spec",
        spec.s(),
        "--force-kill",
        "--unset",
        "speculative-algorithm",
        "--unset",
        "speculative-draft-model-path",
        "--unset",
        "speculative-eagle-topk",
        "--unset",
        "speculative-num-steps",
    ];
    let (s, r) = swap_then_ready(
        &fallback,
        &["--expect-config", "speculative-adaptive=false"],
    );
    s.expect_code(0);
    let pf = s.json_lines()[0]["preflight"].to_string();
    assert!(
        pf.contains("speculative_algorithm=None (only EAGLE/EAGLE3"),
        "{pf}"
    );
    let r = r.unwrap();
    r.expect_code(0);
    let log = spec.log();
    assert!(
        log.contains("speculative_adaptive disabled: speculative_algorithm=None")
            && log.contains("Falling back to static speculative params."),
        "SGLang's warning:\n{}",
        tail(&log)
    );
    assert_no_kernel_called(&stub_log, &log);
    let _ = std::fs::remove_dir_all(&dir);
}
