//! Golden outputs (insta snapshots) of the reference campaign fixture in
//! every format, plus the decisions they must contain spelled out, so a
//! snapshot update cannot quietly accept a wrong pick.

mod common;

use common::{fixture, summarize, summary};

/// The reference campaign in `format`, which summarize writes with exit 0.
fn reference(format: &str) -> String {
    let run = summarize(&["--format", format, &fixture()], "");
    run.expect_code(0);
    run.stdout()
}

#[test]
fn text_table_of_the_reference_campaign() {
    let out = reference("text");
    assert!(out.contains("plateau: below 2% gain beyond speculative-num-steps=4 (c=1, c=4, c=16)"));
    assert!(out.contains("best at c=16: speculative-num-steps=4 (1596)"));
    assert!(out.contains("OOM at load"));
    insta::assert_snapshot!("text", out);
}

#[test]
fn markdown_table_of_the_reference_campaign() {
    let out = reference("markdown");
    assert!(out.contains("| speculative-num-steps | c=1 | c=4 | c=16 | c=32 | c=64 |"));
    assert!(out.contains("**1596** \\* (+56%)"));
    insta::assert_snapshot!("markdown", out);
}

#[test]
fn csv_of_the_reference_campaign() {
    let out = reference("csv");
    // Read it back the way a spreadsheet script would.
    let table = testkit::output::Csv::parse(&out);
    assert_eq!(table.rows.len(), 7 * 5, "7 configs x 5 levels");
    let col = |n: &str| table.col(n);
    let mut best: Vec<(String, String)> = table
        .rows
        .iter()
        .filter(|r| r[col("best")] == "true")
        .map(|r| {
            (
                r[col("level")].clone(),
                r[col("config.speculative-num-steps")].clone(),
            )
        })
        .collect();
    let want = [
        ("c=1", "5"),
        ("c=4", "4"),
        ("c=16", "4"),
        ("c=32", "3"),
        ("c=64", "0"),
    ];
    let mut want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    best.sort();
    want.sort();
    assert_eq!(best, want);
    insta::assert_snapshot!("csv", out);
}

#[test]
fn json_summary_of_the_reference_campaign() {
    let run = summarize(&["--format", "json", &fixture()], "");
    run.expect_code(0);
    let mut rec = summary(&run);
    // The default objective weighs every level equally: steps=4, good
    // everywhere, beats steps=0, which wins only at c=64.
    assert_eq!(rec["objective"], "weighted");
    assert_eq!(rec["best_config"]["speculative-num-steps"], "4");
    assert_eq!(rec["best_per_level"]["c=16"]["speculative-num-steps"], "4");
    assert_eq!(rec["simulated"], false);
    assert!(rec.get("best_unset").is_none(), "{}", rec["best_unset"]);
    // Objective max picks the single best cell: speculation off at c=64,
    // which leaves speculative-algorithm unset: say to remove it.
    let max = summary(
        summarize(&["--format", "json", "--objective", "max", &fixture()], "").expect_code(0),
    );
    assert_eq!(max["best_config"]["speculative-num-steps"], "0");
    assert_eq!(
        max["best_unset"],
        serde_json::json!(["speculative-algorithm"])
    );
    // The summary parses as the shared record type.
    let parsed: sweepkit::Record = serde_json::from_value(rec.clone()).unwrap();
    assert_eq!(parsed.kind(), "summary");
    // Provenance changes every run (time, host): pin it for the snapshot.
    rec["provenance"] = serde_json::json!({"tool": "summarize", "redacted": true});
    insta::assert_snapshot!("json", serde_json::to_string_pretty(&rec).unwrap());
}
