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
//! checked against the server's counter as chat is.
//! A missing cache fails the test.

mod sweep_support;

use std::path::{Path, PathBuf};

use sweep_support::{dump, records, sweep, with_config, SpecFile};
use testkit::realpeer::{http, metric_sum, tail, KillGroupOnDrop, Peers};

const KEY: &str = "sk-sweepkit-real-sglang-7f3a9c";
const MRR: &str = "max-running-requests";
const MAX_TOKENS: u64 = 32;

/// The process spec. `SGLANG_USE_CPU_ENGINE=1`: `--device cpu` alone is
/// ignored; `--max-total-tokens`: without it SGLang reserves 15 GB of KV.
/// The environment goes in `Environment=`, not `env` in ExecStart: svc-swap
/// checks the pid's /proc cmdline against ExecStart.
fn sglang_spec(p: &Peers, port: u16, stub_log: &Path) -> SpecFile {
    let exec = format!(
        "{} -m sglang.launch_server --model-path {} --device cpu --host 127.0.0.1 \
         --port {port} --max-total-tokens 32768 --api-key {KEY} --enable-metrics \
         --{MRR} 4",
        p.get("sglang_python").display(),
        p.get("hf_target").display(),
    );
    let spec = SpecFile::new("real-sglang", &exec, port);
    let mut text = std::fs::read_to_string(&spec.path).unwrap();
    text.push_str(&format!(
        "Environment=SGLANG_USE_CPU_ENGINE=1 PYTHONPATH={} SWEEPKIT_KERNEL_STUB_LOG={}\n",
        p.get("sgl_kernel_stub").display(),
        stub_log.display()
    ));
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

fn sweep_args<'a>(spec: &'a SpecFile, url: &'a str, results: &'a str) -> Vec<&'a str> {
    vec![
        "--spec",
        spec.s(),
        "--url",
        url,
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
        "--no-restore",
    ]
}

#[test]
fn sweep_on_real_sglang_with_an_api_key() {
    let p = Peers::load(&["sglang_python", "sgl_kernel_stub", "hf_target"]);
    let port = testkit::realpeer::server_port();
    let dir = testkit::temp_dir("real-sglang-stub");
    let stub_log: PathBuf = dir.join("sgl_kernel-calls.log");
    let spec = sglang_spec(&p, port, &stub_log);
    let _group = KillGroupOnDrop(format!("{}.pid", spec.s()).into());
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let res = results.to_str().unwrap();
    let mut args = sweep_args(&spec, &url, res);
    args.extend(["--param", MRR, "--values", "2,6", "--expect-config"]);
    let out = sweep(&args).output().unwrap();
    let ctx = || format!("{}\n--- server log\n{}", dump(&out), tail(&spec.log()));
    assert_eq!(out.status.code(), Some(0), "{}", ctx());
    let recs = records(&results);
    for v in ["2", "6"] {
        let b = with_config(&recs, "bench", MRR, v);
        assert_eq!(b.len(), 1, "{MRR}={v}: one bench record\n{}", ctx());
        let r = b[0];
        assert_eq!(r["server"]["kind"], "sglang", "{r}");
        assert_eq!(r["counts"]["completed"], 4, "{r}");
        assert_eq!(
            r["counts"]["output_tokens"].as_u64(),
            Some(4 * MAX_TOKENS),
            "{r}"
        );
    }
    for r in recs.iter().filter(|r| r["type"] == "bench") {
        // wait-ready's record rides along: SGLang's port stays refused
        // while it loads, then /health (and --deep's /health_generate) lag.
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
            open.unwrap() > 1.0 && ready.unwrap() >= open.unwrap(),
            "{w}"
        );
    }
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

    // EAGLE with steps but no topk, pre-flight bypassed, so the config
    // reaches SGLang, whose argument check compares the unset topk with 1
    // (sglang/srt/arg_groups/speculative_hook.py _handle_eagle_family:
    // `cfg.speculative_eagle_topk > 1`): TypeError, exit 1. Without
    // --speculative-algorithm SGLang ignores the speculative flags
    // (handle_speculative_decoding) and serves: seen here. Another set of
    // --param is another results file (its origin record is per file).
    let crash_results = results.with_extension("crash.jsonl");
    let crash_res = crash_results.to_str().unwrap();
    let mut args = sweep_args(&spec, &url, crash_res);
    args.extend(["--swap-arg", "--no-preflight"]);
    args.extend(["--param", "speculative-algorithm", "--values", "EAGLE"]);
    args.extend(["--param", "speculative-num-steps", "--values", "2"]);
    let out = sweep(&args).output().unwrap();
    let f = with_config(
        &records(&crash_results),
        "failure",
        "speculative-num-steps",
        "2",
    )
    .into_iter()
    .cloned()
    .collect::<Vec<_>>();
    assert_eq!(f.len(), 1, "{}\n{}", dump(&out), tail(&spec.log()));
    assert_eq!(f[0]["kind"], "crashed_at_load", "{}", f[0]);
    let said = format!("{} {}", f[0]["reason"], f[0]["log_tail"]);
    assert!(
        said.contains("TypeError"),
        "SGLang's own error line: {}",
        f[0]
    );
    printed.push_str(&String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    // Last, so every check above runs: the key must appear nowhere sweepkit
    // wrote (records, tables, stderr). On main, loadgen copies SGLang's
    // /server_info (which holds the key in clear) into `server.args`.
    let text = std::fs::read_to_string(&results).unwrap()
        + &std::fs::read_to_string(&crash_results).unwrap();
    let mut leaks = vec![];
    for (i, l) in text.lines().enumerate() {
        key_paths(
            &serde_json::from_str(l).unwrap(),
            &format!("line {}: ", i + 1),
            &mut leaks,
        );
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
    let mut args = sweep_args(spec, url, results.to_str().unwrap());
    args.extend(["--param", "speculative-algorithm", "--values", "EAGLE"]);
    args.extend(["--param", "speculative-num-steps", "--values", "2"]);
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
