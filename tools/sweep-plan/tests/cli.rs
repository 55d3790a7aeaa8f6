//! sweep-plan's answers about a results file through the built binary:
//! the grid's configs and what --resume skips, a run's verdict counting
//! only its own config's records, one config's words for each tool, the
//! origin written once and read back as restore words, a dropped host's
//! record, and bad grids as one-line usage errors.

mod common;

use common::{fixture, plan, temp_file};

const KEY: &str = "speculative-num-steps";

#[test]
fn configs_follow_the_grid_and_resume_skips_those_with_a_result() {
    // The campaign: steps 0..5 and 10 measured (10: an OOM, a result).
    let f = fixture();
    let args = [
        "configs", "--param", KEY, "--values", "4,10,11", "--resume", &f,
    ];
    let r = plan(&args, "");
    assert_eq!(r.code(), 0, "{}", r.stderr());
    let got: Vec<(String, String)> = r
        .json_lines()
        .iter()
        .map(|c| {
            assert_eq!(c["type"], "config");
            assert_eq!(c["of"], 3);
            (
                c["state"].as_str().unwrap().into(),
                c["action"].as_str().unwrap().into(),
            )
        })
        .collect();
    let want = [("complete", "skip"), ("failed", "skip"), ("pending", "run")];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(got, want);
    // Without --resume every config runs; --field gives one value a line.
    let fields = [
        "configs", "--param", KEY, "--values", "4,11", &f, "--field", "action", "--field", "label",
    ];
    assert_eq!(
        plan(&fields, "").stdout(),
        format!("run\n{KEY}=4\nrun\n{KEY}=11\n")
    );
}

#[test]
fn a_verdict_counts_only_its_config_s_records_after_the_line_given() {
    let text = [
        r#"{"type":"bench","config":{"a":"1","b":"x y"}}"#,
        r#"{"type":"bench","config":{"a":"2","b":"x y"}}"#,
        r#"{"type":"bench","config":{"a":"1","b":"x y"}}"#,
        r#"{"type":"failure","config":{"a":"1","b":"x y"},"kind":"unreachable"}"#,
    ]
    .join("\n");
    let path = temp_file("v.jsonl", &text);
    let grid = [
        "--param", "a", "--values", "1,2", "--param", "--b", "--values", "x y",
    ];
    let verdict = |since: &str| {
        let mut args = vec!["verdict"];
        args.extend(grid);
        args.extend([
            "--index",
            "1",
            "--since",
            since,
            &path,
            "--field",
            "state",
            "--field",
            "bench_records",
        ]);
        plan(&args, "").stdout()
    };
    assert_eq!(verdict("0"), "transport\n2\n");
    assert_eq!(verdict("1"), "transport\n1\n");
    assert_eq!(verdict("4"), "pending\n0\n");
    let mut args = vec!["args"];
    args.extend(grid);
    args.extend(["--index", "2", "--for", "swap"]);
    assert_eq!(plan(&args, "").stdout(), "--set\na=2\n--set\n--b=x y\n");
    *args.last_mut().unwrap() = "stage";
    assert_eq!(
        plan(&args, "").stdout(),
        "--pipeline-config\na=2\n--pipeline-config\nb=x y\n"
    );
    let n = args.len();
    args[n - 3] = "3";
    let r = plan(&args, "");
    assert_eq!(r.code(), 2);
    assert!(
        r.stderr()
            .contains("--index 3: the grid has configs 1 to 2"),
        "{}",
        r.stderr()
    );
}

#[test]
fn the_origin_is_written_once_and_restored_from() {
    let swap = r#"{"type":"swap","schema":1,"config":{"a":"4","b":"x"},"provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},"target":{"manager":"process","unit":"/s"},"changes":[{"flag":"--a","old":"2 3","new":"4"},{"flag":"--b","old":null,"new":"x"}],"exec_start":[],"stop":{"result":"","duration_s":0.0},"start":{"started_at":""},"method":"dry-run"}"#;
    let dir = testkit::temp_dir("sweep-plan-origin");
    let results = dir.join("r.jsonl");
    let res = results.to_str().unwrap();
    let first = plan(&["origin", res], swap);
    assert_eq!(first.code(), 0, "{}", first.stderr());
    let rec = &first.json_lines()[0];
    assert_eq!(rec["type"], "origin");
    assert_eq!(rec["config"]["a"], "2 3");
    std::fs::write(&results, first.stdout()).unwrap();
    assert_eq!(plan(&["origin", res], swap).stdout(), "", "once");
    let grid = ["restore", "--param", "a,b", "--values", "1:2", res];
    assert_eq!(plan(&grid, "").stdout(), "--set\n--a=2 3\n--unset\n--b\n");
    let other = plan(&["restore", "--param", "c", "--values", "1", res], "");
    assert_eq!(other.code(), 53);
    assert!(
        other.stderr().contains("no original value for c"),
        "{}",
        other.stderr()
    );
    let bad = plan(&["origin"], r#"{"type":"bench"}"#);
    assert_eq!(bad.code(), 3, "{}", bad.stderr());
    let dropped = plan(&["host-dropped", "--reason", "host h dropped", res], "");
    let d = &dropped.json_lines()[0];
    assert_eq!(
        (d["kind"].as_str(), d["class"].as_str()),
        (Some("host_dropped"), Some("transport"))
    );
    assert_eq!(d["upstream"]["type"], "origin");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_grids_are_one_line_usage_errors() {
    for (p, v, needle) in [
        ("a,b", "1", "expected 2 values joined by ':'"),
        ("a b", "1", "not a flag name"),
        ("a", "1,,2", "no empty value"),
    ] {
        let r = plan(&["configs", "--param", p, "--values", v], "");
        let err = r.stderr();
        assert_eq!(r.code(), 2, "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("sweep-plan: error: ") && err.contains(needle),
            "{err}"
        );
    }
}

#[test]
fn a_pools_outcome_names_its_exit_status_from_the_grids_states() {
    // The campaign: steps 4 measured, 10 an OOM (a failure of its own), 11
    // never run; then the same file with a host dropped after it.
    let f = fixture();
    let text = std::fs::read_to_string(&f).unwrap();
    let since = text.lines().count().to_string();
    let drop =
        r#"{"type":"failure","schema":1,"kind":"host_dropped","class":"transport","config":{}}"#;
    let g = temp_file("outcome-drop.jsonl", &format!("{text}{drop}\n"));
    for (values, file, want) in [
        ("4,10,11", &f, [1, 1, 1, 0, 43]),
        ("4,10", &f, [1, 1, 0, 0, 40]),
        ("10", &f, [0, 1, 0, 0, 41]),
        ("4", &g, [1, 0, 0, 1, 45]),
        ("4", &f, [1, 0, 0, 0, 0]),
    ] {
        let args = [
            "outcome", "--param", KEY, "--values", values, "--since", &since, file,
        ];
        let r = plan(&args, "");
        assert_eq!(r.code(), 0, "{}", r.stderr());
        let a = &r.json_lines()[0];
        let got =
            ["measured", "failed", "missing", "dropped", "exit"].map(|k| a[k].as_u64().unwrap());
        assert_eq!(got, want.map(|n| n as u64), "{values} {file}");
    }
}

/// `--shell` answers as sweep.sh evals them: run in bash, they set its
/// variables; this prints the ones named.
fn eval_in_bash(assignments: &str, names: &[&str]) -> String {
    let script = format!(
        "{assignments}\nfor n in {}; do declare -p \"$n\" | sed 's/^declare -[a-z-]* //'; done",
        names.join(" ")
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn step_names_each_step_with_every_tools_words_then_the_schedule() {
    let dir = testkit::temp_dir("sweep-plan-step");
    let results = dir.join("r.jsonl");
    let res = results.to_str().unwrap().to_string();
    let work = dir.to_str().unwrap().to_string();
    std::fs::write(&results, "").unwrap();
    let base = [
        "step",
        "--param",
        KEY,
        "--values",
        "2,4",
        "--schedule",
        "sglang",
        "--work",
        &work,
    ];
    let ask = |more: &[&str]| {
        let mut a: Vec<&str> = base.to_vec();
        a.extend_from_slice(more);
        a.extend([res.as_str(), "--shell"]);
        let r = plan(&a, "");
        assert_eq!(r.code(), 0, "{}", r.stderr());
        r.stdout().to_string()
    };
    // The first config, its words for each tool (a value with a quote
    // stays one word).
    let first = ask(&["--expect-config"]);
    let got = eval_in_bash(
        &first,
        &["action", "index", "label", "to_swap", "to_ready", "judge"],
    );
    assert_eq!(
        got,
        format!(
            "action=\"run\"\nindex=\"1\"\nlabel=\"[1/2] {KEY}=2\"\n\
             to_swap=([0]=\"--set\" [1]=\"{KEY}=2\")\n\
             to_ready=([0]=\"--expect-config\" [1]=\"{KEY}=2\" [2]=\"--pipeline-config\" [3]=\"{KEY}=2\")\n\
             judge=([0]=\"--index\" [1]=\"1\")\n"
        )
    );
    // After the last config: derive the schedule; refused: keep the pick.
    let derive = eval_in_bash(&ask(&["--after", "2"]), &["action", "index", "notes"]);
    assert!(
        derive.starts_with("action=\"derive\"\nindex=\"\"\n"),
        "{derive}"
    );
    assert!(derive.contains("deriving the sglang schedule"), "{derive}");
    let refused = eval_in_bash(&ask(&["--derived", "56"]), &["action", "notes"]);
    assert!(refused.starts_with("action=\"done\""), "{refused}");
    assert!(
        refused.contains("cannot support a sglang schedule"),
        "{refused}"
    );
    let failed = eval_in_bash(&ask(&["--derived", "3"]), &["action", "exit", "error"]);
    assert_eq!(
        failed,
        "action=\"fail\"\nexit=\"3\"\nerror=\"summarize --schedule sglang failed (exit 3)\"\n"
    );
    // Derived (its record appended): run it, its record written to apply.
    let rec = r#"{"type":"schedule","server":"sglang","flags":["--speculative-num-steps","4","--speculative-adaptive"]}"#;
    std::fs::write(&results, format!("{rec}\n")).unwrap();
    let run = eval_in_bash(
        &ask(&["--derived", "0"]),
        &["action", "index", "label", "to_swap", "to_load", "judge"],
    );
    let file = format!("{work}/schedule.json");
    assert_eq!(
        run,
        format!(
            "action=\"run\"\nindex=\"\"\nlabel=\"[schedule] sglang per-load schedule\"\n\
             to_swap=([0]=\"--apply-from\" [1]=\"{file}\")\n\
             to_load=([0]=\"--pipeline-config\" [1]=\"schedule=sglang\")\n\
             judge=([0]=\"--schedule\" [1]=\"sglang\")\n"
        )
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), rec);
    let done = eval_in_bash(&ask(&["--scheduled"]), &["action", "notes"]);
    assert_eq!(done, "action=\"done\"\nnotes=()\n");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn origin_appends_once_and_end_names_each_swap_till_done() {
    let swap = r#"{"type":"swap","schema":1,"config":{"a":"4"},"provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},"target":{"manager":"process","unit":"/s"},"changes":[{"flag":"--a","old":"2","new":"4"}],"exec_start":[],"stop":{"result":"","duration_s":0.0},"start":{"started_at":""},"method":"dry-run"}"#;
    let dir = testkit::temp_dir("sweep-plan-end");
    let (results, copy) = (dir.join("r.jsonl"), dir.join("origin-h.jsonl"));
    let (res, cp) = (results.to_str().unwrap(), copy.to_str().unwrap());
    let o = plan(&["origin", "--append", res, "--copy", cp, cp], swap);
    assert_eq!(o.code(), 0, "{}", o.stderr());
    assert_eq!(o.stdout(), "");
    let kept = std::fs::read_to_string(&results).unwrap();
    assert_eq!(kept, std::fs::read_to_string(&copy).unwrap());
    // Kept once: a second start says where the original is recorded.
    let again = plan(&["origin", "--append", res, "--say", "sweep: ", res], swap);
    assert_eq!(std::fs::read_to_string(&results).unwrap(), kept);
    assert!(
        again
            .stderr()
            .contains("sweep: restores will put back the original recorded in"),
        "{}",
        again.stderr()
    );
    let end = |more: &[&str]| {
        let mut a = vec![
            "end",
            "--param",
            "a",
            "--values",
            "4",
            "--origin",
            res,
            "--retries",
            "1",
        ];
        a.extend_from_slice(more);
        a.extend([res, "--shell"]);
        let r = plan(&a, "");
        assert_eq!(r.code(), 0, "{}", r.stderr());
        eval_in_bash(
            &r.stdout(),
            &["action", "line", "to_swap", "again", "error", "exit"],
        )
    };
    assert_eq!(
        end(&[]),
        "action=\"swap\"\nline=\"restoring the original config\"\n\
         to_swap=([0]=\"--no-preflight\" [1]=\"--set\" [2]=\"--a=2\")\n\
         again=([0]=\"--after\" [1]=\"original\" [2]=\"--attempt\" [3]=\"0\")\n\
         error=\"\"\nexit=\"0\"\n"
    );
    let retry = end(&[
        "--after",
        "original",
        "--attempt",
        "0",
        "--exits",
        "21",
        "4",
    ]);
    assert!(
        retry.contains("again=([0]=\"--after\" [1]=\"original\" [2]=\"--attempt\" [3]=\"1\")"),
        "{retry}"
    );
    let failed = end(&[
        "--after",
        "original",
        "--attempt",
        "1",
        "--exits",
        "21",
        "4",
    ]);
    assert!(failed.starts_with("action=\"done\""), "{failed}");
    assert!(failed.ends_with("exit=\"42\"\n"), "{failed}");
    let ok = end(&["--after", "original", "--attempt", "1", "--exits", "0", "0"]);
    assert!(
        ok.starts_with("action=\"done\"") && ok.ends_with("error=\"\"\nexit=\"0\"\n"),
        "{ok}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}
