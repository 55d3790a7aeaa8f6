//! `sweep --adaptive` end to end against llm-sim under svc-swap's process
//! manager: the search stops early, every untried value gets a skipped
//! record, the cost is reported, the decision is a function of the file
//! (each prefix of the results asks for the config measured next, so a
//! resumed sweep continues the same decisions) and a resumed sweep
//! finishes from a cut file without measuring again what it holds.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

mod sweep_support;

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;
use sweep_support::{all_records, dump, stderr, stdout, SimExec, SpecFile, SweepArgs};

const KEY: &str = "speculative-num-steps";
const VALUES: &str = "1,2,3,4,5,6,7,8";

/// llm-sim where steps >= 4 crash at load (context 4096 + 4 x 512 > 6000
/// KV tokens): the search must stop there whatever the noise of a busy
/// machine does to steps 1..3.
fn sim_spec(tag: &str) -> (SpecFile, String) {
    let sim = SimExec::free().load("100ms").warmup("50ms").probe("10ms");
    sim.kv(6000).eagle(1).spec(tag)
}

fn args(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "llm-sim")
        .param(KEY, VALUES)
        .args(&["--adaptive", "--repeat-budget", "2"])
        .levels("1,2")
        .load(&["-n", "4", "--max-tokens", "16", "--seed", "1"])
}

/// The swept value of a record.
fn value(r: &Value) -> String {
    r["config"][KEY].as_str().unwrap_or("?").to_string()
}

/// Records grouped by config start (bench records share their swap's id).
fn starts(recs: &[Value]) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    let id = |r: &Value| {
        r.pointer("/upstream/upstream/swap_id")
            .or_else(|| r.pointer("/swap_id"))
            .or_else(|| r.pointer("/upstream/swap_id"))
            .map(Value::to_string)
            .unwrap_or_default()
    };
    let mut last = String::new();
    for (i, r) in recs.iter().enumerate() {
        if !matches!(r["type"].as_str(), Some("bench" | "failure")) {
            continue;
        }
        if id(r) != last || out.is_empty() {
            last = id(r);
            out.push((value(r), Vec::new()));
        }
        out.last_mut().unwrap().1.push(i);
    }
    out
}

/// What sweep-plan answers for the file `text`, scored by summarize as
/// sweep --adaptive pipes them: `measure` and the value, or `done`.
fn next(text: &str) -> String {
    let dir = testkit::temp_dir("sweep-adaptive-next");
    let file = dir.join("results.jsonl");
    std::fs::write(&file, format!("{text}\n")).unwrap();
    let mut s = Command::new(testkit::bin("summarize"));
    s.args([
        "--format",
        "json",
        "--objective",
        "weighted",
        "--pool-hosts",
    ])
    .arg(&file);
    let scores = testkit::run(s, "").stdout();
    let mut c = Command::new(testkit::bin("sweep-plan"));
    c.args([
        "next",
        "--param",
        KEY,
        "--values",
        VALUES,
        "--repeat-budget",
        "2",
    ])
    .args(["--summary", "-", "--field", "action", "--field", "value"])
    .arg(&file);
    let r = testkit::run(c, &scores);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    std::fs::remove_dir_all(dir).unwrap();
    r.stdout()
}

#[test]
fn adaptive_sweep_stops_early_skips_the_rest_and_resumes_the_same_way() {
    let (spec, url) = sim_spec("sweep-adaptive");
    let results = spec.results();
    let out = args(&spec, &url).output();
    // 40 when the walk reached steps=4 (a crash at load, a failure of its
    // own); a busy machine can make steps 2 or 3 look worse and stop it
    // sooner. Either way every value is accounted for below.
    assert!(matches!(out.status.code(), Some(0 | 40)), "{}", dump(&out));
    let err = stderr(&out);
    assert!(err.contains("adaptive search done"), "{err}");
    assert!(err.contains("cost: restarts="), "{err}");
    let recs = all_records(&results);
    let measured: BTreeSet<String> = recs
        .iter()
        .filter(|r| matches!(r["type"].as_str(), Some("bench" | "failure")))
        .map(value)
        .collect();
    let skipped: Vec<String> = recs
        .iter()
        .filter(|r| r["type"] == "skipped")
        .map(value)
        .collect();
    // The file explains the whole grid: each value measured or skipped.
    let all: BTreeSet<String> = measured.iter().chain(&skipped).cloned().collect();
    let want: BTreeSet<String> = VALUES.split(',').map(String::from).collect();
    assert_eq!(all, want, "{}", dump(&out));
    assert!(!skipped.is_empty(), "{}", dump(&out));
    let num = |v: &String| v.parse::<u32>().unwrap();
    let last = measured.iter().map(num).max().unwrap();
    assert!(
        last <= 4,
        "steps >= 4 crash: the walk stops there: {}",
        dump(&out)
    );
    // The walk is in order: the skipped values are all past it.
    assert!(skipped.iter().all(|v| num(v) > last), "{}", dump(&out));
    for s in recs.iter().filter(|r| r["type"] == "skipped") {
        assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
        assert!(
            ["plateau", "peaked"].contains(&s["rule"].as_str().unwrap()),
            "{s}"
        );
    }
    let table = stdout(&out);
    assert!(
        table.contains("skipped: speculative-num-steps=8"),
        "{table}"
    );

    // Deterministic given the file: every prefix that ends with a whole
    // config start asks for the config the sweep measured next.
    let lines: Vec<String> = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let st = starts(&recs);
    assert!(st.len() >= 2, "{st:?}");
    for k in 1..st.len() {
        let end = *st[k - 1].1.last().unwrap() + 1;
        let ans = next(&lines[..end].join("\n"));
        assert_eq!(
            ans,
            format!("measure\n{}\n", st[k].0),
            "after {k} starts: {ans}"
        );
    }

    // A cut file (one start in) resumes: that start is not measured again,
    // and the search ends with every value accounted for.
    let cut = *st[0].1.last().unwrap() + 1;
    std::fs::write(&results, lines[..cut].join("\n") + "\n").unwrap();
    let out = args(&spec, &url).output();
    assert!(matches!(out.status.code(), Some(0 | 40)), "{}", dump(&out));
    let recs = all_records(&results);
    let again = starts(&recs);
    assert_eq!(again[0].0, st[0].0);
    assert_eq!(
        again[0].1.len(),
        cut - 1,
        "the origin, then the first start's records"
    );
    assert!(again.len() >= 2, "the search went on: {}", dump(&out));
    let all: BTreeSet<String> = recs
        .iter()
        .filter(|r| matches!(r["type"].as_str(), Some("bench" | "failure" | "skipped")))
        .map(value)
        .collect();
    assert_eq!(all, want, "{}", dump(&out));
}

#[test]
fn adaptive_refuses_a_grid_and_its_options_need_it() {
    for a in [
        &[
            "--param",
            KEY,
            "--values",
            "1,2",
            "--param",
            "x",
            "--values",
            "1",
            "--adaptive",
        ][..],
        &["--param", "a,b", "--values", "1:2", "--adaptive"],
        &["--param", KEY, "--values", "1,2", "--patience", "3"],
    ] {
        let out = SweepArgs::new()
            .args(&["--spec", "/nonexistent", "--url", "http://127.0.0.1:9"])
            .args(&["--results", "/tmp/x"])
            .args(a)
            .output();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{a:?}: {}", dump(&out));
        assert_eq!(err.lines().count(), 1, "{a:?}: {err}");
        assert!(err.starts_with("sweep: error: "), "{err}");
    }
}
