//! `--until-stable PCT`: a level ends once its steady-state throughput's
//! batch-means interval is within PCT, or at its bound, and says which.

mod common;
use common::*;
use testkit::assert_contains;

fn stability(r: &Run) -> serde_json::Value {
    let b = &benches(r)[0];
    b["stability"].clone()
}

#[test]
fn exact_timing_stops_early_and_says_stable() {
    let s = exact_sim("20ms", "5ms");
    let url = s.base_url();
    let r = load(
        &url,
        &words("--max-tokens 8 --until-stable 10% --max-requests 1000"),
    );
    r.expect_code(0);
    check_contract(&r);
    let st = stability(&r);
    assert_eq!(st["stopped"], "stable", "{st}");
    assert_eq!(st["pct_target"], 10.0);
    assert_eq!(st["batches"], 10);
    assert!(f(&st["half_width_pct"]) <= 10.0, "{st}");
    let b = &benches(&r)[0];
    let done = b["counts"]["completed"].as_u64().unwrap();
    // Default --min-requests at c=1 is 20; a steady 8-token stream every
    // ~55 ms is known to 10% long before the cap of 1000 (about 20 to 60
    // requests on a busy machine).
    assert!((20..500).contains(&done), "{done} requests: {st}");
    assert_eq!(b["load"]["requests"].as_u64(), Some(done));
    assert!(st["batch_size"].as_u64().unwrap() * 10 <= done, "{st}");
    // The interval's centre is the steady throughput: 8 tokens per ~55 ms.
    let mean = f(&st["mean_output_tok_per_s"]);
    assert!((100.0..170.0).contains(&mean), "{st}");
    assert!(b["warnings"].as_array().is_none_or(|w| w.is_empty()), "{b}");
    // Without the flag the record has no stability block.
    let r = load(&url, &["-n", "3"]);
    r.expect_code(0);
    assert!(benches(&r)[0].get("stability").is_none());
}

#[test]
fn heavy_jitter_runs_to_the_cap_and_says_so() {
    // A third of the streams stall for 100 ms in otherwise instant
    // responses: no 1% interval from 60 requests.
    let s = sim(&words("--zero-delay --stall-rate 0.3 --stall 100ms"));
    let url = s.base_url();
    let args = ["--no-upstream", "--max-tokens", "8", "--until-stable", "1"];
    let mut a = vec![url.as_str()];
    a.extend(args);
    a.extend(["--max-requests", "60"]);
    let r = run(loadgen(&a), "");
    r.expect_code(0);
    let st = stability(&r);
    assert_eq!(st["stopped"], "max_requests", "{st}");
    assert!(f(&st["half_width_pct"]) > 1.0, "{st}");
    assert_eq!(benches(&r)[0]["counts"]["completed"], 60);
    assert_contains(&r.stderr(), "not stable within 1%");
    let w = benches(&r)[0]["warnings"].to_string();
    assert_contains(&w, "raise --max-requests or --duration");
    // The same with a time bound.
    let mut a = vec![url.as_str()];
    a.extend(args);
    a.extend(["--duration", "1s"]);
    let r = run(loadgen(&a), "");
    r.expect_code(0);
    assert_eq!(stability(&r)["stopped"], "duration");
}

#[test]
fn bad_until_stable_values_are_one_line_usage_errors() {
    let url = "http://127.0.0.1:9";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["--until-stable", "0"], "--until-stable '0'"),
        (vec!["--until-stable", "-3"], "--until-stable '-3'"),
        (vec!["--until-stable", "abc"], "--until-stable 'abc'"),
        (vec!["--until-stable", "100%"], "--until-stable '100%'"),
        (
            vec![
                "--until-stable",
                "5",
                "--min-requests",
                "50",
                "--max-requests",
                "10",
            ],
            "--max-requests 10 is below --min-requests 50",
        ),
        (
            vec!["--until-stable", "5", "--min-requests", "0"],
            "--min-requests",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec![url, "--no-upstream"];
        args.extend(extra.iter().copied());
        let r = run(loadgen(&args), "");
        r.expect_code(2);
        assert!(r.stdout().is_empty(), "{args:?}: {}", r.stdout());
        let err = r.stderr();
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("loadgen: error: "), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    // --min-requests means nothing without --until-stable (clap says so).
    let r = load(url, &["--min-requests", "5"]);
    r.expect_code(2);
    assert!(r.stderr().contains("--until-stable"), "{}", r.stderr());
}
