//! summarize through its in-process seam (`run_with` with buffers for
//! stdin, stdout and stderr): the same answers as the built binary, with no
//! process to start, and each stream checked on its own.

use clap::Parser;
use serde_json::Value;
use summarize::{run_with, Args};
use sweepkit::exit;
use testkit::{assert_contains, assert_lacks};

/// The fixture campaign, as text.
fn campaign() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/campaign.jsonl"
    );
    std::fs::read_to_string(path).expect("tests/fixtures/campaign.jsonl")
}

/// Run with `flags` and `stdin`: (exit code, stdout, stderr, message).
fn run(flags: &[&str], stdin: &str) -> (u8, String, String, String) {
    let args = Args::try_parse_from(std::iter::once("summarize").chain(flags.iter().copied()))
        .expect("flags parse");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let res = run_with(args, stdin.as_bytes(), &mut out, &mut err);
    let (code, msg) = match res {
        Ok(()) => (exit::OK, String::new()),
        Err(e) => (e.code, e.error.map_or(String::new(), |e| format!("{e:#}"))),
    };
    let s = |b: Vec<u8>| String::from_utf8(b).expect("UTF-8");
    (code, s(out), s(err), msg)
}

#[test]
fn slo_pick_from_stdin_is_one_summary_line() {
    let slo = "p99_e2e_ms<=2000,p99_ttft_ms<=500";
    let (code, out, _, msg) = run(&["-f", "json", "--slo", slo], &campaign());
    assert_eq!(code, exit::OK, "{msg}");
    assert_eq!(out.lines().count(), 1, "{out}");
    let rec: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(rec["type"], "summary");
    assert_eq!(rec["objective"], "slo");
    assert_eq!(rec["best_config"]["speculative-num-steps"], "4");
    assert_eq!(rec["details"]["overall"]["level"], "c=16");
}

#[test]
fn usage_errors_come_before_the_input_is_read() {
    // No --slo to meet: refused whatever stdin holds (here: not JSON).
    let (code, out, _, msg) = run(&["--objective", "slo"], "not json\n");
    assert_eq!(code, exit::USAGE);
    assert_eq!(msg, "--objective slo needs --slo");
    assert!(out.is_empty());
    let (code, _, _, msg) = run(&["--metric", "no_such_metric"], &campaign());
    assert_eq!(code, exit::USAGE);
    assert!(msg.starts_with("--metric: "), "{msg}");
}

#[test]
fn input_without_results_is_bad_input_and_notes_go_to_stderr() {
    let swap = r#"{"type":"origin","schema":1,"config":{"a":"1"},"provenance":{"tool":"t","version":"0","started_at":"x","finished_at":"y"}}"#;
    let (code, out, _, msg) = run(&["-f", "json"], &format!("{swap}\n"));
    assert_eq!(code, exit::BAD_INPUT, "{msg}");
    assert_eq!(msg, "<stdin>: no bench or failure records to summarize");
    assert!(out.is_empty(), "nothing half-written: {out}");
    let (code, _, _, msg) = run(&["-f", "json"], "\n{\"type\":\"bench\"\n");
    assert_eq!(code, exit::BAD_INPUT);
    assert!(msg.contains("line 2"), "the line is named: {msg}");
}

#[test]
fn text_table_on_stdout_and_csv_warnings_on_stderr() {
    let (code, out, err, msg) = run(&["-f", "text"], &campaign());
    assert_eq!(code, exit::OK, "{msg}");
    assert_contains(&out, "speculative-num-steps");
    assert!(
        !err.contains("summarize: warning:"),
        "text carries its warnings: {err}"
    );
    let (code, out, err, msg) = run(&["-f", "csv"], &campaign());
    assert_eq!(code, exit::OK, "{msg}");
    let header = out.lines().next().unwrap_or("");
    assert!(header.contains(','), "{out}");
    // The fixture's failed config (steps 10) is warned about; CSV has no
    // prose, so the warning is on stderr and never in the rows.
    assert_contains(&err, "summarize: warning:");
    assert_lacks(&out, "warning");
}
