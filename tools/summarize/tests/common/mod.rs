//! Helpers shared by summarize's integration tests: the fixture path and
//! running the built binary.

#![allow(dead_code)]

#[allow(unused_imports)] // not every test binary reads both
pub use testkit::{campaign_fixture as fixture, campaign_fixture_lines as fixture_lines};

/// Run the built summarize with `args` and `stdin`.
pub fn summarize(args: &[&str], stdin: &str) -> testkit::Run {
    testkit::run_args(env!("CARGO_BIN_EXE_summarize"), args, stdin)
}

/// The one summary record summarize printed.
pub fn summary(run: &testkit::Run) -> serde_json::Value {
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "one record expected:\n{}", run.stdout());
    assert_eq!(lines[0]["type"], "summary");
    lines[0].clone()
}

/// summarize `args` on `stdin`, which must exit 0: its one summary record
/// (asked for with `--format json` unless `args` name a format: text is
/// the default, terminal or not).
#[track_caller]
pub fn summary_of(args: &[&str], stdin: &str) -> serde_json::Value {
    let named = args.iter().any(|a| *a == "-f" || *a == "--format");
    let json: &[&str] = if named { &[] } else { &["--format", "json"] };
    let run = summarize(&[json, args].concat(), stdin);
    run.expect_code(0);
    summary(&run)
}

/// Write `text` to a fresh temp file named `name`; returns its path.
pub fn temp_file(name: &str, text: &str) -> String {
    testkit::temp_file("summarize", name, text)
}

pub mod make;
