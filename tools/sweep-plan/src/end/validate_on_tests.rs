//! validate_on.rs's answers: the end's steps with --validate-on.

use super::*;
use crate::end::next;
use crate::results::{self, Line};

const SG: &str = r#"{"type":"schedule","server":"sglang","flags":["--speculative-num-steps","5","--speculative-adaptive"]}"#;
const SG_BENCH: &str = r#"{"type":"bench","config":{"schedule":"sglang"},"partial":false,"upstream":{"type":"ready","upstream":{"type":"swap","changes":[{"flag":"--speculative-adaptive-config","old":null,"new":"/f"}]}}}"#;

fn v() -> Validate {
    Validate {
        file: "t.jsonl".into(),
        slo: Some("ttft_ms<=500".into()),
        load: vec![
            "--url".into(),
            "http://h:1".into(),
            "--trace".into(),
            "t.jsonl".into(),
        ],
    }
}

fn inputs<'a>(
    lines: &'a [Line],
    summary: serde_json::Value,
    keep: bool,
    work: &'a str,
) -> Inputs<'a> {
    Inputs {
        lines,
        original: vec!["--set".into(), "--k=1".into()],
        schedule: None,
        winner: Some(("/w/summary", summary)),
        summarize_exit: 0,
        retries: 2,
        work,
        keys: &[],
        interrupted: false,
        keep_winner: keep,
        validate: Some(v()),
    }
}

fn after_name(e: &End) -> &str {
    e.again[1].as_str()
}

#[test]
fn the_pick_is_applied_replayed_then_the_original_restored() {
    let sum = serde_json::json!({"best_config": {"k": "3"}});
    let i = inputs(&[], sum, false, "/nonexistent");
    let e = next(&i, None, 0, [0, 0]).unwrap();
    assert_eq!(e.action, "swap");
    assert_eq!(e.to_swap, ["--apply-from", "/w/summary"]);
    assert_eq!(e.line, "validating on t.jsonl: applying summarize's pick");
    assert_eq!(after_name(&e), "pick-to-validate");
    let r = next(&i, Some(Swap::PickToValidate), 0, [0, 0]).unwrap();
    assert_eq!(r.action, "validate");
    assert_eq!(r.to_load, v().load);
    assert_eq!(
        r.mark,
        [
            "--of",
            "pick",
            "--trace",
            "t.jsonl",
            "--config",
            r#"{"k":"3"}"#,
            "--slo",
            "ttft_ms<=500"
        ]
    );
    assert_eq!(after_name(&r), "validated-pick");
    let o = next(&i, Some(Swap::ValidatedPick), 0, [0, 0]).unwrap();
    assert_eq!(o.line, "restoring the original config");
    assert!(o.warning.is_empty(), "{}", o.warning);
    // A failed replay is said, and the end goes on.
    let f = next(&i, Some(Swap::ValidatedPick), 0, [6, 0]).unwrap();
    assert_eq!(f.line, "restoring the original config");
    assert!(
        f.warning
            .contains("the pick's replay of t.jsonl failed (loadgen exit 6"),
        "{}",
        f.warning
    );
    // A failed swap skips the replay.
    let s = next(&i, Some(Swap::PickToValidate), 0, [20, 4]).unwrap();
    assert_eq!(s.line, "restoring the original config");
    assert!(
        s.warning
            .contains("the pick was not validated: its swap failed (svc-swap exit 20"),
        "{}",
        s.warning
    );
}

#[test]
fn keep_winner_keeps_the_validated_pick_without_another_swap() {
    let i = inputs(&[], serde_json::json!({}), true, "/nonexistent");
    let d = next(&i, Some(Swap::ValidatedPick), 0, [0, 0]).unwrap();
    assert_eq!((d.action, d.exit), ("done", 0));
    // Nothing picked: nothing to validate, the original back, with a warning.
    let none = Inputs {
        summarize_exit: 1,
        ..inputs(&[], serde_json::json!({}), false, "/x")
    };
    let e = next(&none, None, 0, [0, 0]).unwrap();
    assert_eq!(e.line, "restoring the original config");
    assert!(
        e.warning
            .starts_with("--validate-on: summarize picked nothing (exit 1)"),
        "{}",
        e.warning
    );
}

#[test]
fn a_measured_schedule_is_validated_after_the_pick_and_kept_when_it_wins() {
    let lines = results::read(&format!("{SG}\n{SG_BENCH}\n"));
    let dir = testkit::temp_dir("sweep-plan-validate");
    let work = dir.to_string_lossy().to_string();
    let wins = serde_json::json!({"details": {"schedule": [{"server": "sglang", "wins": true}]}});
    let i = Inputs {
        schedule: Some("sglang"),
        ..inputs(&lines, wins, true, &work)
    };
    let p = next(&i, None, 0, [0, 0]).unwrap();
    // The pick goes on without the schedule's own flags.
    assert_eq!(
        p.to_swap,
        [
            "--apply-from",
            "/w/summary",
            "--unset",
            "--speculative-adaptive-config"
        ]
    );
    let s = next(&i, Some(Swap::ValidatedPick), 0, [0, 0]).unwrap();
    assert_eq!(
        s.line,
        "validating on t.jsonl: applying the sglang schedule"
    );
    assert_eq!(s.to_swap[1], format!("{work}/schedule.json"));
    assert_eq!(s.to_ready[1], "speculative-adaptive=true");
    let r = next(&i, Some(Swap::ScheduleToValidate), 0, [0, 0]).unwrap();
    assert_eq!((r.action, r.mark[1].as_str()), ("validate", "schedule"));
    // The schedule wins and stands applied: done.
    let d = next(&i, Some(Swap::ValidatedSchedule), 0, [0, 0]).unwrap();
    assert_eq!((d.action, d.exit), ("done", 0));
    // Without --keep-winner the original goes back, the schedule undone.
    let no_keep = Inputs {
        keep_winner: false,
        ..i
    };
    let o = next(&no_keep, Some(Swap::ValidatedSchedule), 0, [0, 0]).unwrap();
    assert!(
        o.to_swap
            .contains(&"--speculative-adaptive-config".to_string()),
        "{:?}",
        o.to_swap
    );
    let _ = std::fs::remove_dir_all(&dir);
}
