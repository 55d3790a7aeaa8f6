//! Load shapes (count, duration, open loop), speculative fields, prompts
//! files, per-request output, Ctrl-C.

mod common;
use common::*;
use std::time::{Duration, Instant};
use testkit::assert_contains;

#[test]
fn speculative_fields_from_metrics_deltas_and_multi_token_chunks() {
    // vLLM's personality: the one whose /metrics has the spec counters.
    let s = sim(&[
        "--personality",
        "vllm",
        "--speculative-config",
        r#"{"method": "eagle", "num_speculative_tokens": 3}"#,
        "--speculative-accept-rate",
        "0.7",
        "--step-time",
        "1ms",
        "--seed",
        "1",
    ]);
    let r = load_sim(
        &s,
        "-c 4 -n 16 --max-tokens 32 --ignore-eos --temperature 0",
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    let spec = &b["spec"];
    assert_eq!(spec["source"], "metrics", "{b}");
    let rate = f(&spec["acceptance_rate"]);
    assert!((0.3..=1.0).contains(&rate), "acceptance {rate}");
    assert!(f(&spec["accept_length"]) > 1.0);
    assert!(spec["draft_tokens"].as_u64().unwrap() > 0);
    // Several tokens per chunk: per-token ITL is below the chunk gap.
    let tpc = f(&b["tokens_per_chunk"]);
    assert!(tpc > 1.2, "tokens per chunk {tpc}");
    assert!(f(&b["itl_ms"]["mean"]) < f(&b["chunk_gap_ms"]["mean"]));
    // ITL counts the tokens after each request's first chunk.
    let out_tok = b["counts"]["output_tokens"].as_u64().unwrap();
    assert!(b["itl_ms"]["count"].as_u64().unwrap() <= out_tok - 16);
    // Greedy + ignore_eos under speculative decoding is warned about.
    let w = b["warnings"].to_string();
    assert_contains(&w, "flatters acceptance");
}

#[test]
fn duration_mode_measures_for_the_duration() {
    let s = exact_sim("5ms", "5ms");
    let t0 = Instant::now();
    let r = load_sim(&s, "-c 2 --duration 1s --max-tokens 8 --ignore-eos");
    r.expect_code(0);
    assert!(t0.elapsed() < Duration::from_secs(6));
    let b = &benches(&r)[0];
    assert_eq!(b["load"]["duration_s"], 1.0);
    let el = f(&b["throughput"]["elapsed_s"]);
    assert!((0.9..1.6).contains(&el), "elapsed {el}");
    let n = b["load"]["requests"].as_u64().unwrap();
    assert_eq!(b["counts"]["completed"].as_u64().unwrap(), n);
    assert!(n >= 10, "requests {n}");
}

#[test]
fn open_loop_rate_and_requests_out() {
    let s = sim(&["--zero-delay"]);
    let dir = testkit::temp_dir("loadgen-open");
    let out = dir.join("req.jsonl");
    let r = run(
        loadgen(&[
            &s.base_url(),
            "--rate",
            "40",
            "-n",
            "60",
            "--max-tokens",
            "4",
            "--seed",
            "9",
            "--requests-out",
            out.to_str().unwrap(),
            "--no-upstream",
        ]),
        "",
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    assert_eq!(b["load"]["mode"], "open");
    assert_eq!(b["load"]["rate_rps"], 40.0);
    let text = std::fs::read_to_string(&out).unwrap();
    let mut sent: Vec<f64> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .inspect(|v| assert_eq!(v["level"], "rate=40"))
        .map(|v| f(&v["sent_s"]))
        .collect();
    assert_eq!(sent.len(), 60);
    sent.sort_by(f64::total_cmp);
    let measured = (sent.len() - 1) as f64 / (sent[sent.len() - 1] - sent[0]);
    // Poisson with 60 arrivals: the mean rate is within ~30% almost always.
    assert!((28.0..55.0).contains(&measured), "measured rate {measured}");
    assert!(f(&b["start_lag_ms"]["p50"]) < 5.0);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn prompts_file_sets_output_lengths() {
    let s = sim(&["--zero-delay"]);
    let dir = testkit::temp_dir("loadgen-prompts");
    let p = dir.join("p.jsonl");
    std::fs::write(&p, "{\"prompt\":\"tell me a story\",\"output_tokens\":5}\n{\"prompt\":\"why\",\"output_tokens\":7}\n").unwrap();
    let r = run(
        loadgen(&[
            &s.base_url(),
            "-n",
            "4",
            "--warmup",
            "0",
            "--ignore-eos",
            "--prompts-file",
            p.to_str().unwrap(),
            "--no-upstream",
        ]),
        "",
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    assert_eq!(b["counts"]["output_tokens"], 24);
    assert!(b["load"]["prompts"].as_str().unwrap().starts_with("jsonl:"));
    // The workload names the file by its digest, and counts its prompts.
    let w = &b["load"]["workload"];
    let digest = sweepkit::sha256::hex(&std::fs::read(&p).unwrap());
    assert_eq!(
        (w["kind"].as_str(), w["sha256"].as_str()),
        (Some("jsonl"), Some(digest.as_str())),
        "{w}"
    );
    // A bad prompts file is bad input.
    std::fs::write(&p, "{\"text\":1}\n").unwrap();
    let r = run(
        loadgen(&[
            &s.base_url(),
            "--prompts-file",
            p.to_str().unwrap(),
            "--no-upstream",
        ]),
        "",
    );
    r.expect_code(3);
    assert!(r.stderr().contains("line 1"), "{}", r.stderr());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn ctrl_c_ends_the_level_writes_it_and_exits_130() {
    let s = exact_sim("5ms", "5ms");
    let mut c = loadgen_at(
        &s.base_url(),
        "-c 2 --duration 30s --max-tokens 8 --no-upstream",
    );
    c.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(v["type"], "bench");
    assert_eq!(v["partial"], true);
    assert!(v["counts"]["completed"].as_u64().unwrap() > 0);
}

#[test]
fn high_concurrency_is_not_capped_by_a_connection_limit() {
    // guidellm issue 487: a default pool of 100 connections capped load.
    let s = exact_sim("300ms", "1ms");
    let r = load_sim(
        &s,
        "-c 160 -n 320 --warmup 0 --max-tokens 2 --ignore-eos --no-tokenize",
    );
    r.expect_code(0);
    let b = &benches(&r)[0];
    let conc = f(&b["throughput"]["achieved_concurrency"]);
    assert!(conc > 110.0, "achieved concurrency {conc}");
    let steady = f(&b["steady"]["achieved_concurrency"]);
    assert!(steady > 130.0, "steady-state concurrency {steady}");
}

/// The counter llm-sim keeps of accepted TCP connections.
fn connections(s: &Sim) -> u64 {
    let (_, m) = testkit::http_get(s.port, "/metrics").expect("GET /metrics");
    m.lines()
        .find(|l| l.starts_with("llm_sim_connections_total"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .expect("llm_sim_connections_total") as u64
}

#[test]
fn workers_keep_their_connections_from_warmup_through_the_level() {
    for threads in ["1", "2"] {
        // SGLang's /metrics needs --enable-metrics.
        let s = sim(&["--zero-delay", "--enable-metrics"]);
        let before = connections(&s);
        let r = load(
            &s.base_url(),
            &[
                "-c",
                "8",
                "-n",
                "200",
                "--warmup",
                "8",
                "--max-tokens",
                "4",
                "--client-threads",
                threads,
                "--no-tokenize",
                "--no-scrape",
            ],
        );
        r.expect_code(0);
        let b = &benches(&r)[0];
        assert_eq!(b["counts"]["completed"], 200, "{b}");
        // 208 requests on 8 connections opened in warmup: the measured
        // level paid no connection set-up. (Setup's own probes use
        // short-lived connections of their own.)
        let load_conns = connections(&s) - before;
        assert!(
            (8..=12).contains(&load_conns),
            "--client-threads {threads}: {load_conns} connections for 208 requests"
        );
    }
}

#[test]
fn repeat_runs_each_level_again() {
    let s = sim(&["--zero-delay"]);
    let r = load_sim(&s, "-c 1,2 -n 2 --warmup 0 --repeat 2 --max-tokens 2");
    r.expect_code(0);
    let reps: Vec<(u64, u64)> = benches(&r)
        .iter()
        .map(|b| {
            (
                b["load"]["concurrency"].as_u64().unwrap(),
                b["load"]["repeat"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(reps, vec![(1, 1), (1, 2), (2, 1), (2, 2)]);
}
