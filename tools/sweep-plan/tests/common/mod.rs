//! Helpers shared by sweep-plan's integration tests: the reference
//! campaign, running the built sweep-plan, and summarize's scores of a
//! file (the built summarize, found as the workspace builds it).

#![allow(dead_code)]

#[allow(unused_imports)] // not every test binary reads both
pub use testkit::{campaign_fixture as fixture, campaign_fixture_lines as fixture_lines};

/// Run the built sweep-plan with `args` and `stdin`.
pub fn plan(args: &[&str], stdin: &str) -> testkit::Run {
    testkit::run_args(env!("CARGO_BIN_EXE_sweep-plan"), args, stdin)
}

/// summarize's summary record of `results`, as sweep --adaptive asks for
/// it (empty when summarize has nothing to score).
pub fn summarize_scores(results: &str) -> String {
    let args = testkit::words("--format json --objective weighted --pool-hosts");
    testkit::run_args(
        testkit::bin("summarize"),
        &[&args[..], &[results]].concat(),
        "",
    )
    .stdout()
}

/// Write `text` to a fresh temp file named `name`; returns its path.
pub fn temp_file(name: &str, text: &str) -> String {
    testkit::temp_file("sweep-plan", name, text)
}
