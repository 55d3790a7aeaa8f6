//! The loop on a real inference server: llama.cpp's llama-server, built by
//! `make real-peer` (scripts/real-peer.sh) into $SWEEPKIT_CACHE (default
//! ~/.cache/sweepkit) with SmolLM2-135M and a generated tiny target/draft
//! pair. Each test skips with a loud message when that cache is missing;
//! `make test` always builds it first.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

mod sweep_support;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::Value;
use sweep_support::{dump, levels, records, with_config, SpecFile, SweepArgs};

/// One llama-server at a time: two cores are shared with everything else.
static SERIAL: Mutex<()> = Mutex::new(());

struct Cache {
    server: PathBuf,
    smollm2: PathBuf,
    target: PathBuf,
    draft: PathBuf,
}

fn cache() -> Option<Cache> {
    let dir = std::env::var_os("SWEEPKIT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/sweepkit")
        });
    let manifest = dir.join("manifest.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        testkit::skip(&format!(
            "{} missing: llama-server and its models are not built; run `make real-peer` \
             (scripts/real-peer.sh; ~10 min once per machine)",
            manifest.display()
        ));
        return None;
    };
    let m: Value = serde_json::from_str(&text).expect("manifest.json");
    let p = |k: &str| {
        PathBuf::from(
            m[k].as_str()
                .unwrap_or_else(|| panic!("manifest lacks {k}")),
        )
    };
    let c = Cache {
        server: p("llama_server"),
        smollm2: p("smollm2"),
        target: p("tiny_target"),
        draft: p("tiny_draft"),
    };
    for f in [&c.server, &c.smollm2, &c.target, &c.draft] {
        assert!(
            f.exists(),
            "{} listed in {} but missing: rerun make real-peer",
            f.display(),
            manifest.display()
        );
    }
    testkit::ran("real-peer cache");
    Some(c)
}

/// llama-server with `model` (its model flags) on a free port as process
/// spec `tag`, with metrics, `slots` slots of `ctx` tokens in all and one
/// thread; the spec, its port and the sweep's target words.
fn llama_sweep(c: &Cache, tag: &str, model: &str, (slots, ctx): (u32, u32)) -> Llama {
    let port = testkit::free_port();
    let exec = format!(
        "{} {model} --host 127.0.0.1 --port {port} --metrics -np {slots} -c {ctx} -t 1",
        c.server.display()
    );
    let spec = SpecFile::new(tag, &exec, port);
    let url = format!("http://127.0.0.1:{port}");
    let args = SweepArgs::on_spec(&spec, &url, "llama.cpp");
    Llama { spec, port, args }
}

struct Llama {
    spec: SpecFile,
    port: u16,
    args: SweepArgs,
}

/// The server's Prometheus counter `name` (no labels), if present.
fn counter(port: u16, name: &str) -> Option<f64> {
    let (_, body) = testkit::http_get(port, "/metrics")?;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn sweep_spec_draft_n_max_on_llama_server_with_the_tiny_pair() {
    let Some(c) = cache() else { return };
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // -t 1: on a busy 2-core machine llama.cpp's spinning threadpool is
    // several times slower with 2 threads. 4 slots for concurrency 4.
    let model = format!(
        "-m {} -md {} --spec-type draft-simple --spec-draft-n-max 4",
        c.target.display(),
        c.draft.display()
    );
    let Llama { spec, port, args } = llama_sweep(&c, "real-tiny", &model, (4, 4096));
    let results = spec.results();
    let out = args
        .param("spec-draft-n-max", "0,2,4,8")
        .levels("1,4")
        .quick("8", "48")
        .load(&[
            "--ignore-eos",
            "--warmup",
            "0",
            "--scrape-interval",
            "200ms",
        ])
        .arg("--no-restore")
        .output();
    // 40: n-max 0 may crash llama-server at concurrency 4 (a GGML_ASSERT in
    // this llama.cpp); the sweep records it and goes on.
    assert!(matches!(out.status.code(), Some(0 | 40)), "{}", dump(&out));
    let recs = records(&results);
    let zero: Vec<_> = recs
        .iter()
        .filter(|r| r["config"]["spec-draft-n-max"] == "0")
        .collect();
    assert!(!zero.is_empty(), "n-max 0 has records: {}", dump(&out));
    for r in &zero {
        assert!(r["type"] == "bench" || r["type"] == "failure", "{r}");
    }
    let mut last = (0u64, 0u64, 0u64);
    for n in [2u64, 4, 8] {
        let b = with_config(&recs, "bench", "spec-draft-n-max", &n.to_string());
        assert_eq!(
            levels(&b),
            [1, 4],
            "n-max {n}: a bench record per level\n{}",
            dump(&out)
        );
        last = (0, 0, 0);
        for r in &b {
            assert_eq!(r["server"]["kind"], "llama.cpp");
            assert_eq!(r["server"]["simulated"], false);
            assert!(r["counts"]["completed"].as_u64().unwrap() > 0, "{r}");
            let s = &r["spec"];
            let (d, a) = (
                s["draft_tokens"].as_u64().unwrap(),
                s["accepted_tokens"].as_u64().unwrap(),
            );
            let drafts = s["drafts"].as_u64().unwrap();
            assert!(
                d > 0 && a > 0 && a <= d,
                "n-max {n}: acceptance figures: {s}"
            );
            assert!((s["acceptance_rate"].as_f64().unwrap() - a as f64 / d as f64).abs() < 1e-3);
            // No draft is longer than n-max: the swept value really applied.
            assert!(
                d <= n * drafts,
                "n-max {n}: {d} draft tokens in {drafts} drafts"
            );
            last = (last.0 + d, last.1 + a, last.2 + drafts);
            check_server_metrics(r, d);
        }
    }
    // The last config (n-max 8) still runs (--no-restore) and served only
    // loadgen's measured requests (--warmup 0): the server's own counters
    // must equal the sum of the records' figures.
    let m = |k: &str| counter(port, &format!("llamacpp:spec_decode_num_{k}_total")).unwrap() as u64;
    assert_eq!(
        (m("draft_tokens"), m("accepted_tokens"), m("drafts")),
        last,
        "/metrics vs bench records of n-max 8"
    );
    let (_, metrics) = testkit::http_get(port, "/metrics").unwrap();
    assert!(
        metrics.contains("accepted_tokens_per_pos_total{position=\"7\"}"),
        "8 draft positions"
    );
    // summarize's table on stdout, and its pick as a record.
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("spec-draft-n-max") && table.contains("best"),
        "{table}"
    );
    assert!(!table.contains("SIMULATED"), "{table}");
    let pick = testkit::run(
        testkit::cmd(
            "summarize",
            &["--format", "json", results.to_str().unwrap()],
        ),
        "",
    );
    pick.expect_code(0);
    let s = &pick.json_lines()[0];
    assert_eq!(s["type"], "summary");
    assert!(
        ["0", "2", "4", "8"].contains(&s["best_config"]["spec-draft-n-max"].as_str().unwrap()),
        "{s}"
    );
    assert_eq!(s["simulated"], false);
}

/// What llama-server's own `/metrics` (`--metrics`) and `/props` put in a
/// bench record of the tiny pair's sweep (4 slots of 1024 tokens): its
/// queue gauges with their sources (tools/server/server-task.cpp
/// `to_metrics`), its draft counter equal to the record's spec figure, no
/// KV figure (this build publishes none: absent, not zero), its slots.
fn check_server_metrics(r: &Value, draft_tokens: u64) {
    let m = &r["server_metrics"];
    assert_eq!(
        m["running_requests"]["source"], "llamacpp:requests_processing",
        "{r}"
    );
    assert_eq!(
        m["waiting_requests"]["source"], "llamacpp:requests_deferred",
        "{r}"
    );
    let drafted = &m["spec_draft_tokens"];
    assert_eq!(
        drafted["source"],
        "llamacpp:spec_decode_num_draft_tokens_total"
    );
    assert_eq!(
        drafted["increase"].as_f64(),
        Some(draft_tokens as f64),
        "{r}"
    );
    assert!(m.get("kv_cache_usage_ratio").is_none(), "{m}");
    let l = &r["server"]["limits"];
    assert_eq!(
        (&l["slots"], &l["slot_ctx_tokens"]),
        (&4.into(), &1024.into()),
        "{l}"
    );
}

#[test]
fn short_sweep_on_smollm2() {
    let Some(c) = cache() else { return };
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let model = format!("-m {}", c.smollm2.display());
    let Llama { spec, args, .. } = llama_sweep(&c, "real-smollm2", &model, (1, 2048));
    let results = spec.results();
    let out = args
        .param_new("ctx-size", "1024")
        .levels("1")
        .quick("3", "24")
        .load(&["--input-tokens", "32", "--ignore-eos", "--endpoint", "chat"])
        .arg("--no-restore")
        .expect(0);
    let recs = records(&results);
    let b = with_config(&recs, "bench", "ctx-size", "1024");
    assert_eq!(b.len(), 1, "{}", dump(&out));
    let r = b[0];
    assert!(
        r["server"]["model"].as_str().unwrap().contains("smollm2"),
        "{}",
        r["server"]
    );
    let done = r["counts"]["completed"].as_u64().unwrap();
    assert!(done >= 1, "{r}");
    // ignore_eos honoured and counted from the server's usage.
    assert_eq!(
        r["counts"]["output_tokens"].as_u64().unwrap(),
        24 * done,
        "{}",
        r["counts"]
    );
    assert_eq!(r["counts"]["usage_missing"], 0);
    assert!(r["throughput"]["output_tok_per_s"].as_f64().unwrap() > 1.0);
    assert!(r["ttft_ms"]["p50"].as_f64().unwrap() > 0.0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("ctx-size"));
}

#[test]
fn wait_ready_waits_through_llama_server_loading_503() {
    let Some(c) = cache() else { return };
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let port = testkit::free_port();
    let mut server = Command::new(&c.server)
        .args([
            "-m",
            c.smollm2.to_str().unwrap(),
            "--host",
            "127.0.0.1",
            "--port",
            &port.to_string(),
        ])
        .args(["-np", "1", "-c", "2048", "-t", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = server.id().to_string();
    let url = format!("http://127.0.0.1:{port}");
    let run = testkit::run(
        testkit::cmd(
            "wait-ready",
            &[
                "--server",
                "llama.cpp",
                "--pid",
                &pid,
                "--verbose",
                "--no-stdin",
                "--timeout",
                "60s",
                &url,
            ],
        ),
        "",
    );
    let after = testkit::http_get(port, "/health");
    let _ = server.kill();
    let _ = server.wait();
    run.expect_code(0);
    let rec = &run.json_lines()[0];
    assert_eq!(rec["type"], "ready", "{rec}");
    assert_eq!(rec["outcome"], "ready");
    assert_eq!(rec["server"]["kind"], "llama.cpp");
    // llama-server listens at once and answers 503 "Loading model" while it
    // loads; wait-ready must have seen that phase and waited it out.
    let err = run.stderr();
    assert!(
        err.contains("HTTP 503"),
        "wait-ready saw the loading phase:\n{err}"
    );
    let open = rec["time_to_port_open_s"].as_f64().unwrap();
    let ready = rec["time_to_ready_s"].as_f64().unwrap();
    assert!(open < ready, "port open {open} s before ready {ready} s");
    assert_eq!(after.map(|(s, _)| s), Some(200), "ready means /health 200");
}

/// One short completion, then the server's `/metrics` (status, body).
fn metrics_after_one(port: u16) -> (u16, String) {
    let body = r#"{"prompt":"hi","max_tokens":4}"#;
    let (st, _, out) = testkit::realpeer::http(port, "POST", "/v1/completions", &[], Some(body))
        .expect("completion");
    assert_eq!(st, 200, "{out}");
    let (st, _, m) = testkit::realpeer::http(port, "GET", "/metrics", &[], None).unwrap();
    (st, m)
}

/// llm-sim's llama.cpp personality against a live llama-server: with
/// `--metrics` it serves only names the real server serves, among them
/// every one loadgen reads (scrape/catalog.rs); without, both answer 501
/// with the same error naming the flag.
#[test]
fn llm_sim_llama_cpp_metrics_match_a_live_llama_server() {
    let Some(c) = cache() else { return };
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let serve = |metrics: bool| {
        let port = testkit::free_port();
        let mut cmd = Command::new(&c.server);
        cmd.args(["-m", c.target.to_str().unwrap(), "--host", "127.0.0.1"])
            .args([
                "--port",
                &port.to_string(),
                "-np",
                "1",
                "-c",
                "512",
                "-t",
                "1",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if metrics {
            cmd.arg("--metrics");
        }
        let mut child = cmd.spawn().unwrap();
        let t0 = std::time::Instant::now();
        while testkit::http_get(port, "/health").map(|r| r.0) != Some(200) {
            assert!(t0.elapsed().as_secs() < 60, "llama-server never ready");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let got = metrics_after_one(port);
        let _ = child.kill();
        let _ = child.wait();
        got
    };
    let sim = |metrics: bool| {
        let mut args = vec!["--personality", "llama.cpp", "--zero-delay"];
        if metrics {
            args.push("--metrics");
        }
        let s = testkit::Sim::start_ready(&args);
        metrics_after_one(s.port)
    };
    let ((rs, real), (ss, simulated)) = (serve(true), sim(true));
    assert_eq!((rs, ss), (200, 200), "{real}\n{simulated}");
    let (real_names, sim_names) = (
        testkit::realpeer::metric_names(&real),
        testkit::realpeer::metric_names(&simulated),
    );
    for n in &sim_names {
        assert!(real_names.contains(n), "llm-sim invents {n}");
    }
    for n in [
        "requests_processing",
        "requests_deferred",
        "spec_decode_num_drafts_total",
        "spec_decode_num_draft_tokens_total",
        "spec_decode_num_accepted_tokens_total",
    ] {
        let n = format!("llamacpp:{n}");
        assert!(
            real_names.contains(&n),
            "{n}: read by loadgen, not served: {real}"
        );
        assert!(
            sim_names.contains(&n),
            "{n}: missing from llm-sim's: {simulated}"
        );
    }
    let ((rs, real), (ss, simulated)) = (serve(false), sim(false));
    assert_eq!((rs, ss), (501, 501), "{real}\n{simulated}");
    let (r, s): (Value, Value) = (
        serde_json::from_str(&real).unwrap(),
        serde_json::from_str(&simulated).unwrap(),
    );
    assert_eq!(r["error"]["message"], s["error"]["message"]);
    assert_eq!(r["error"]["type"], s["error"]["type"]);
}
