//! sweep.sh reads its results file through summarize, never by the order
//! serde wrote the fields in (issue 16): a results file whose records have
//! their fields reversed, `"type"` last, and fields no tool writes yet
//! still drives `--resume` and the bench count correctly.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

mod sweep_support;

use serde_json::{Map, Value};
use sweep_support::{all_records, dump, records, stderr, with_config, SimExec, SweepArgs};

const KEY: &str = "speculative-num-steps";

/// Rewrite `path` with every record's fields in reverse order and a new
/// field first (serde_json keeps insertion order here).
fn scramble(path: &std::path::Path) {
    let mut text = String::new();
    for r in all_records(path) {
        let obj = r.as_object().expect("object");
        let mut m = Map::new();
        m.insert(
            "field_from_a_newer_tool".into(),
            serde_json::json!({"x": 1}),
        );
        for (k, v) in obj.iter().rev() {
            m.insert(k.clone(), v.clone());
        }
        text.push_str(&Value::Object(m).to_string());
        text.push('\n');
    }
    assert!(!text.starts_with(r#"{"type""#));
    std::fs::write(path, text).unwrap();
}

#[test]
fn resume_reads_records_by_field_not_by_field_order() {
    let (spec, url) = SimExec::free().kv(8192).eagle(4).spec("sweep-contract");
    let results = spec.results();
    let base = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .args(&["--param", KEY])
        .levels("1")
        .quick("2", "8");
    // steps=1 measures, steps=9 is an OOM at load (a failure of its own).
    let out = base.clone().args(&["--values", "1,9"]).expect(40);
    assert_eq!(records(&results).len(), 2, "{}", dump(&out));
    scramble(&results);

    let out = base.args(&["--values", "1,9,2", "--resume"]).expect(0);
    let err = stderr(&out);
    for v in ["1", "9"] {
        assert!(
            err.contains(&format!("{KEY}={v}: already in")),
            "steps={v} is done whatever its field order: {}",
            dump(&out)
        );
    }
    // The new config's bench record is counted (loadgen's own order).
    assert!(err.contains("1 bench record(s)"), "{}", dump(&out));
    let recs = records(&results);
    assert_eq!(recs.len(), 3, "only steps=2 was measured: {}", dump(&out));
    assert_eq!(with_config(&recs, "bench", KEY, "2").len(), 1);
    let origins = all_records(&results)
        .into_iter()
        .filter(|r| r["type"] == "origin")
        .count();
    assert_eq!(origins, 1, "the scrambled origin record was read back");
}
