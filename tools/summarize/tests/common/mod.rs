//! Helpers shared by summarize's integration tests: the fixture path and
//! running the built binary.

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

/// `tests/fixtures/campaign.jsonl` at the repository root: the reference
/// campaign's numbers as hand-made bench records plus one OOM failure.
pub fn fixture() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/campaign.jsonl")
        .canonicalize()
        .expect("fixture")
        .to_string_lossy()
        .into_owned()
}

/// The fixture's lines, for tests that edit records.
pub fn fixture_lines() -> Vec<String> {
    std::fs::read_to_string(fixture())
        .unwrap()
        .lines()
        .map(String::from)
        .collect()
}

/// Run the built summarize with `args` and `stdin`.
pub fn summarize(args: &[&str], stdin: &str) -> testkit::Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_summarize"));
    cmd.args(args);
    testkit::run(cmd, stdin)
}

/// The one summary record summarize printed.
pub fn summary(run: &testkit::Run) -> serde_json::Value {
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1, "one record expected:\n{}", run.stdout());
    assert_eq!(lines[0]["type"], "summary");
    lines[0].clone()
}

/// Write `text` to a fresh temp file named `name`; returns its path.
pub fn temp_file(name: &str, text: &str) -> String {
    let dir = testkit::temp_dir("summarize");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

pub mod make;
