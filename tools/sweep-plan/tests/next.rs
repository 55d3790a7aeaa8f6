//! `sweep-plan next` through the built binary on the reference campaign
//! (tests/fixtures/campaign.jsonl), scored by the built summarize as
//! sweep(1) pipes it: the answer, the skipped records written once, and bad
//! input as one-line errors with the documented exit codes (50 empty, 51
//! mixed, 52 not numeric).

mod common;

use common::{fixture, fixture_lines, plan, summarize_scores, temp_file};

const KEY: &str = "speculative-num-steps";
const VALUES: &str = "0,1,2,3,4,5,6,7,8,9,10";

/// `sweep-plan next` over `results` (a path), scored by summarize.
fn next(results: &str, extra: &[&str]) -> testkit::Run {
    let scores = summarize_scores(results);
    let mut args = vec!["next", "--param", KEY, "--values", VALUES, "--summary", "-"];
    args.extend_from_slice(extra);
    args.push(results);
    plan(&args, &scores)
}

#[test]
fn the_campaign_stops_at_its_plateau_with_steps_4() {
    let r = next(&fixture(), &[]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let a = &r.json_lines()[0];
    assert_eq!(a["type"], "next");
    assert_eq!(a["action"], "done", "{a}");
    assert_eq!(a["rule"], "plateau", "{a}");
    assert_eq!(a["best"], format!("{KEY}=4"), "{a}");
    assert_eq!(a["skipped"], 4, "6..9 were never measured: {a}");
    assert!(
        a["cost_line"].as_str().unwrap().starts_with("restarts="),
        "{a}"
    );
    // Half way through, the next value in order is asked for; --field
    // gives the script its values one per line.
    let head = temp_file("head.jsonl", &(fixture_lines()[..12].join("\n") + "\n"));
    let r = next(&head, &testkit::words("--field action --field value"));
    assert_eq!(r.code(), 0, "{}", r.stderr());
    assert_eq!(r.stdout(), "measure\n2\n");
}

#[test]
fn skipped_records_are_written_once() {
    let r = next(&fixture(), &["--emit-skipped"]);
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = r.json_lines();
    assert_eq!(recs.len(), 4);
    assert!(recs
        .iter()
        .all(|s| s["type"] == "skipped" && s["rule"] == "plateau"));
    assert_eq!(recs[0]["best_config"][KEY], "4");
    // Appended to the file, asked again: nothing new to write.
    let mut text = std::fs::read_to_string(fixture()).unwrap();
    text.push_str(&r.stdout());
    let path = temp_file("with-skipped.jsonl", &text);
    assert_eq!(next(&path, &["--emit-skipped"]).stdout(), "");
    // summarize's table lists them.
    let mut c = std::process::Command::new(testkit::bin("summarize"));
    c.args(["--format", "text", &path]);
    let table = testkit::run(c, "");
    assert!(table
        .stdout()
        .contains("skipped: speculative-num-steps=6 (plateau: "));
}

#[test]
fn bad_input_is_one_line_with_its_exit_code() {
    let mixed = r#"{"type":"bench","config":{"max-running-requests":"8"}}"#;
    let grid = fixture_lines()[0].replace(r#""tp-size":"1""#, r#""tp-size":"2""#);
    let grid = format!("{}\n{grid}\n", fixture_lines()[0]);
    let cases: [(&str, &str, &str, i32, &str); 4] = [
        (KEY, VALUES, "", 50, "no records"),
        (KEY, VALUES, mixed, 51, "has no speculative-num-steps"),
        (KEY, VALUES, &grid, 51, "more than one parameter varies"),
        (
            "speculative-algorithm",
            "EAGLE,EAGLE3",
            "{}",
            52,
            "not a number",
        ),
    ];
    for (key, values, text, code, needle) in cases {
        let path = temp_file("bad.jsonl", text);
        let args = [
            "next",
            "--param",
            key,
            "--values",
            values,
            "--summary",
            "-",
            &path,
        ];
        let r = plan(&args, "");
        let err = r.stderr();
        assert_eq!(r.code(), code, "{key}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{key}: {err}");
        assert!(err.starts_with("sweep-plan: error: "), "{err}");
        assert!(err.contains(needle), "{key}: {err}");
        assert!(r.stdout().is_empty(), "{key}");
    }
}
