//! `summarize --next` through the built binary: its plain-text answer on
//! the reference campaign, the skipped records, and bad input as one-line
//! errors with the documented exit codes (50 empty, 51 mixed, 52 not
//! numeric).

mod common;

use common::{fixture, fixture_lines, summarize};

const SPACE: &str = "speculative-num-steps=0,1,2,3,4,5,6,7,8,9,10";

#[test]
fn the_campaign_stops_at_its_plateau_with_steps_4() {
    let r = summarize(&["--next", SPACE, &fixture()], "");
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let out = r.stdout();
    let first = out.lines().next().unwrap();
    assert_eq!(first, "done\tplateau\tspeculative-num-steps=4", "{out}");
    let skipped: Vec<&str> = out.lines().filter(|l| l.starts_with("skip\t")).collect();
    assert_eq!(skipped.len(), 4, "6..9 were never measured: {out}");
    assert!(
        out.lines().any(|l| l.starts_with("cost\trestarts=")),
        "{out}"
    );
    // Half way through, the next value in order is asked for.
    let head: String = fixture_lines()[..12].join("\n");
    let r = summarize(&["--next", SPACE], &head);
    assert_eq!(
        r.stdout().lines().next(),
        Some("measure\tspeculative-num-steps=2")
    );
}

#[test]
fn skipped_records_are_written_once() {
    let r = summarize(&["--next", SPACE, "--emit-skipped", &fixture()], "");
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let recs = r.json_lines();
    assert_eq!(recs.len(), 4);
    assert!(recs
        .iter()
        .all(|s| s["type"] == "skipped" && s["rule"] == "plateau"));
    assert_eq!(recs[0]["best_config"]["speculative-num-steps"], "4");
    // Appended to the file, asked again: nothing new to write.
    let mut text = std::fs::read_to_string(fixture()).unwrap();
    text.push_str(&r.stdout());
    let again = summarize(&["--next", SPACE, "--emit-skipped"], &text);
    assert_eq!(again.stdout(), "");
    // The table lists them.
    let table = summarize(&["--format", "text"], &text);
    assert!(table
        .stdout()
        .contains("skipped: speculative-num-steps=6 (plateau: "));
}

#[test]
fn bad_input_is_one_line_with_its_exit_code() {
    let mixed = r#"{"type":"bench","config":{"max-running-requests":"8"}}"#;
    let grid = fixture_lines()[0].replace(r#""tp-size":"1""#, r#""tp-size":"2""#);
    let grid = format!("{}\n{grid}\n", fixture_lines()[0]);
    let cases: [(&[&str], &str, i32, &str); 4] = [
        (&["--next", SPACE], "", 50, "no records"),
        (
            &["--next", SPACE],
            mixed,
            51,
            "has no speculative-num-steps",
        ),
        (
            &["--next", SPACE],
            &grid,
            51,
            "more than one parameter varies",
        ),
        (
            &["--next", "speculative-algorithm=EAGLE,EAGLE3"],
            "{}",
            52,
            "not a number",
        ),
    ];
    for (args, stdin, code, needle) in cases {
        let r = summarize(args, stdin);
        let err = r.stderr();
        assert_eq!(r.code(), code, "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(r.stdout().is_empty(), "{args:?}");
    }
}
