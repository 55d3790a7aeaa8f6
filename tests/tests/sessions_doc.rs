//! `loadgen --sessions` output against sweepkit-records(5): the bench
//! record's `load.workload.sessions` block and the `--requests-out` lines'
//! `session` and `turn` are documented, and the lines round-trip through
//! the typed `RequestLine`. Needs `cargo build --workspace --bins`.

use serde_json::Value;
use sweepkit::lines::RequestLine;
use testkit::{cmd, run};

#[test]
fn sessions_records_and_request_lines_are_documented() {
    let sim =
        testkit::Sim::start_ready(&["--load-time", "0s", "--warmup-time", "0s", "--zero-delay"]);
    let dir = testkit::temp_dir("sessions-doc");
    let file = dir.join("sharegpt.json");
    std::fs::write(
        &file,
        r#"[{"id": "x", "conversations": [{"from": "human", "value": "hello there"},
            {"from": "gpt", "value": "hi"}, {"from": "human", "value": "and again"}]}]"#,
    )
    .unwrap();
    let req = dir.join("req.jsonl");
    let (f, r) = (file.to_str().unwrap(), req.to_str().unwrap());
    let args = [
        "--url",
        &sim.base_url(),
        "--sessions",
        f,
        "--requests-out",
        r,
        "--quiet",
    ];
    let out = run(cmd("loadgen", &args), "");
    out.expect_code(0);
    let bench = &out.json_lines()[0];
    let src = sweepkit_tests::records_source();
    let missing = sweepkit_tests::undocumented(&src, bench);
    assert!(missing.is_empty(), "undocumented: {missing:?} in {bench}");
    assert_eq!(bench["load"]["workload"]["sessions"]["turns"], 2, "{bench}");
    let text = std::fs::read_to_string(&req).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        let missing = sweepkit_tests::undocumented_line(&src, "RequestLine", l);
        assert!(missing.is_empty(), "undocumented: {missing:?} in {l}");
        let typed: RequestLine = serde_json::from_value(l.clone()).unwrap();
        assert_eq!(serde_json::to_value(&typed).unwrap(), *l, "round trip");
        assert_eq!(typed.session, Some(0));
    }
}
