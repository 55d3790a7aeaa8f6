//! `sweep-plan options`: sweep's argv parsed by its one clap definition and
//! handed back as bash assignments that bash reads back exactly, whatever
//! the values hold (command substitutions, quotes, newlines, globs), with
//! nothing run; the far-side options land in the tools' arrays; usage
//! errors are one `sweep: error:` line and exit 2.

use std::process::Command;

const BASE: [&str; 8] = [
    "--param",
    "a",
    "--values",
    "1,2",
    "--url",
    "http://x",
    "--results",
    "r",
];

/// `eval` sweep-plan's settings for `argv` in bash, as sweep.sh does, then
/// print the named variables' values (arrays: one element per line), each
/// followed by a NUL.
fn eval(argv: &[&str], vars: &[&str]) -> (Option<i32>, String, String) {
    let script = r#"
        plan=$1 n=$2; shift 2
        names=("${@:1:n}"); shift "$n"
        settings=$("$plan" options -- "$@") || exit $?
        eval "$settings"
        for v in "${names[@]}"; do
          declare -n ref=$v
          printf '%s\n' "${ref[@]}"; printf '\0'
          unset -n ref
        done
    "#;
    let out = Command::new("bash")
        .args([
            "--norc",
            "-c",
            script,
            "bash",
            env!("CARGO_BIN_EXE_sweep-plan"),
        ])
        .arg(vars.len().to_string())
        .args(vars)
        .args(argv)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hostile_values_come_back_exactly_and_run_nothing() {
    let dir = testkit::temp_dir("options-hostile");
    let marker = dir.join("ran");
    let m = marker.display();
    let hostile = [
        format!("$(touch {m})"),
        format!("`touch {m}`"),
        format!("'; touch {m}; '"),
        format!("\"; touch {m}; \""),
        format!("x\ntouch {m}\n"),
        "it's a \\ back'slash'".to_string(),
        "*".to_string(),
        "${HOME}".to_string(),
    ];
    for h in &hostile {
        let argv = [
            &BASE[..],
            &["--unit", h, "--swap-arg", h, "--ssh-config", h],
        ]
        .concat();
        let (code, out, err) = eval(&argv, &["unit", "swap_args"]);
        assert_eq!(code, Some(0), "{h:?}: {err}");
        let want = format!("{h}\n\0--ssh-config\n{h}\n{h}\n\0");
        assert_eq!(out, want, "{h:?}");
        assert!(!marker.exists(), "{h:?} ran a command");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn far_side_options_go_once_to_each_tool_that_takes_them() {
    let argv = [
        &BASE[..],
        &testkit::words(
            "--unit u --ssh-config cfg --ssh-retry 5s --connect-timeout 3s --load-arg -n",
        ),
    ]
    .concat();
    let (code, out, err) = eval(&argv, &["swap_args", "ready_args", "load_args"]);
    assert_eq!(code, Some(0), "{err}");
    let far = "--ssh-config\ncfg\n--ssh-retry\n5s\n--connect-timeout\n3s\n";
    assert_eq!(out, format!("{far}\0{far}\0-n\n\0"));
}

#[test]
fn usage_errors_are_one_sweep_line_and_exit_2() {
    for (extra, want) in [
        (&["--unit", "u", "--bogus"][..], "'--bogus'"),
        (&testkit::words("--unit u --spec s")[..], "--spec"),
        (&[][..], "--unit"),
        (
            &testkit::words("--unit u --values 3")[..],
            "before each --values",
        ),
        (&testkit::words("--unit u --retries x")[..], "--retries 'x'"),
    ] {
        let argv = [&BASE[..], extra].concat();
        let (code, out, err) = eval(&argv, &[]);
        assert_eq!(code, Some(2), "{extra:?}: {err}");
        assert!(out.is_empty(), "{out}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("sweep: error: ") && err.contains(want),
            "{err}"
        );
    }
}

#[test]
fn help_is_handed_back_for_the_script_to_print() {
    let (code, out, err) = eval(&["--help"], &["help"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("Swap, wait, benchmark"), "{out}");
    assert!(
        out.contains("--connect-timeout") && out.contains("130"),
        "{out}"
    );
}

#[test]
fn schedule_max_depth_becomes_summarizes_max_depth_and_needs_schedule() {
    let argv = [
        &BASE[..],
        &testkit::words("--unit u --schedule sglang --schedule-max-depth 4"),
    ]
    .concat();
    let (code, out, err) = eval(&argv, &["schedule_args"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "--max-depth\n4\n\0");
    let (code, out, _) = eval(
        &[&BASE[..], &testkit::words("--unit u --schedule vllm")].concat(),
        &["schedule_args"],
    );
    assert_eq!((code, out.as_str()), (Some(0), "\n\0"), "unset: empty");
    let (code, _, err) = eval(
        &[
            &BASE[..],
            &testkit::words("--unit u --schedule-max-depth 4"),
        ]
        .concat(),
        &[],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--schedule"), "{err}");
}

const POOL: [&str; 6] = [
    "--unit",
    "u",
    "--hosts",
    "root@gpu2:2222,- exec=pct exec 1 --",
    "--url",
    "http://{host}:9",
];

/// `options --pool` names the hosts; `options --host ID` gives one host its
/// own stages' words, origin file and message prefix, as fleet.sh evals
/// them; a host not in the pool is sweep's usage error.
#[test]
fn a_pool_host_gets_its_own_target_origin_and_name() {
    let script = r#"
        plan=$1; shift
        eval "$("$plan" options --pool -- "$@")" || exit
        for id in "${h_id[@]}"; do
          eval "$("$plan" options --host "$id" -- "$@")" || exit
          [[ $origin_file == "r.fleet/origin-$id.jsonl" ]] || echo "origin: $origin_file"
          printf '%s|' "$say_prefix" "${target[@]}" "${ready[@]}" "${load[@]}"; echo
        done
        "$plan" options --host nosuch -- "$@"
    "#;
    let out = Command::new("bash")
        .args(["--norc", "-c", script, "bash"])
        .arg(env!("CARGO_BIN_EXE_sweep-plan"))
        .args(BASE)
        .args(POOL)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        text,
        "[root@gpu2:2222] |--unit|u|--ssh|root@gpu2:2222|http://gpu2:9|--timeout|10m|--url|http://gpu2:9|\n\
         [pct exec 1 --] |--unit|u|--exec-prefix|pct exec 1 --|http://localhost:9|--timeout|10m|--url|http://localhost:9|\n",
        "{err}"
    );
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err, "sweep: error: --host 'nosuch' is not in --hosts\n");
}

/// `dry-run`: the pool's hosts, then each config's pipe on the first host,
/// each word quoted as bash's printf %q quotes it.
#[test]
fn a_dry_run_prints_the_pool_and_each_pipe_to_copy() {
    let out = Command::new(env!("CARGO_BIN_EXE_sweep-plan"))
        .args(["dry-run", "--tools", "S", "W", "L", "--"])
        .args(BASE)
        .args(POOL)
        .args(["--param", "b", "--values", "x y", "--expect-config"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let want = "# host 1: root@gpu2:2222 -> http://gpu2:9\n\
        # host 2: pct exec 1 -- -> http://localhost:9\n\
        # [1/2] a=1 b=x y\n\
        S --unit u --ssh root@gpu2:2222 --set a=1 --set b=x\\ y \\\n  \
        | W http://gpu2:9 --timeout 10m --expect-config a=1 --expect-config b=x\\ y \
        --pipeline-config a=1 --pipeline-config b=x\\ y \\\n  \
        | L --url http://gpu2:9 --pipeline-config a=1 --pipeline-config b=x\\ y >> r\n";
    assert!(text.starts_with(want), "{text}");
    assert_eq!(text.matches("# [").count(), 2, "{text}");
}

/// Issue 36: a `--hosts` list that begins with `-` (this machine) given as
/// its own word reached clap as a short option (`unexpected argument
/// '-,'`); `--hosts=-,...` parsed. Both spellings give the same pool, and
/// `-,-` says what to do for two servers on one machine.
#[test]
fn a_hosts_list_that_begins_with_this_machine_is_one_word() {
    let pool = |hosts: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_sweep-plan"))
            .args(["options", "--pool", "--"])
            .args(BASE)
            .args(["--unit", "u"])
            .args(hosts)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, words, err) = pool(&["--hosts", "-,root@gpu1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(words.contains("h_name=('local' 'root@gpu1')"), "{words}");
    assert_eq!(pool(&["--hosts=-,root@gpu1"]).1, words);
    let (code, _, err) = pool(&["--hosts", "-,-"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.starts_with("sweep: error: --hosts '-': the same host twice")
            && err.contains("exec=PREFIX")
            && err.lines().count() == 1,
        "{err}"
    );
}
