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

/// A stand-in svc-swap for `origin`'s look: it writes its words to
/// `svc-swap.words` beside itself, then prints `out` and exits `code`.
fn fake_svc_swap(dir: &std::path::Path, out: &str, code: i32) -> String {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("svc-swap");
    let script = format!(
        "#!/bin/sh\nprintf '%s\\n' \"$@\" >\"$0.words\"\ncat <<'EOF'\n{out}\nEOF\n[ {code} = 0 ] || echo 'svc-swap: error: no such spec' >&2\nexit {code}\n"
    );
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.display().to_string()
}

/// `sweep-plan origin` with svc-swap at `swap` over sweep's words `argv`.
fn origin(swap: &str, more: &[&str], argv: &[&str]) -> testkit::Run {
    let mut a = vec!["origin", "--tools", swap, "wait-ready", "loadgen"];
    a.extend_from_slice(more);
    a.push("--");
    a.extend_from_slice(argv);
    plan(&a, "")
}

const SWAP_AB: &str = r#"{"type":"swap","schema":1,"config":{"a":"4","b":"x"},"provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},"target":{"manager":"process","unit":"/s"},"changes":[{"flag":"--a","old":"2 3","new":"4"},{"flag":"--b","old":null,"new":"x"}],"exec_start":["sim","--a","2 3","--abc","1"],"stop":{"result":"","duration_s":0.0},"start":{"started_at":""},"method":"dry-run"}"#;

#[test]
fn the_origin_is_written_once_and_restored_from() {
    let dir = testkit::temp_dir("sweep-plan-origin");
    let results = dir.join("sub/r.jsonl");
    let res = results.to_str().unwrap();
    let swap = fake_svc_swap(&dir, SWAP_AB, 0);
    let sweep = |params: &[&str]| -> Vec<String> {
        let mut w: Vec<String> = ["--spec", "s.spec", "--url", "http://127.0.0.1:1"]
            .iter()
            .chain(&["--server", "sglang", "--results", res])
            .map(|s| s.to_string())
            .collect();
        w.extend(params.iter().map(|s| s.to_string()));
        w
    };
    let ab = sweep(&[
        "--param",
        "a",
        "--values",
        "4,5",
        "--param-new",
        "b",
        "--values",
        "x",
    ]);
    let ab: Vec<&str> = ab.iter().map(String::as_str).collect();
    let first = origin(&swap, &[], &ab);
    assert_eq!(first.code(), 0, "{}", first.stderr());
    assert_eq!(first.stdout(), "");
    // The dry run of config 1, which changes nothing.
    let words = std::fs::read_to_string(dir.join("svc-swap.words")).unwrap();
    assert_eq!(
        words,
        "--spec\ns.spec\n--dry-run\n--no-preflight\n--set\na=4\n--set\nb=x\n"
    );
    let kept = std::fs::read_to_string(&results).unwrap();
    let rec: serde_json::Value = serde_json::from_str(kept.lines().next().unwrap()).unwrap();
    assert_eq!(
        (rec["type"].as_str(), rec["config"]["a"].as_str()),
        (Some("origin"), Some("2 3"))
    );
    // Kept once: a second start says where the original is recorded.
    let again = origin(&swap, &[], &ab);
    assert_eq!(std::fs::read_to_string(&results).unwrap(), kept, "once");
    let said = again.stderr();
    assert!(
        said.contains("sweep: restores will put back the original recorded in"),
        "{said}"
    );
    let grid = ["restore", "--param", "a,b", "--values", "1:2", res];
    assert_eq!(plan(&grid, "").stdout(), "--set\n--a=2 3\n--unset\n--b\n");
    // A results file of another --param: refused before the first stop.
    let c = sweep(&["--param", "c", "--values", "1", "--resume"]);
    let other = origin(
        &swap,
        &[],
        &c.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(other.code(), 53);
    assert!(
        other.stderr().contains("no original value for c"),
        "{}",
        other.stderr()
    );
    let dropped = plan(&["host-dropped", "--reason", "host h dropped", res], "");
    let d = &dropped.json_lines()[0];
    assert_eq!(
        (d["kind"].as_str(), d["class"].as_str()),
        (Some("host_dropped"), Some("transport"))
    );
    assert_eq!(d["upstream"]["type"], "origin");
    std::fs::remove_dir_all(dir).unwrap();
}

/// What the look refuses, and what it cannot take: one line each in
/// sweep's name, the results file never written.
#[test]
fn the_look_refuses_a_typo_and_passes_svc_swap_s_failure_on() {
    let dir = testkit::temp_dir("sweep-plan-look");
    let res = dir.join("r.jsonl");
    let argv = |key: &str| -> Vec<String> {
        let w = format!("--spec s.spec --url http://127.0.0.1:1 --server sglang --param {key} --values 4 --results");
        let mut w: Vec<String> = testkit::words(&w).into_iter().map(String::from).collect();
        w.push(res.display().to_string());
        w
    };
    let typo_rec = SWAP_AB.replace("\"--a\",\"old\":\"2 3\"", "\"--ab\",\"old\":null");
    let swap = fake_svc_swap(&dir, &typo_rec, 0);
    let a = argv("ab");
    let r = origin(
        &swap,
        &[],
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(r.code(), 2, "{}", r.stderr());
    let err = r.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("sweep: error: --param ab: the launch line has no --ab (closest: --a)"),
        "{err}"
    );
    assert!(!res.exists(), "nothing written");
    let swap = fake_svc_swap(&dir, "", 20);
    let a = argv("a");
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let r = origin(&swap, &[], &a);
    assert_eq!(r.code(), 20);
    assert_eq!(
        r.stderr(),
        "svc-swap: error: no such spec\nsweep: error: svc-swap --dry-run failed (exit 20); the target was not touched\n"
    );
    let quiet = origin(&swap, &["--only-refusals"], &a);
    assert_eq!((quiet.code(), quiet.stderr().as_str()), (0, ""));
    let swap = fake_svc_swap(&dir, r#"{"type":"bench"}"#, 0);
    let bad = origin(&swap, &[], &a);
    assert_eq!(bad.code(), 3, "{}", bad.stderr());
    assert!(
        bad.stderr().contains("svc-swap --dry-run: not a record"),
        "{}",
        bad.stderr()
    );
    assert!(!res.exists(), "nothing written");
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
    let results = dir.join("r.jsonl");
    let res = results.to_str().unwrap();
    let svc_swap = fake_svc_swap(&dir, swap, 0);
    let line = format!(
        "--hosts - --spec s.spec --url http://127.0.0.1:1 --server sglang --param a --values 4 --results {res}"
    );
    let argv = testkit::words(&line);
    // The pool host's id, as sweep.sh gets it.
    let pool = plan(&[&["options", "--pool", "--"], &argv[..]].concat(), "").stdout();
    let id = pool
        .split("h_id=('")
        .nth(1)
        .unwrap()
        .split('\'')
        .next()
        .unwrap()
        .to_string();
    let o = origin(&svc_swap, &["--host", &id], &argv);
    assert_eq!(o.code(), 0, "{}", o.stderr());
    assert_eq!(o.stdout(), "");
    let copy = dir.join(format!("r.jsonl.fleet/origin-{id}.jsonl"));
    let kept = std::fs::read_to_string(&results).unwrap();
    assert_eq!(kept, std::fs::read_to_string(&copy).unwrap());
    // Kept once per host.
    let again = origin(&svc_swap, &["--host", &id], &argv);
    assert_eq!((again.code(), again.stderr().as_str()), (0, ""));
    assert_eq!(std::fs::read_to_string(&results).unwrap(), kept);
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
