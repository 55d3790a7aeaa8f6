//! `sweep --validate-on FILE --slo TERMS` (issue 35, item 5): after the
//! sweep the pick is applied and the trace replayed against it once more;
//! its records land in the results file marked `validation` (never one of
//! the sweep's cells, never moving the pick) and summarize's table ends
//! with "validated on FILE: the pick (...): goodput X req/s under TERMS, N
//! of M within". A file that is no trace is refused before the first stop.
//! Needs `cargo build --workspace --bins`.

mod sweep_support;

use serde_json::Value;
use sweep_support::{dump, records, six_request_trace, SimExec, SweepArgs};

#[test]
fn the_pick_is_validated_on_the_trace_apart_from_the_sweeps_results() {
    let (spec, url) = SimExec::free()
        .load("100ms")
        .eagle(1)
        .spec("sweep-validate");
    let dir = testkit::temp_dir("sweep-validate");
    let trace = six_request_trace(&dir, "validate.jsonl");
    let t = trace.to_str().unwrap();
    let args = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .param("speculative-num-steps", "1,3")
        .levels("1")
        .quick("6", "8")
        .load(&["--block-size", "32"])
        .args(&["--validate-on", t, "--slo", "ttft_ms<=60000"]);
    let out = args.expect(0);
    let recs = records(&spec.results());
    let (val, sweep): (Vec<&Value>, Vec<&Value>) = recs
        .iter()
        .filter(|r| r["type"] == "bench")
        .partition(|r| r.get("validation").is_some());
    assert_eq!(sweep.len(), 2, "{}", dump(&out));
    assert_eq!(val.len(), 1, "{}", dump(&out));
    let v = val[0];
    assert_eq!(v["validation"]["of"], "pick", "{v}");
    assert_eq!(v["validation"]["trace"], t, "{v}");
    assert_eq!(v["load"]["mode"], "trace", "{v}");
    assert_eq!(v["load"]["workload"]["requests"], 6, "{v}");
    assert_eq!(v["counts"]["completed"], 6, "{v}");
    // The replay ran against summarize's pick, applied at the end, and its
    // record (and the line) names that config.
    let picked = &v["config"]["speculative-num-steps"];
    assert!(picked == "1" || picked == "3", "{v}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let want = format!(
        "validated on {t}: the pick (speculative-num-steps={}): goodput ",
        picked.as_str().unwrap()
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with(&want))
        .unwrap_or_else(|| panic!("no line starting {want:?}: {}", dump(&out)));
    assert!(
        line.ends_with("req/s under ttft_ms<=60000, 6 of 6 within"),
        "{line}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("validating on {t}: replaying it against the pick")),
        "{}",
        dump(&out)
    );
    // The validation is no cell and moves no pick: summarize picks the
    // same from the file with and without its record.
    let res = spec.results();
    let text = std::fs::read_to_string(&res).unwrap();
    let without = dir.join("without.jsonl");
    let kept: String = text
        .lines()
        .filter(|l| !l.contains("\"validation\""))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&without, kept).unwrap();
    let best = |f: &std::path::Path| {
        let o = testkit::cmd("summarize", &["--format", "json", f.to_str().unwrap()])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["best_config"].clone(), v["best_per_level"].clone())
    };
    assert_eq!(best(&res), best(&without));
    // JSON carries the validation with the same line; the report shows it.
    let report = dir.join("report.html");
    let o = testkit::cmd(
        "summarize",
        &[
            "--format",
            "json",
            "--report",
            report.to_str().unwrap(),
            res.to_str().unwrap(),
        ],
    )
    .output()
    .unwrap();
    let sum: Value = serde_json::from_slice(&o.stdout).unwrap();
    let vals = sum["validations"]
        .as_array()
        .expect("validations in the JSON");
    assert_eq!(vals.len(), 1, "{sum}");
    assert_eq!(vals[0]["config"], v["config"], "{sum}");
    assert_eq!(vals[0]["line"].as_str(), Some(line), "{sum}");
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("<section id=\"validations\">"), "{html}");
    // The original config is back: the end restored it after validating.
    assert!(
        std::fs::read_to_string(&spec.path)
            .unwrap()
            .contains(&sweep_support::sim::eagle(1)),
        "{}",
        dump(&out)
    );
}

#[test]
fn a_validation_file_that_is_no_trace_is_refused_before_the_first_stop() {
    let (spec, url) = SimExec::free().eagle(1).spec("sweep-validate-bad");
    let dir = testkit::temp_dir("sweep-validate-bad");
    let bad = dir.join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"timestamp\": 0, \"input_length\": 40, \"output_length\": 8, \"hash_ids\": [1]}\nnot json\n",
    )
    .unwrap();
    let b = bad.to_str().unwrap();
    let before = std::fs::read_to_string(&spec.path).unwrap();
    let out = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .param("speculative-num-steps", "1,3")
        .load(&["--block-size", "64"])
        .args(&["--validate-on", b])
        .expect(2);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", dump(&out));
    assert!(
        lines[0].starts_with(&format!(
            "sweep: error: --validate-on {b}: line 2: not a JSON object"
        )),
        "{}",
        lines[0]
    );
    // Nothing stopped, nothing written.
    assert_eq!(std::fs::read_to_string(&spec.path).unwrap(), before);
    assert!(!spec.results().exists(), "{}", dump(&out));
}
