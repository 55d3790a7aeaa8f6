//! sweep's decision options end to end on llm-sim under svc-swap's process
//! manager: `--report FILE` writes summarize's HTML report at the end and
//! after a signal (with what was measured), `--find-capacity SLO` searches
//! each config's capacity with loadgen and ranks the configs by it, and the
//! progress lines say where the sweep is and its ETA; with configs whose
//! true capacity follows from llm-sim's KV model, the search finds each
//! exactly and summarize ranks them by it. The report of a sweep with a
//! schedule, laid out by headless Chromium at 1280 px, reads as a serving
//! engineer needs: one action, the schedule's depths and real file, and no
//! text over other text, charts as wide as the page, axes named with units.

mod sweep_support;

use std::time::Duration;

use sweep_support::child::{signal, spawn_piped, wait_within};
use sweep_support::sim::{url_port, wait_healthy};
use sweep_support::{
    dump, levels, records, stderr, stdout, with_config, SimExec, SpecFile, SweepArgs,
};

const KEY: &str = "speculative-num-steps";

fn sim(tag: &str) -> (SpecFile, String) {
    SimExec::free().eagle(1).spec(tag)
}

fn common(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "llm-sim")
        .arg("--param")
        .arg(KEY)
        .load(&["--max-tokens", "16"])
}

#[test]
fn report_is_written_at_the_end_and_progress_lines_carry_an_eta() {
    let (spec, url) = sim("sweep-report");
    let report = spec.dir.join("report.html");
    let out = common(&spec, &url)
        .args(&["--values", "1,2,3", "--concurrency", "1"])
        .load(&["-n", "4"])
        .args(&["--report", report.to_str().unwrap()])
        .expect(0);
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
    let err = stderr(&out);
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
    let args = common(&spec, &url)
        .args(&["--values", "1,2", "--concurrency", "1"])
        .load(&["-n", "100000"])
        .args(&["--report", report.to_str().unwrap()]);
    let child = spawn_piped(&mut args.cmd());
    // Serving config 1 and benchmarking it for a moment.
    wait_healthy(url_port(&url), Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(2000));
    signal(&child, "TERM");
    let out = wait_within(child, Duration::from_secs(120), None);
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
    // An SLO every level meets: each search doubles to --max-concurrency.
    let out = common(&spec, &url)
        .args(&["--values", "1,2", "--find-capacity", "p99_ttft_ms<=60000"])
        .load(&["--max-concurrency", "4", "-n", "8"])
        .expect(0);
    let recs = records(&results);
    for v in ["1", "2"] {
        assert_eq!(
            levels(&with_config(&recs, "bench", KEY, v)),
            [1, 2, 4],
            "{KEY}={v}: the search's levels\n{}",
            dump(&out)
        );
    }
    let table = stdout(&out);
    assert!(
        table.contains("capacity under the SLO (p99_ttft_ms<=60000)"),
        "summarize ranks by capacity:\n{table}"
    );
}

/// llm-sim's documented model (llm-sim(1), `llm-sim --help`): a request
/// reserves prompt + max_tokens KV tokens (no speculation here) and runs
/// while that fits in --kv-capacity-tokens; the rest queue, and a queued
/// request's first token waits for a running one to finish: max_tokens
/// steps. So a config's true capacity is floor(kv / (prompt + max_tokens)),
/// and an SLO on TTFT between a step or two and a whole request's decode
/// time separates the levels that fit from those that queue.
#[test]
fn find_capacity_finds_each_configs_true_capacity_from_the_sims_kv_model() {
    const STEP_MS: f64 = 5.0;
    const PROMPT: u64 = 16;
    const MAX_TOKENS: u64 = 60;
    let need = PROMPT + MAX_TOKENS;
    // A queued request waits MAX_TOKENS steps (300 ms); one that runs gets
    // its first token within a step or two. The SLO sits well between.
    let queue_wait_ms = MAX_TOKENS as f64 * STEP_MS;
    let slo_ms = queue_wait_ms / 2.5;
    assert!(slo_ms > 10.0 * STEP_MS);
    let slo = format!("p99_ttft_ms<={slo_ms}");
    // Room for 3 and a half requests, and for 5 and a token.
    let kvs = [3 * need + need / 2, 5 * need + 1];
    let values = format!("{},{}", kvs[0], kvs[1]);
    let (spec, url) = SimExec::free()
        .flags(&format!("--step-time {STEP_MS}ms --per-seq-time 0ms"))
        .flags("--prefill-per-token 0ms --context-length 128")
        .kv(kvs[1])
        .spec("sweep-true-capacity");
    let results = spec.results();
    let (p, m) = (PROMPT.to_string(), MAX_TOKENS.to_string());
    let out = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .param("kv-capacity-tokens", &values)
        .args(&["--find-capacity", &slo])
        .load(&["--max-tokens", &m, "--ignore-eos", "--input-tokens", &p])
        .load(&["--no-tokenize", "--max-concurrency", "8", "-n", "8"])
        .expect(0);
    let recs = records(&results);
    let mut found = Vec::new();
    for kv in kvs {
        let b = with_config(&recs, "bench", "kv-capacity-tokens", &kv.to_string());
        let last = b
            .last()
            .unwrap_or_else(|| panic!("kv={kv}: no bench\n{}", dump(&out)));
        assert_eq!(last["server"]["args"]["kv_capacity_tokens"], kv, "{last}");
        // The model's need per request, from what the level really sent.
        let c = &last["counts"];
        let prompt = c["input_tokens"].as_u64().unwrap() / c["completed"].as_u64().unwrap();
        let want = kv / (prompt + MAX_TOKENS);
        let cap = &last["capacity"];
        assert_eq!(cap["capacity"], want, "kv={kv}: {cap}\n{}", dump(&out));
        assert_eq!(
            (cap["first_miss"].as_u64(), cap["exact"].as_bool()),
            (Some(want + 1), Some(true)),
            "{cap}"
        );
        found.push((want, kv));
    }
    assert_eq!(found.iter().map(|f| f.0).collect::<Vec<_>>(), [3, 5]);
    // summarize ranks the configs by capacity: the larger first.
    let table = stdout(&out);
    let section = table
        .split(&format!("capacity under the SLO ({slo})"))
        .nth(1)
        .unwrap_or_else(|| panic!("no capacity ranking:\n{table}"));
    let at = |kv: u64| {
        section
            .find(&format!("kv-capacity-tokens={kv}"))
            .unwrap_or_else(|| panic!("kv={kv} not ranked:\n{table}"))
    };
    assert!(
        at(kvs[1]) < at(kvs[0]),
        "capacity 5 ranks above 3:\n{table}"
    );
    for (rank, (want, kv)) in found.iter().rev().enumerate() {
        let line = format!(
            "{}. kv-capacity-tokens={kv}: c={want}, between c={want} and c={}",
            rank + 1,
            want + 1
        );
        assert!(section.contains(&line), "{line}\n{table}");
    }
}

/// Issue 33: the report of a real sweep with `--schedule sglang` on
/// llm-sim, rendered by Chromium at 1280 px and measured in the page:
/// no two text boxes overlap and none runs out of its chart, every chart
/// is at least 60% of the content width, every axis name is words with a
/// unit; the verdict names one action, the schedule's table names a config
/// file that exists, the timeline draws load bars from the records, and
/// the provenance shows the launch commands and every tool. The
/// screenshot is kept in target/artefacts/sweep-report-1280.png.
#[test]
fn the_report_of_a_schedule_sweep_reads_right_at_1280_px_in_chromium() {
    let Some(bin) = testkit::chromium::gate() else {
        return;
    };
    let sim = SimExec::free().load("100ms").warmup("50ms").seed(42);
    let (spec, url) = sim.eagle(1).spec("sweep-report-read");
    let report = spec.dir.join("report.html");
    let load = [
        "--max-tokens",
        "32",
        "--input-tokens",
        "128",
        "--ignore-eos",
        "--temperature",
        "0.2",
        "--seed",
        "1",
    ];
    let out = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .param(KEY, "1,2,4,8")
        .levels("1,16,64")
        .args(&["--schedule", "sglang"])
        .args(&["--report", report.to_str().unwrap()])
        .load(&load)
        .expect(0);
    let html = std::fs::read_to_string(&report).expect("the report is written");
    let between = |from: &str, to: &str| -> String {
        let rest = html
            .split(from)
            .nth(1)
            .unwrap_or_else(|| panic!("no {from}"));
        rest.split(to).next().unwrap().to_string()
    };
    let action = between("<p id=\"action\" class=\"action\">", "</p>");
    assert!(
        ["Apply ", "Extend the range"]
            .iter()
            .any(|a| action.starts_with(a)),
        "one action: {action}"
    );
    // The schedule: its ranges and the file the server really read.
    assert!(
        html.contains("<table class=\"schedule-plan\">"),
        "{}",
        dump(&out)
    );
    let path = between("<code class=\"config-path\">", "</code>");
    assert!(std::path::Path::new(&path).is_file(), "{path} is no file");
    // Load bars from the ready records upstream: the four configs and the
    // schedule; each server named once; the tools upstream listed.
    assert_eq!(html.matches("<rect class=\"load\"").count(), 5, "load bars");
    assert!(!html.contains("llm-sim llm-sim"), "a server named twice");
    for tool in ["svc-swap", "wait-ready", "loadgen", "summarize"] {
        assert!(
            html.contains(&format!("{tool} 0.")),
            "{tool} among the tools"
        );
    }
    assert!(
        html.contains("--speculative-num-steps 8"),
        "launch commands"
    );
    assert_eq!(html.matches("noise unknown").count(), 1, "said once");

    let seen = testkit::chromium::measure(&bin, &report, 1280);
    seen.assert_readable(0.6);
    let ids: Vec<&str> = seen.charts.iter().map(|c| c.0.as_str()).collect();
    for id in [
        "chart-throughput",
        "chart-ttft",
        "chart-tpot",
        "timeline-chart",
    ] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    assert!(seen.axis_names.len() >= 6, "{:?}", seen.axis_names);
    for name in &seen.axis_names {
        let dotted = name.split_whitespace().any(|w| {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            w.contains('.') && w.chars().any(char::is_alphabetic)
        });
        assert!(
            name.ends_with(')') && name.contains(" (") && !name.contains('_') && !dotted,
            "axis name {name:?} is not words with a unit"
        );
    }
    let png = testkit::chromium::artefacts().join("sweep-report-1280.png");
    let shot = testkit::chromium::screenshot(&bin, &report, (1280, 5200), &png);
    assert_eq!(
        u32::from_be_bytes([shot[16], shot[17], shot[18], shot[19]]),
        1280
    );
}
