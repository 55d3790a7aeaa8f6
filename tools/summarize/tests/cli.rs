//! The built summarize against the fixture and hand-edited inputs:
//! objectives, baselines, metrics, CSV input, stdin, the simulated notice,
//! records it must ignore without crashing, and bad input with file and line.

mod common;

use common::{fixture, fixture_lines, summarize, summary, summary_of, temp_file};
use serde_json::Value;
use testkit::assert_contains;

fn steps(cfg: &Value) -> &str {
    cfg["speculative-num-steps"].as_str().unwrap_or("?")
}

#[test]
fn slo_objective_picks_steps4_at_c16() {
    // e2e p99 grows with concurrency: c=32 and c=64 miss 2000 ms.
    let slo = "p99_e2e_ms<=2000,p99_ttft_ms<=500";
    let rec = summary_of(&["-f", "json", "--slo", slo, &fixture()], "");
    assert_eq!(rec["objective"], "slo");
    assert_eq!(steps(&rec["best_config"]), "4");
    assert_eq!(rec["details"]["overall"]["level"], "c=16");
    assert!(rec["best_per_level"].get("c=64").is_none(), "{rec}");
}

#[test]
fn weighted_objective_picks_steps4() {
    let rec = summary_of(
        &["-f", "json", "--weights", "c=1:0.5,c=16:0.5", &fixture()],
        "",
    );
    assert_eq!(rec["objective"], "weighted");
    assert_eq!(steps(&rec["best_config"]), "4");
    let s4 = rec["details"]["weighted_scores"]["speculative-num-steps=4"]
        .as_f64()
        .unwrap();
    assert!((s4 - (0.5 * 277.0 / 282.0 + 0.5)).abs() < 1e-3, "{s4}");
    // The failed config scores zero rather than vanishing.
    assert_eq!(
        rec["details"]["weighted_scores"]["speculative-num-steps=10"],
        0.0
    );
}

#[test]
fn unknown_weight_level_is_a_usage_error() {
    let run = summarize(&["-f", "json", "--weights", "c=8:1", &fixture()], "");
    run.expect_code(2);
    assert_contains(&run.stderr(), "--weights names c=8");
}

#[test]
fn baseline_flag_and_unknown_baseline() {
    let run = summarize(
        &[
            "-f",
            "csv",
            "--baseline",
            "speculative-num-steps=3",
            &fixture(),
        ],
        "",
    );
    run.expect_code(0);
    assert!(run
        .stdout()
        .contains(",c=1,throughput.output_tok_per_s,1,234.0,234.0,0.0,0.0,"));
    let bad = summarize(
        &[
            "-f",
            "json",
            "--baseline",
            "speculative-num-steps=7",
            &fixture(),
        ],
        "",
    );
    bad.expect_code(2);
    assert!(bad
        .stderr()
        .contains("values of speculative-num-steps: 0, 1, 2, 3, 4, 5, 10"));
}

#[test]
fn latency_metric_by_alias_is_lower_is_better() {
    let rec = summary_of(&["-f", "json", "--metric", "p99_ttft_ms", &fixture()], "");
    assert_eq!(rec["metric"], "ttft_ms.p99");
    assert_eq!(rec["details"]["better"], "lower");
    // TTFT rises with steps in the fixture: off is fastest at every level.
    assert_eq!(steps(&rec["best_per_level"]["c=1"]), "0");
    let bad = summarize(&["--metric", "bogus", &fixture()], "");
    bad.expect_code(2);
}

#[test]
fn piped_stdout_gets_the_text_table_and_json_only_when_asked() {
    // `summarize FILE > out.txt` (issue 33): stdout is no terminal here,
    // and the output is still the table a person reads, from stdin too.
    let text = std::fs::read_to_string(fixture()).unwrap();
    let run = summarize(&[], &text);
    run.expect_code(0);
    let out = run.stdout();
    assert!(out.starts_with("metric:"), "{out}");
    assert!(out.contains("\nrecommendation: apply "), "{out}");
    assert!(!out.contains("\"type\""), "no record in the text: {out}");
    let file = summarize(&[&fixture()], "");
    assert_eq!(
        file.expect_code(0).stdout(),
        out,
        "a file reads as stdin does"
    );
    let json = summarize(&["--format", "json"], &text);
    assert_eq!(
        steps(&summary(json.expect_code(0))["best_per_level"]["c=1"]),
        "5"
    );
}

#[test]
fn loadgen_csv_input_gives_the_same_picks() {
    let records: Vec<Value> = fixture_lines()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut buf = Vec::new();
    sweepkit::flat::write_csv(&mut buf, &records).unwrap();
    let csv_path = temp_file("results.csv", &String::from_utf8(buf).unwrap());
    let from_csv = summary(summarize(&["-f", "json", &csv_path], "").expect_code(0));
    let from_jsonl = summary(summarize(&["-f", "json", &fixture()], "").expect_code(0));
    assert_eq!(from_csv["best_per_level"], from_jsonl["best_per_level"]);
    assert_eq!(from_csv["plateau"], from_jsonl["plateau"]);
}

#[test]
fn simulated_records_are_announced() {
    let lines: Vec<String> = fixture_lines()
        .iter()
        .map(|l| l.replace("\"simulated\":false", "\"simulated\":true"))
        .collect();
    let input = lines.join("\n");
    let text = summarize(&["-f", "text"], &input);
    text.expect_code(0);
    assert!(text
        .stdout()
        .starts_with("SIMULATED: 34 of 35 records came from a simulated server"));
    let rec = summary(summarize(&["-f", "json"], &input).expect_code(0));
    assert_eq!(rec["simulated"], true);
    let md = summarize(&["-f", "markdown"], &input);
    assert!(md.stdout().starts_with("> **SIMULATED"));
}

#[test]
fn other_versions_missing_fields_and_mixed_levels_do_not_crash() {
    let mut lines = fixture_lines();
    // A newer schema with an unknown field, a record missing its metric, an
    // open-loop level, a record type from the future, and non-bench records.
    lines[0] = lines[0].replace("\"schema\":1", "\"schema\":3,\"new_field\":{\"x\":1}");
    let mut no_metric: Value = serde_json::from_str(&lines[1]).unwrap();
    no_metric["throughput"]
        .as_object_mut()
        .unwrap()
        .remove("output_tok_per_s");
    lines[1] = no_metric.to_string();
    let mut open: Value = serde_json::from_str(&lines[2]).unwrap();
    open["load"] = serde_json::json!({"mode": "open", "rate_rps": 2.5});
    lines.push(open.to_string());
    lines.push(r#"{"type":"calibration","schema":9}"#.into());
    lines.push(r#"{"type":"ready","schema":1,"config":{}}"#.into());
    lines.push(r#"{"type":"bench","schema":1,"config":{"speculative-num-steps":"2"}}"#.into());
    let path = temp_file("mixed.jsonl", &lines.join("\n"));
    let run = summarize(&["-f", "text", &path], "");
    run.expect_code(0);
    let err = run.stderr();
    for want in [
        format!("{path}: line 1: schema 3 is newer"),
        format!("{path}: line 2: bench record has no number at throughput.output_tok_per_s"),
        format!("{path}: line 37: unknown record type \"calibration\""),
        format!("{path}: line 39: bench record has no load level"),
        format!("{path}: skipped 1 ready record"),
        "mixes closed-loop (c=N) and open-loop (rate=R) levels".to_string(),
    ] {
        assert!(err.contains(&want), "missing {want:?} in:\n{err}");
    }
    assert!(run.stdout().contains("rate=2.5"));
}

#[test]
fn malformed_line_is_reported_with_file_and_line() {
    let mut lines = fixture_lines();
    lines[4] = "{\"type\":\"bench\",".into();
    let path = temp_file("broken.jsonl", &lines.join("\n"));
    let run = summarize(&["-f", "json", &path], "");
    run.expect_code(3);
    assert!(run.stdout().is_empty(), "no half output: {}", run.stdout());
    let err = run.stderr();
    assert!(
        err.starts_with(&format!("summarize: error: {path}: line 5: not JSON")),
        "{err}"
    );
}

#[test]
fn file_of_the_wrong_kind_is_reported_with_file_and_line() {
    // A file `name` holding `text` is refused (exit 3) with "FILE: `says`".
    let refused = |name: &str, text: &str, says: &str| {
        let path = temp_file(name, text);
        let run = summarize(&[&path], "");
        run.expect_code(3);
        testkit::assert_contains(&run.stderr(), &format!("{path}: {says}"));
    };
    refused(
        "package.json",
        "{\"name\":\"x\",\"version\":\"1\"}\n",
        "line 1: record has no \"type\" field",
    );
    refused(
        "notes.txt",
        "speculative steps went well\n",
        "line 1: neither JSON Lines",
    );
    let missing = summarize(&["/nonexistent/results.jsonl"], "");
    missing.expect_code(3);
    let only_swaps = summarize(&[], "{\"type\":\"swap\",\"config\":{}}\n");
    only_swaps.expect_code(3);
    assert!(only_swaps.stderr().contains("no bench or failure records"));
}

#[test]
fn only_failures_exit_1_with_an_empty_pick() {
    let fail = fixture_lines().pop().unwrap();
    let run = summarize(&["-f", "json"], &fail);
    run.expect_code(1);
    let rec = summary(&run);
    assert_eq!(rec["best_config"], serde_json::json!({}));
    assert!(run.stderr().contains("no config was picked"));
}

#[test]
fn noisy_repeats_warn_and_conservative_pick_holds() {
    let run = summarize(&["-f", "json", &fixture()], "");
    let rec = summary(run.expect_code(0));
    // steps=1 has the higher median at c=64 (3150 vs 3100) but spreads 250
    // tok/s: median - 1.4826 x MAD ranks steps=0 first.
    assert_eq!(steps(&rec["best_per_level"]["c=64"]), "0");
    let w = rec["warnings"].as_array().unwrap();
    assert!(
        w.iter()
            .any(|w| w.as_str().unwrap().contains("the pick is within noise")),
        "{w:?}"
    );
    assert!(run
        .stderr()
        .contains("summarize: warning: speculative-num-steps=0 at c=64"));
}

#[test]
fn tolerance_and_plateau_threshold_flags() {
    // At c=1 steps=5 (282) beats steps=4 (277) by 1.8%: outside the default
    // 1% tolerance, inside 2%, where the smaller value wins.
    let d = summary(summarize(&["-f", "json", &fixture()], "").expect_code(0));
    assert_eq!(steps(&d["best_per_level"]["c=1"]), "5");
    let t = summary(summarize(&["-f", "json", "--tolerance", "2%", &fixture()], "").expect_code(0));
    assert_eq!(steps(&t["best_per_level"]["c=1"]), "4");
    // A 1% threshold counts the +1.8% as a gain: no plateau at c=1.
    let p = summary(
        summarize(&["-f", "json", "--plateau-threshold", "1%", &fixture()], "").expect_code(0),
    );
    assert_eq!(p["details"]["plateau_by_level"]["c=1"], Value::Null);
    assert!(p["plateau"]
        .as_str()
        .unwrap()
        .contains("still gaining 1% or more"));
}

/// The fixture's line index of the bench record for `steps` at c=`c`.
fn bench_line(lines: &[String], steps: &str, c: u64) -> usize {
    lines
        .iter()
        .position(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["type"] == "bench"
                && v["config"]["speculative-num-steps"] == steps
                && v["load"]["concurrency"] == c
        })
        .expect("fixture has the record")
}

/// A copy of `line` marked `"partial": true` with `tps` output tok/s.
fn partial_copy(line: &str, tps: f64) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    v["partial"] = Value::Bool(true);
    v["throughput"]["output_tok_per_s"] = serde_json::json!(tps);
    v.to_string()
}

#[test]
fn partial_level_superseded_by_a_resumed_complete_one_is_ignored() {
    // Ctrl-C cut steps=4 at c=16 short; `sweep.sh --resume` appended the
    // complete record. The partial one must not count as a repeat.
    let lines = fixture_lines();
    let i = bench_line(&lines, "4", 16);
    let mut text = vec![partial_copy(&lines[i], 400.0)];
    text.extend(lines.iter().cloned());
    let path = temp_file("resumed.jsonl", &(text.join("\n") + "\n"));
    let run = summarize(&["-f", "json", &path], "");
    run.expect_code(0);
    let rec = summary(&run);
    let cell = rec["details"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["label"] == "speculative-num-steps=4" && c["level"] == "c=16")
        .unwrap()
        .clone();
    assert_eq!(cell["runs"], 1, "{cell}");
    assert_eq!(cell["median"].as_f64(), Some(1596.0), "{cell}");
    assert!(cell.get("partial").is_none(), "{cell}");
    let note = format!(
        "{path}: line 1: partial record for c=16 (cut short) ignored: a complete \
         record for the same config and level is at {path}: line {}",
        i + 2
    );
    assert!(run.stderr().contains(&note), "{}", run.stderr());
}

#[test]
fn partial_level_without_a_complete_one_is_kept_and_marked() {
    let mut lines = fixture_lines();
    let i = bench_line(&lines, "4", 16);
    lines[i] = partial_copy(&lines[i], 1596.0);
    let path = temp_file("cut.jsonl", &(lines.join("\n") + "\n"));
    let run = summarize(&["-f", "text", &path], "");
    run.expect_code(0);
    let out = run.stdout();
    let row = out
        .lines()
        .find(|l| l.starts_with("4 "))
        .unwrap_or_else(|| panic!("{out}"));
    assert_contains(row, "1596  +56% *~");
    assert_contains(
        &out,
        "~: from a level cut short (partial record, no complete one)",
    );
    assert_eq!(
        out.matches('~').count(),
        2,
        "only that cell and the legend: {out}"
    );
    assert_contains(
        &run.stderr(),
        &format!(
            "{path}: line {}: c=16 was cut short (partial) and has no complete record",
            i + 1
        ),
    );
    let md = summarize(&["-f", "markdown", &path], "");
    md.expect_code(0);
    assert!(md.stdout().contains("(+56%, partial)"), "{}", md.stdout());
    let json = summarize(&["-f", "json", &path], "");
    let rec = summary(&json);
    let partial: Vec<&Value> = rec["details"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["partial"] == true)
        .collect();
    assert_eq!(partial.len(), 1, "{partial:?}");
    assert_eq!(partial[0]["level"], "c=16");
}

/// Issue 21: a killed svc-swap left loadgen with no upstream record, and its
/// `config: {}` bench records became the baseline row "unset (speculation
/// off)". They are orphans now: in no row, counted in one warning.
#[test]
fn configless_records_never_become_the_speculation_off_baseline() {
    let lines = fixture_lines();
    // The fixture without its steps=0 rows, plus three orphans.
    let mut input: Vec<String> = lines
        .iter()
        .filter(|l| !l.contains("\"speculative-num-steps\":\"0\""))
        .cloned()
        .collect();
    let orphan = lines[0].replace(
        "\"config\":{\"model-path\":\"/models/Qwen3-8B\",\"speculative-num-steps\":\"0\",\"tp-size\":\"1\"}",
        "\"config\":{}",
    );
    assert!(
        orphan.contains("\"config\":{}"),
        "fixture changed: {orphan}"
    );
    input.extend([orphan.clone(), orphan.clone(), orphan]);
    let text = summarize(&["-f", "text"], &input.join("\n"));
    text.expect_code(0);
    assert!(!text.stdout().contains("unset"), "{}", text.stdout());
    assert!(
        text.stdout()
            .contains("baseline: speculative-num-steps=1 (first config)"),
        "{}",
        text.stdout()
    );
    assert!(
        text.stderr()
            .contains("3 orphan record(s) with no config (3 bench, 0 failure;"),
        "{}",
        text.stderr()
    );
    let rec = summary(summarize(&["-f", "json"], &input.join("\n")).expect_code(0));
    assert_eq!(steps(&rec["details"]["baseline"]["config"]), "1");
}

/// Issue 21: with `--values 1,-1,2,4` against the real vLLM (it rejects -1
/// at start) the default baseline became `-1 (first config)` and every
/// change column was empty. The baseline must have results.
#[test]
fn a_config_that_failed_everywhere_is_not_the_baseline() {
    let bench = |k: &str, c: u32, tps: f64| {
        format!(
            r#"{{"type":"bench","config":{{"num_speculative_tokens":"{k}"}},"load":{{"mode":"closed","concurrency":{c}}},"throughput":{{"output_tok_per_s":{tps}}}}}"#
        )
    };
    let input = [
        bench("1", 1, 100.0),
        bench("1", 4, 300.0),
        r#"{"type":"failure","config":{"num_speculative_tokens":"-1"},"stage":"ready","kind":"crashed_at_load","class":"config","reason":"ValidationError"}"#.to_string(),
        bench("2", 1, 150.0),
        bench("2", 4, 330.0),
        bench("4", 1, 180.0),
        bench("4", 4, 240.0),
    ]
    .join("\n");
    let text = summarize(&["-f", "text"], &input);
    text.expect_code(0);
    let out = text.stdout();
    assert_contains(
        &out,
        "baseline: num_speculative_tokens=1 (first config with results)",
    );
    assert!(out.contains("+50%"), "changes against k=1 are shown: {out}");
    // Speculation off measured: it is the baseline; failed everywhere: not.
    let with_off = format!(
        "{input}\n{}",
        r#"{"type":"failure","config":{"num_speculative_tokens":"0"},"stage":"ready","kind":"oom","class":"config","reason":"x"}"#
    );
    let out = summarize(&["-f", "text"], &with_off)
        .expect_code(0)
        .stdout();
    assert_contains(
        &out,
        "(first config with results; speculation off has none)",
    );
    let with_off = format!("{input}\n{}\n{}", bench("0", 1, 90.0), bench("0", 4, 200.0));
    let out = summarize(&["-f", "text"], &with_off)
        .expect_code(0)
        .stdout();
    assert_contains(&out, "baseline: num_speculative_tokens=0 (speculation off)");
}

#[test]
fn failures_wrap_between_words_and_keep_the_whole_reason() {
    // Issue 33 saw "restored the o": the reason was cut at 160 characters.
    let cfg = [("speculative-num-steps", "9")];
    let mut f = common::make::failure(&cfg, "ready", "crashed_at_load", None);
    let reason = "PID 4242 exited at once (exit 1) before the port opened; the log's \
                  last line says the flag is unknown; sweep restored the original config \
                  and the server answered its health check again within 2.4 s afterwards";
    assert!(reason.len() > 160);
    f["reason"] = Value::String(reason.into());
    let mut input = fixture_lines().join("\n");
    input.push('\n');
    input += &common::make::lines(&[f]);
    let out = summarize(&["-f", "text"], &input);
    let out = out.expect_code(0).stdout();
    let section = out
        .split("\nfailures:\n")
        .nth(1)
        .expect("a failures section");
    let lines: Vec<&str> = section
        .lines()
        .take_while(|l| l.starts_with("  "))
        .collect();
    let words = lines
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mine = &words[words.find("speculative-num-steps=9: ").expect("its line")..];
    let end = mine[1..]
        .find("speculative-num-steps=")
        .map_or(mine.len(), |i| i + 1);
    assert!(
        mine[..end].trim_end().ends_with(reason),
        "the whole reason, word by word:\n{out}"
    );
    for l in &lines {
        assert!(l.chars().count() <= 79, "{l:?} is wider than 79 columns");
    }
}

/// Regression (issue 47): after a resumed sweep every cell carried a `!`
/// no legend explained, and "failures:" listed the interruptions a later
/// run made good. The mark has its legend line; an interruption (no
/// class given: its kind's, the transport's) marks nothing.
#[test]
fn a_failed_run_beside_measured_ones_is_marked_and_explained_an_interruption_is_not() {
    let cfg = [("speculative-num-steps", "2")];
    let bench = common::make::bench(&cfg, 1, 100.0, 10.0, 50.0);
    let failed = common::make::failure(&cfg, "bench", "bench_failed", Some(1));
    let out = summarize(
        &["-f", "text"],
        &common::make::lines(&[bench.clone(), failed]),
    );
    let text = out.expect_code(0).stdout();
    assert_contains(
        &text,
        "!: a run of that cell failed beside the measured ones (see failures)",
    );
    assert_contains(&text, "\nfailures:\n");
    let mut stopped = common::make::failure(&cfg, "bench", "interrupted", Some(1));
    stopped.as_object_mut().unwrap().remove("class");
    let out = summarize(&["-f", "text"], &common::make::lines(&[stopped, bench]));
    let text = out.expect_code(0).stdout();
    assert!(!text.contains('!'), "{text}");
    assert!(!text.contains("failures:"), "{text}");
}
