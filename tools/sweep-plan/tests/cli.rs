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
