//! Each metric against llm-sim with known timing (--exact-ttft/--exact-itl),
//! within tolerances generous enough for a loaded 2-core machine.

mod common;
use common::*;
use testkit::assert_lacks;

#[test]
fn exact_timing_gives_known_ttft_itl_tpot_e2e() {
    let s = exact_sim("40ms", "10ms");
    // Chat endpoint: llm-sim sends an empty role chunk at once; TTFT must
    // not be clocked on it (vLLM PR 3768).
    let r = load_sim(
        &s,
        "-c 1,4 -n 8 --max-tokens 10 --ignore-eos --endpoint chat --slo ttft=1s,e2e=5s",
    );
    r.expect_code(0);
    check_contract(&r);
    let b = benches(&r);
    assert_eq!(b.len(), 2, "one record per level");
    for rec in &b {
        assert_eq!(rec["counts"]["completed"], 8);
        assert_eq!(rec["counts"]["output_tokens"], 80);
        assert_eq!(rec["counts"]["early_stops"], 0);
        assert_eq!(rec["counts"]["usage_missing"], 0);
        let ttft = f(&rec["ttft_ms"]["p50"]);
        assert!((39.0..60.0).contains(&ttft), "TTFT p50 {ttft}");
        let itl = f(&rec["itl_ms"]["p50"]);
        assert!((8.5..14.0).contains(&itl), "ITL p50 {itl}");
        let tpot = f(&rec["tpot_ms"]["mean"]);
        assert!((9.0..14.0).contains(&tpot), "TPOT mean {tpot}");
        // E2E = TTFT + 9 gaps of 10 ms.
        let e2e = f(&rec["e2e_ms"]["p50"]);
        assert!((128.0..175.0).contains(&e2e), "E2E p50 {e2e}");
        assert_eq!(rec["itl_ms"]["count"], 8 * 9);
        assert_eq!(
            rec["throughput"]["goodput_req_per_s"],
            rec["throughput"]["requests_per_s"]
        );
        assert_eq!(rec["throughput"]["slo_attainment"], 1.0);
        assert!(rec["steady"].is_object(), "steady window for closed loop");
    }
    // Concurrency 4 is about 4x the request rate of concurrency 1.
    let (r1, r4) = (
        f(&b[0]["throughput"]["requests_per_s"]),
        f(&b[1]["throughput"]["requests_per_s"]),
    );
    assert!(r4 > 2.5 * r1, "c=1 {r1} req/s, c=4 {r4} req/s");
    let conc = f(&b[1]["throughput"]["achieved_concurrency"]);
    assert!((2.5..=4.01).contains(&conc), "achieved concurrency {conc}");
}

#[test]
fn non_streaming_and_completions_endpoint() {
    let s = exact_sim("20ms", "5ms");
    let r = load_sim(
        &s,
        "-n 4 --max-tokens 8 --ignore-eos --no-stream --format csv",
    );
    r.expect_code(0);
    let table = testkit::output::Csv::parse(&r.stdout());
    assert_eq!(table.rows.len(), 1);
    let col = |name: &str| table.rows[0][table.col(name)].clone();
    assert_eq!(col("type"), "bench");
    assert_eq!(col("load.stream"), "false");
    assert_eq!(col("counts.completed"), "4");
    assert_eq!(col("ttft_ms.count"), "0", "no TTFT without a stream");
    let e2e: f64 = col("e2e_ms.p50").parse().unwrap();
    assert!((50.0..100.0).contains(&e2e), "E2E {e2e}");
    // Synthetic prompts were made exact with the server's /tokenize.
    assert_eq!(col("load.input_len_method"), "tokenize");
    assert_eq!(col("counts.input_tokens"), (4 * 128).to_string());
    // CSV round-trips into a record through sweepkit::flat.
    let v = sweepkit::flat::unflatten(&table.header, &table.rows[0]);
    assert_eq!(v["counts"]["completed"], 4);
}

#[test]
fn markdown_table_and_extra_body() {
    let s = sim(&["--zero-delay"]);
    let r = run(
        loadgen(&[
            &s.base_url(),
            "-c",
            "1,2",
            "-n",
            "3",
            "--warmup",
            "0",
            "--ignore-eos",
            "--extra-body",
            r#"{"max_tokens": 3}"#,
            "--format",
            "markdown",
            "--no-upstream",
        ]),
        "",
    );
    r.expect_code(0);
    let out = r.stdout();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 4, "header, rule, one row per level:\n{out}");
    assert!(lines[0].contains("TTFT p50"));
    // --extra-body wins over --max-tokens: 3 tokens per request.
    let cells: Vec<&str> = lines[2].split('|').map(str::trim).collect();
    assert_eq!(cells[1], "1", "{out}");
    assert_eq!(cells[3], "3", "{out}");
    assert_lacks(&r.stderr(), "stopped before max_tokens");
}
