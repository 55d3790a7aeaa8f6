//! sweep.sh reads its results file through summarize, never by the order
//! serde wrote the fields in (issue 16): a results file whose records have
//! their fields reversed, `"type"` last, and fields no tool writes yet
//! still drives `--resume` and the bench count correctly.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

mod sweep_support;

use serde_json::{Map, Value};
use sweep_support::{all_records, dump, records, sweep, with_config, SpecFile};

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
    let port = testkit::free_port();
    let exec = format!(
        "{} --host 127.0.0.1 --port {port} --load-time 200ms --warmup-time 100ms \
         --seed 1 --kv-capacity-tokens 8192 \
         --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 4",
        testkit::bin("llm-sim").display()
    );
    let spec = SpecFile::new("sweep-contract", &exec, port);
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let res = results.to_str().unwrap().to_string();
    let base = [
        "--spec",
        spec.s(),
        "--url",
        &url,
        "--server",
        "llm-sim",
        "--results",
        &res,
        "--param",
        KEY,
        "--concurrency",
        "1",
        "--load-arg",
        "-n",
        "--load-arg",
        "2",
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "8",
    ];
    // steps=1 measures, steps=9 is an OOM at load (a failure of its own).
    let mut first: Vec<&str> = base.to_vec();
    first.extend(["--values", "1,9"]);
    let out = sweep(&first).output().unwrap();
    assert_eq!(out.status.code(), Some(40), "{}", dump(&out));
    assert_eq!(records(&results).len(), 2, "{}", dump(&out));
    scramble(&results);

    let mut again: Vec<&str> = base.to_vec();
    again.extend(["--values", "1,9,2", "--resume"]);
    let out = sweep(&again).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
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
