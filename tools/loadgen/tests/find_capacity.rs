//! `--find-capacity` against llm-sim, whose capacity follows from its
//! model: with `--max-running-requests 6` a seventh request in flight
//! waits for a whole request (100 decode steps of 5 ms, 500 ms) before its
//! first token, while six or fewer get theirs within a step or two. So under
//! `p99_ttft_ms<=300` the capacity is 6 (the 300 ms between a step and a
//! queued request's wait absorbs a loaded machine's stalls: with 60 steps
//! and 120 ms a 250 ms stall at c=6 once made it miss), and the search must find it
//! exactly; a level budget that runs out leaves a bracket; a server that
//! fails every request at the first level ends the search there.

mod common;
use common::*;
use testkit::assert_contains;

fn sim6() -> Sim {
    sim(&words("--max-running-requests 6 --step-time 5ms --per-seq-time 0ms --prefill-per-token 0ms --seed 1"))
}

fn search(url: &str, extra: &[&str]) -> Run {
    let mut a = vec![
        url,
        "--no-upstream",
        "--max-tokens",
        "100",
        "--ignore-eos",
        "--input-tokens",
        "16",
        "--no-tokenize",
        "--find-capacity",
        "p99_ttft_ms<=300",
    ];
    a.extend(extra);
    run(loadgen(&a), "")
}

fn levels(r: &Run) -> Vec<u64> {
    benches(r)
        .iter()
        .map(|b| b["load"]["concurrency"].as_u64().unwrap())
        .collect()
}

#[test]
fn finds_the_simulators_capacity_exactly() {
    let s = sim6();
    let r = search(&s.base_url(), &[]);
    r.expect_code(0);
    check_contract(&r);
    // Doubling 1, 2, 4 meet it, 8 misses; bisection 6 meets, 7 misses.
    assert_eq!(levels(&r), [1, 2, 4, 8, 6, 7], "{}", r.stderr());
    let all = benches(&r);
    let last = all.last().unwrap();
    let cap = &last["capacity"];
    assert_eq!(cap["capacity"], 6, "{cap}");
    assert_eq!(cap["first_miss"], 7, "{cap}");
    assert_eq!(cap["exact"], true);
    assert_eq!(cap["stopped"], "converged");
    assert_eq!(cap["levels_run"], 6);
    assert_eq!(cap["slo"], "p99_ttft_ms<=300");
    // Only the last record carries it; each level is an ordinary record.
    assert!(all[..all.len() - 1]
        .iter()
        .all(|b| b.get("capacity").is_none()));
    let tried = cap["tried"].as_array().unwrap();
    assert_eq!(tried[3]["meets"], false);
    assert!(
        tried[3]["missed"][0]
            .as_str()
            .unwrap()
            .starts_with("p99_ttft_ms "),
        "{cap}"
    );
    assert_contains(&r.stderr(), "capacity c=6 (c=7 misses: exact)");
}

#[test]
fn a_budget_that_runs_out_leaves_a_bracket() {
    let s = sim6();
    let r = search(&s.base_url(), &["--level-budget", "4"]);
    r.expect_code(0);
    assert_eq!(levels(&r), [1, 2, 4, 8], "{}", r.stderr());
    let cap = &benches(&r)[3]["capacity"];
    assert_eq!(cap["capacity"], 4, "{cap}");
    assert_eq!(cap["first_miss"], 8);
    assert_eq!(cap["exact"], false);
    assert_eq!(cap["stopped"], "budget");
    // --max-concurrency bounds the doubling: 1, 2, 4, 5 all meet it.
    let r = search(&s.base_url(), &["--max-concurrency", "5"]);
    r.expect_code(0);
    assert_eq!(levels(&r), [1, 2, 4, 5], "{}", r.stderr());
    let cap = &benches(&r)[3]["capacity"];
    assert_eq!(
        (cap["capacity"].as_u64(), cap["stopped"].as_str()),
        (Some(5), Some("max_concurrency"))
    );
}

#[test]
fn a_server_failing_at_the_first_level_ends_the_search() {
    let s = sim(&["--error-rate", "1"]);
    let r = search(&s.base_url(), &["--concurrency", "4"]);
    r.expect_code(sweepkit::exit::ALL_FAILED as i32);
    check_contract(&r);
    let lines = r.json_lines();
    assert_eq!(lines.len(), 1, "{}", r.stdout());
    assert_eq!(lines[0]["type"], "failure");
    let reason = lines[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(
            "capacity search: no capacity: c=4, the lowest tried, misses (server_failed)"
        ),
        "{reason}"
    );
    // A level that answers but misses: no capacity, known exactly at c=1.
    let ok = sim(&[]);
    let mut a = vec![ok.base_url()];
    a.extend(
        [
            "--no-upstream",
            "--max-tokens",
            "4",
            "--find-capacity",
            "p99_ttft_ms<=0.0001",
        ]
        .map(String::from),
    );
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = run(loadgen(&a), "");
    r.expect_code(0);
    let cap = &benches(&r)[0]["capacity"];
    assert_eq!(cap["capacity"], serde_json::Value::Null, "{cap}");
    assert_eq!(
        (cap["first_miss"].as_u64(), cap["exact"].as_bool()),
        (Some(1), Some(true))
    );
}

#[test]
fn bad_searches_are_usage_errors() {
    for (args, msg) in [
        (vec!["--find-capacity", "ttft_ms<=5"], "not a level figure"),
        (
            vec!["--find-capacity", "p99_ttft_ms<=5", "-c", "1,2"],
            "give one --concurrency",
        ),
        (
            vec![
                "--find-capacity",
                "p99_ttft_ms<=5",
                "-c",
                "9",
                "--max-concurrency",
                "8",
            ],
            "above --max-concurrency 8",
        ),
    ] {
        let mut a = vec!["http://127.0.0.1:9", "--no-upstream"];
        a.extend(args);
        let r = run(loadgen(&a), "");
        r.expect_code(2);
        assert!(r.stderr().contains(msg), "{}", r.stderr());
    }
}
