//! Helpers shared by sweep-plan's integration tests: the reference
//! campaign, running the built sweep-plan, and summarize's scores of a
//! file (the built summarize, found as the workspace builds it).

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

/// Run the built sweep-plan with `args` and `stdin`.
pub fn plan(args: &[&str], stdin: &str) -> testkit::Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sweep-plan"));
    cmd.args(args);
    testkit::run(cmd, stdin)
}

/// summarize's summary record of `results`, as sweep --adaptive asks for
/// it (empty when summarize has nothing to score).
pub fn summarize_scores(results: &str) -> String {
    let mut c = Command::new(testkit::bin("summarize"));
    c.args([
        "--format",
        "json",
        "--objective",
        "weighted",
        "--pool-hosts",
        results,
    ]);
    testkit::run(c, "").stdout()
}

/// Write `text` to a fresh temp file named `name`; returns its path.
pub fn temp_file(name: &str, text: &str) -> String {
    let dir = testkit::temp_dir("sweep-plan");
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}
