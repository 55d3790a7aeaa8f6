//! The validated schedule as its own row of the table (`sweep --schedule`'s
//! records: a `schedule` record upstream), from hand-made results files:
//! beside the static values in text, Markdown, the HTML report and JSON,
//! never the static best or pick; its change against the best static
//! value and against the weighted pick at each level, with the table's
//! noise rules (95% intervals over repeats) saying beyond noise or not;
//! and whether it wins by the objective (`details.schedule[].wins`, what
//! `sweep --keep-winner` reads).

mod common;

use common::make::bench;
use common::{summarize, summary, summary_of, temp_file};
use serde_json::{json, Value};

/// The derived schedule record upstream of the schedule's records.
fn schedule() -> Value {
    json!({"type": "schedule", "server": "sglang", "flags": ["--speculative-adaptive"]})
}

/// The schedule's bench record at `c`.
fn sched(c: u64, tput: f64) -> Value {
    common::make::schedule_bench(c, tput, &schedule())
}

fn steps(n: &str, c: u64, tput: f64) -> Value {
    bench(&[("speculative-num-steps", n)], c, tput, 10.0, 50.0)
}

/// The campaign (`schedule_campaign`) with the schedule's runs at `at`.
fn results(at: [f64; 3]) -> String {
    common::make::schedule_campaign(at, &schedule())
}

fn level<'a>(s: &'a Value, l: &str) -> &'a Value {
    s["levels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["level"] == l)
        .unwrap()
}

#[test]
fn a_schedule_at_the_per_level_best_is_its_own_row_and_wins_the_weighted_objective() {
    let f = temp_file("sched-wins.jsonl", &results([1600.0, 15000.0, 15000.0]));
    let s = summary_of(&[&f], "");
    // The static decisions never see the schedule.
    assert_eq!(s["best_config"], json!({"speculative-num-steps": "4"}));
    assert_eq!(s["best_per_level"]["c=1"]["speculative-num-steps"], "5");
    assert_eq!(s["best_per_level"]["c=64"]["speculative-num-steps"], "2");
    assert_eq!(s["details"]["cells"].as_array().unwrap().len(), 9);
    let sc = &s["details"]["schedule"][0];
    assert_eq!(sc["server"], "sglang");
    assert_eq!(sc["label"], "schedule (sglang)");
    assert_eq!(sc["wins"], true, "{sc}");
    assert_eq!(sc["pick"], "speculative-num-steps=4");
    assert!(sc["score"].as_f64().unwrap() > sc["pick_score"].as_f64().unwrap());
    // At each level: equal to the best static value (within noise), and
    // against the weighted pick (steps=4) +6.7% at c=1, beyond noise.
    for (l, best) in [("c=1", "5"), ("c=16", "4"), ("c=64", "2")] {
        let v = &level(sc, l)["vs_best_static"];
        assert_eq!(v["label"], format!("speculative-num-steps={best}"));
        assert_eq!(v["change_pct"], 0.0);
        assert_eq!(v["verdict"], "within_noise");
        assert_eq!(v["rule"], "95% intervals");
        assert_eq!(level(sc, l)["runs"], 3);
    }
    let c1 = &level(sc, "c=1")["vs_pick"];
    assert_eq!(
        (c1["change_pct"].as_f64(), &c1["verdict"]),
        (Some(6.67), &json!("better"))
    );
    let c64 = &level(sc, "c=64")["vs_pick"];
    assert_eq!(
        (c64["change_pct"].as_f64(), &c64["verdict"]),
        (Some(7.14), &json!("better"))
    );
    assert_eq!(level(sc, "c=16")["vs_pick"]["verdict"], "within_noise");
}

#[test]
fn a_schedule_worse_beyond_noise_somewhere_loses_and_says_where() {
    let f = temp_file("sched-loses.jsonl", &results([1400.0, 15000.0, 13000.0]));
    let sc = summary_of(&["--format", "json", &f], "")["details"]["schedule"][0].clone();
    assert_eq!(sc["wins"], false);
    assert!(sc["decision"]
        .as_str()
        .unwrap()
        .contains("the static pick speculative-num-steps=4 stands"));
    let c1 = &level(&sc, "c=1")["vs_best_static"];
    assert_eq!(
        (c1["change_pct"].as_f64(), &c1["verdict"]),
        (Some(-12.5), &json!("worse"))
    );
    let c64 = &level(&sc, "c=64")["vs_best_static"];
    assert_eq!(c64["verdict"], "worse");
    assert_eq!(c64["label"], "speculative-num-steps=2");
}

#[test]
fn the_human_formats_show_the_schedule_rows_beside_the_static_ones() {
    let f = temp_file("sched-text.jsonl", &results([1600.0, 15000.0, 15000.0]));
    let text = summarize(&["--format", "text", &f], "");
    text.expect_code(0);
    let out = text.stdout();
    let line = |start: &str| {
        out.lines()
            .find(|l| l.trim_start().starts_with(start))
            .unwrap_or_else(|| panic!("no line {start}:\n{out}"))
            .to_string()
    };
    let row = line("schedule (sglang)");
    assert!(row.contains("1600") && row.contains("15000"), "{row}");
    assert!(
        !row.contains('*'),
        "the schedule is never the best mark: {row}"
    );
    // The last words: per level the change and its verdict mark.
    let tail = |l: &str| -> Vec<String> {
        let w: Vec<&str> = l.split_whitespace().collect();
        w[w.len() - 6..].iter().map(|x| x.to_string()).collect()
    };
    let best = line("vs best static");
    assert_eq!(
        tail(&best),
        ["+0.0%", "=", "+0.0%", "=", "+0.0%", "="],
        "{best}"
    );
    let pick = line("vs weighted pick (speculative-num-steps=4)");
    assert_eq!(
        tail(&pick),
        ["+6.7%", "+", "+0.0%", "=", "+7.1%", "+"],
        "{pick}"
    );
    assert!(out.contains("best overall (weighted): speculative-num-steps=4"));
    insta::assert_snapshot!("schedule_text", out);
    assert!(out.contains(
        "schedule (sglang) vs the pick: schedule (sglang) wins by the objective (weighted)"
    ));
    // The per-level lines wrap between words: read them as one.
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "schedule (sglang) at c=1: 1600; +0.0% vs best static speculative-num-steps=5 (1600), \
         within noise (95% intervals); +6.7% vs the pick speculative-num-steps=4 (1500), \
         better beyond noise (95% intervals)"
        ),
        "{out}"
    );
    let md = summarize(&["--format", "markdown", &f], "");
    md.expect_code(0);
    let md = md.stdout();
    insta::assert_snapshot!("schedule_markdown", md);
    assert!(md.contains("| _schedule (sglang)_ | 1600 ± "), "{md}");
    assert!(md.contains("| ↳ vs best static | +0.0% (within noise) | +0.0% (within noise) | +0.0% (within noise) |"), "{md}");
    assert!(
        md.contains(
            "| ↳ vs weighted pick (speculative-num-steps=4) | +6.7% (better beyond noise) |"
        ),
        "{md}"
    );
    let csv = summarize(&["--format", "csv", &f], "");
    csv.expect_code(0);
    let csv = csv.stdout();
    let sched_rows: Vec<&str> = csv
        .lines()
        .filter(|l| l.contains("schedule (sglang)"))
        .collect();
    assert_eq!(sched_rows.len(), 3, "{csv}");
    assert!(
        sched_rows
            .iter()
            .all(|l| l.ends_with(",sglang") && l.contains(",false,")),
        "{csv}"
    );
    let report = std::path::PathBuf::from(temp_file("sched.html", ""));
    summarize(
        &["--format", "text", "--report", report.to_str().unwrap(), &f],
        "",
    )
    .expect_code(0);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(
        html.contains("<tr class=\"schedule\"><th>schedule (sglang)</th>"),
        "{html}"
    );
    assert!(html.contains("<tr class=\"schedule-vs\"><th>vs best static</th>"));
    assert!(html.contains("better beyond noise"));
}

#[test]
fn one_run_each_is_noise_unknown_and_the_derivation_ignores_the_schedules_records() {
    let mut recs = Vec::new();
    for (n, at) in [("2", [1100.0, 15000.0]), ("5", [1600.0, 12000.0])] {
        recs.push(steps(n, 1, at[0]));
        recs.push(steps(n, 16, at[1]));
    }
    recs.push(sched(1, 1590.0));
    recs.push(sched(16, 14900.0));
    let f = temp_file("sched-once.jsonl", &common::make::lines(&recs));
    let run = summarize(&["--format", "json", &f], "");
    run.expect_code(0);
    let sc = summary(&run)["details"]["schedule"][0].clone();
    assert_eq!(level(&sc, "c=1")["vs_best_static"]["verdict"], "unknown");
    assert_eq!(level(&sc, "c=16")["vs_best_static"]["change_pct"], -0.67);
    // Markdown says "noise unknown" once, in the recommendation, not per cell.
    let md = summarize(&["--format", "markdown", &f], "");
    md.expect_code(0);
    assert!(
        md.stdout().contains("| ↳ vs best static | -0.6% | -0.7% |"),
        "{}",
        md.stdout()
    );
    assert_eq!(
        md.stdout().matches("noise unknown").count(),
        1,
        "{}",
        md.stdout()
    );
    // A sweep run again into this file derives from the static values
    // only (the schedule's own records would make `schedule` vary).
    let run = summarize(&["--schedule", "sglang", &f], "");
    run.expect_code(0);
    let rec = &run.json_lines()[0];
    assert_eq!(rec["adaptive_config"]["1"]["candidate_steps"], json!([5]));
}

#[test]
fn two_different_schedules_of_one_server_are_two_rows_and_the_latest_is_current() {
    let mut recs: Vec<Value> = Vec::new();
    for (n, at) in [("2", [1100.0, 15000.0]), ("5", [1600.0, 12000.0])] {
        recs.push(steps(n, 1, at[0]));
        recs.push(steps(n, 16, at[1]));
    }
    recs.push(sched(1, 1590.0));
    recs.push(sched(16, 14900.0));
    // A second sweep into the file derived another schedule.
    for c in [1, 16] {
        let mut r = sched(c, 1000.0);
        r["upstream"]["upstream"]["upstream"]["flags"] = json!(["--speculative-num-steps", "2"]);
        recs.push(r);
    }
    let f = temp_file("sched-two.jsonl", &common::make::lines(&recs));
    let rows = summary_of(&[&f], "")["details"]["schedule"].clone();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0]["label"], "schedule (sglang) 1");
    assert_eq!(
        (&rows[0]["current"], &rows[1]["current"]),
        (&json!(false), &json!(true))
    );
    assert_eq!(level(&rows[0], "c=1")["median"], 1590.0);
    assert_eq!(level(&rows[1], "c=1")["median"], 1000.0);
}

#[test]
fn the_picks_score_is_one_figure_beside_a_schedule() {
    // The schedule beats every static value at c=1 (1700 > 1600): scored
    // with it among the bests, the pick's weighted score moved (issue 33
    // saw 0.926 in the pick line and 0.917 in the schedule's).
    let f = temp_file(
        "sched-one-figure.jsonl",
        &results([1700.0, 15000.0, 15000.0]),
    );
    let s = summary_of(&[&f], "");
    let pick = s["details"]["overall"]["score"].as_f64().unwrap();
    let row = &s["details"]["schedule"][0];
    assert_eq!(row["pick_score"].as_f64(), Some(pick), "{row}");
    let text = summarize(&["--format", "text", &f], "");
    let out = text.expect_code(0).stdout();
    let figure = format!("{pick:.3}");
    for l in out
        .lines()
        .filter(|l| l.contains("speculative-num-steps=4") && l.contains(" 0."))
    {
        let scores: Vec<&str> = l
            .split(|c: char| !(c.is_ascii_digit() || c == '.'))
            .filter(|w| w.starts_with("0.") && w.len() == 5)
            .collect();
        assert!(
            scores.is_empty() || scores.contains(&figure.as_str()),
            "{l}: the pick's score is {figure}"
        );
    }
}
