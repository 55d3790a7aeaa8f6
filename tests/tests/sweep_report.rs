//! sweep's decision options end to end on llm-sim under svc-swap's process
//! manager: `--report FILE` writes summarize's HTML report at the end and
//! after a signal (with what was measured), `--find-capacity SLO` searches
//! each config's capacity with loadgen and ranks the configs by it, and the
//! progress lines say where the sweep is and its ETA.

mod sweep_support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sweep_support::{dump, records, sweep, with_config, SpecFile};

const KEY: &str = "speculative-num-steps";

fn sim(tag: &str) -> (SpecFile, String) {
    let port = testkit::free_port();
    let exec = format!(
        "{} --host 127.0.0.1 --port {port} --load-time 200ms --warmup-time 100ms --seed 1 \
         --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1",
        testkit::bin("llm-sim").display()
    );
    (
        SpecFile::new(tag, &exec, port),
        format!("http://127.0.0.1:{port}"),
    )
}

fn common<'a>(spec: &'a SpecFile, url: &'a str, results: &'a str) -> Vec<&'a str> {
    vec![
        "--spec",
        spec.s(),
        "--url",
        url,
        "--server",
        "llm-sim",
        "--results",
        results,
        "--param",
        KEY,
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "16",
    ]
}

#[test]
fn report_is_written_at_the_end_and_progress_lines_carry_an_eta() {
    let (spec, url) = sim("sweep-report");
    let results = spec.results();
    let report = spec.dir.join("report.html");
    let mut args = common(&spec, &url, results.to_str().unwrap());
    args.extend(["--values", "1,2,3", "--concurrency", "1"]);
    args.extend(["--load-arg", "-n", "--load-arg", "4"]);
    args.extend(["--report", report.to_str().unwrap()]);
    let out = sweep(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let html = std::fs::read_to_string(&report).expect("the report is written");
    assert!(html.starts_with("<!DOCTYPE html>") || html.starts_with("<!doctype html>"));
    for id in ["id=\"simulated\"", "id=\"verdict\"", "id=\"provenance\""] {
        assert!(html.contains(id), "{id} in the report");
    }
    for v in ["1", "2", "3"] {
        assert!(
            html.contains(&format!("{KEY}={v}")),
            "config {v} in the report"
        );
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("report: {}", report.display())),
        "{err}"
    );
    // Progress, as plain lines (stderr is no terminal here): the first
    // config has nothing timed yet; the later ones an ETA from the first.
    let lines: Vec<&str> = err.lines().filter(|l| l.contains(", ETA ")).collect();
    assert_eq!(lines.len(), 3, "one progress line per config:\n{err}");
    assert_eq!(
        lines[0],
        "sweep: config 1/3, ETA unknown (no config timed yet)"
    );
    for (i, l) in lines.iter().enumerate().skip(1) {
        let head = format!("sweep: config {}/3, ETA ", i + 1);
        assert!(
            l.starts_with(&head) && l.ends_with(" per config so far)"),
            "{l}"
        );
        assert!(l.contains("(load ") && l.contains(", bench "), "{l}");
    }
}

#[test]
fn report_is_written_after_a_signal_with_what_was_measured() {
    let (spec, url) = sim("sweep-report-term");
    let results = spec.results();
    let report = spec.dir.join("report.html");
    let mut args = common(&spec, &url, results.to_str().unwrap());
    args.extend(["--values", "1,2", "--concurrency", "1"]);
    args.extend(["--load-arg", "-n", "--load-arg", "100000"]);
    args.extend(["--report", report.to_str().unwrap()]);
    let child = sweep(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Serving config 1 and benchmarking it for a moment.
    let t0 = Instant::now();
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    while testkit::http_get(port, "/health").is_none_or(|(s, _)| s != 200) {
        assert!(t0.elapsed() < Duration::from_secs(30), "never served");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(2000));
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let recs = records(&results);
    assert_eq!(
        with_config(&recs, "bench", KEY, "1").len(),
        1,
        "{}",
        dump(&out)
    );
    let html = std::fs::read_to_string(&report).expect("the report is written after the signal");
    assert!(html.contains(&format!("{KEY}=1")), "config 1 in the report");
    assert!(!html.contains(&format!("{KEY}=2")), "config 2 never ran");
}

#[test]
fn find_capacity_searches_each_config_and_summarize_ranks_by_it() {
    let (spec, url) = sim("sweep-capacity");
    let results = spec.results();
    let mut args = common(&spec, &url, results.to_str().unwrap());
    // An SLO every level meets: each search doubles to --max-concurrency.
    args.extend(["--values", "1,2", "--find-capacity", "p99_ttft_ms<=60000"]);
    args.extend(["--load-arg", "--max-concurrency", "--load-arg", "4"]);
    args.extend(["--load-arg", "-n", "--load-arg", "8"]);
    let out = sweep(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&results);
    for v in ["1", "2"] {
        let levels: Vec<u64> = with_config(&recs, "bench", KEY, v)
            .iter()
            .map(|r| r["load"]["concurrency"].as_u64().unwrap())
            .collect();
        assert_eq!(
            levels,
            [1, 2, 4],
            "{KEY}={v}: the search's levels\n{}",
            dump(&out)
        );
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("capacity under the SLO (p99_ttft_ms<=60000)"),
        "summarize ranks by capacity:\n{table}"
    );
}
