//! Shell completions and `make install`: the bash completions clap_complete
//! generated from each tool's clap definition (completions/, kept in step by
//! each tool's man_page test) load and offer every long flag the tool's
//! --help lists; sweep's own completion offers every option sweep.sh parses;
//! `make install-files DESTDIR=...` puts binaries, sweep, man pages and
//! completions where bash-completion, zsh and fish look; and the
//! gated-test summary counts what ran. Needs `cargo build --workspace` first.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

const TOOLS: [&str; 6] = [
    "svc-swap",
    "wait-ready",
    "loadgen",
    "summarize",
    "sweep-plan",
    "llm-sim",
];

/// Run `script` in a bash without rc files, `args` as `$1...`; its stdout.
fn bash(script: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", script, "bash"])
        .args(args)
        .output()
        .expect("run bash");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bash -c {script:?} {args:?}: {}\nstdout: {text}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// What bash offers for the last of `words` after sourcing `file`, through
/// the function `complete -p NAME` names, as bash itself would call it.
fn complete(file: &Path, name: &str, words: &[&str]) -> BTreeSet<String> {
    let script = r#"
        file=$1 name=$2; shift 2
        source "$file"
        spec=$(complete -p "$name") || exit 1
        func=$(sed -n 's/.* -F \([^ ]*\) .*/\1/p' <<<"$spec")
        [[ -n $func ]] || { echo "no -F in: $spec" >&2; exit 1; }
        COMP_WORDS=("$@")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        COMP_LINE="${COMP_WORDS[*]}"
        COMP_POINT=${#COMP_LINE}
        COMPREPLY=()
        "$func" "$name" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
        printf '%s\n' "${COMPREPLY[@]}"
    "#;
    let mut args = vec![file.to_str().unwrap(), name];
    args.extend_from_slice(words);
    bash(script, &args)
        .lines()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The long flags a `--help` text lists: the first `--flag` of each option
/// line (lines that start with `-`), not flags named in descriptions.
fn help_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .map(str::trim_start)
        // `-c, --concurrency` or `--url`; not a "Possible values" item
        // (`- vllm: ... --speculative-config ...`).
        .filter(|l| l.starts_with("--") || (l.starts_with('-') && !l.starts_with("- ")))
        .filter_map(|l| {
            let at = l.find("--")?;
            let flag: String = l[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            (flag.len() > 2).then_some(flag)
        })
        .collect()
}

#[test]
fn generated_bash_completions_offer_every_flag_of_each_tool() {
    let root = testkit::repo_root();
    for tool in TOOLS {
        // sweep-plan: its top-level flags only. clap_complete's bash
        // script for a hyphenated binary with subcommands sets
        // `cmd=sweep__plan__subcmd__configs` but matches
        // `sweep__subcmd__plan__subcmd__configs)`, so no subcommand flag
        // completes there (seen with the clap_complete in Cargo.lock).
        let subs: &[&str] = &[""];
        let mut all = std::collections::BTreeSet::new();
        for sub in subs {
            let words: Vec<&str> = [*sub].into_iter().filter(|s| !s.is_empty()).collect();
            let mut args = words.clone();
            args.push("--help");
            let help = testkit::run(testkit::cmd(tool, &args), "")
                .expect_code(0)
                .stdout();
            let flags = help_flags(&help);
            let file = root.join(format!("completions/{tool}.bash"));
            let mut line = vec![tool];
            line.extend(&words);
            line.push("--");
            let offered = complete(&file, tool, &line);
            let missing: Vec<_> = flags.difference(&offered).collect();
            assert!(
                missing.is_empty(),
                "{tool} {sub}: completion lacks {missing:?}; offered {offered:?}"
            );
            all.extend(flags);
        }
        assert!(
            all.len() > 3 || tool == "sweep-plan",
            "{tool}: too few flags read from --help: {all:?}"
        );
    }
}

/// Issue 33: `-h` ran 77 to 139 lines. Now it is a summary that fits a
/// screen (usage, one example, every long flag of `--help` by name, lines
/// of 79 columns at most) for each tool and sweep; `--help` keeps the long
/// text, and a subcommand's `-h` is clap's own.
#[test]
fn dash_h_is_a_short_summary_with_an_example_and_every_flag() {
    let sweep = testkit::repo_root().join("scripts/sweep.sh");
    let bin = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let help_of = |tool: &str, flag: &str| -> String {
        let mut c = if tool == "sweep" {
            let mut c = Command::new("bash");
            c.arg(&sweep).env("SWEEPKIT_BIN", &bin);
            c
        } else {
            Command::new(testkit::bin(tool))
        };
        testkit::run(
            {
                c.arg(flag);
                c
            },
            "",
        )
        .expect_code(0)
        .stdout()
    };
    for tool in TOOLS.iter().chain(&["sweep"]) {
        let short = help_of(tool, "-h");
        let long = help_of(tool, "--help");
        let lines = short.lines().count();
        assert!(
            lines <= 40 && lines * 3 < long.lines().count(),
            "{tool} -h: {lines} lines\n{short}"
        );
        assert!(short.contains("\nExample:\n  "), "{tool} -h:\n{short}");
        let wide: Vec<&str> = short.lines().filter(|l| l.chars().count() > 79).collect();
        assert!(wide.is_empty(), "{tool} -h: wider than 79: {wide:?}");
        let named: BTreeSet<String> = short
            .split(|c: char| c == ',' || c == '/' || c.is_whitespace())
            .filter(|w| w.starts_with("--") && w.len() > 2)
            .map(|w| w.trim_end_matches(',').to_string())
            .collect();
        let flags = match *tool {
            "sweep" => sweep_parsed_options(&sweep),
            _ => help_flags(&long),
        };
        let missing: Vec<_> = flags.difference(&named).cloned().collect();
        assert!(missing.is_empty(), "{tool} -h lacks {missing:?}:\n{short}");
    }
    let step_h = testkit::run(testkit::cmd("sweep-plan", &["step", "-h"]), "")
        .expect_code(0)
        .stdout();
    assert!(step_h.contains("Usage: sweep-plan step"), "{step_h}");
}

/// The long options sweep accepts: those its `--help` defines, one a line
/// (generated from its one clap definition, which parses its arguments).
fn sweep_parsed_options(script: &Path) -> BTreeSet<String> {
    let help = bash("bash \"$1\" --help", &[script.to_str().unwrap()]);
    // Definitions are indented at most 6 columns, their help text 10.
    help.lines()
        .filter(|l| l.len() - l.trim_start().len() <= 6)
        .map(|l| l.trim_start().trim_start_matches("-q, "))
        .filter(|l| l.starts_with("--") && l.len() > 2)
        .filter_map(|l| l.split([' ', '=']).next())
        .map(String::from)
        .collect()
}

#[test]
fn sweep_completion_offers_every_option_the_script_parses() {
    let root = testkit::repo_root();
    let script = root.join("scripts/sweep.sh");
    let parsed = sweep_parsed_options(&script);
    assert!(
        parsed.contains("--results") && parsed.len() > 15,
        "{parsed:?}"
    );
    let file = root.join("completions/sweep.bash");
    let offered = complete(&file, "sweep", &["sweep", "--"]);
    let missing: Vec<_> = parsed.difference(&offered).collect();
    assert!(
        missing.is_empty(),
        "sweep completion lacks {missing:?}; offered {offered:?}"
    );
    let res = complete(&file, "sweep", &["sweep", "--res"]);
    assert_eq!(res, ["--results", "--resume"].map(String::from).into());
    let server = complete(&file, "sweep", &["sweep", "--server", "v"]);
    assert_eq!(server, ["vllm".to_string()].into());
    let dir = testkit::temp_dir("sweep-complete");
    std::fs::write(dir.join("results.jsonl"), "").unwrap();
    let prefix = format!("{}/res", dir.display());
    let files = complete(&file, "sweep", &["sweep", "--results", &prefix]);
    assert_eq!(files, [format!("{}/results.jsonl", dir.display())].into());
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn make_install_lays_out_binaries_man_pages_and_completions() {
    let dest = testkit::temp_dir("install");
    let bin_src = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let out = Command::new("make")
        .args(["-s", "install-files", "PREFIX=/usr"])
        .arg(format!("DESTDIR={}", dest.display()))
        .arg(format!("BIN_SRC={}", bin_src.display()))
        .current_dir(testkit::repo_root())
        .output()
        .expect("run make");
    assert!(out.status.success(), "make install-files: {out:?}");
    let usr = dest.join("usr");
    let share = usr.join("share");
    for t in TOOLS.iter().chain(&["sweep"]) {
        let bin = usr.join("bin").join(t);
        let mode = std::os::unix::fs::PermissionsExt::mode(&bin.metadata().unwrap().permissions());
        assert_eq!(mode & 0o777, 0o755, "{}", bin.display());
        assert!(share.join(format!("man/man1/{t}.1")).is_file(), "{t}.1");
        let bash_file = share.join(format!("bash-completion/completions/{t}"));
        let zsh_file = share.join(format!("zsh/site-functions/_{t}"));
        let fish_file = share.join(format!("fish/vendor_completions.d/{t}.fish"));
        let spec = bash(
            "source \"$1\" && complete -p \"$2\"",
            &[bash_file.to_str().unwrap(), t],
        );
        assert!(spec.trim_end().ends_with(&format!(" {t}")), "{t}: {spec}");
        let zsh = std::fs::read_to_string(&zsh_file).unwrap();
        assert!(
            zsh.starts_with(&format!("#compdef {t}")),
            "{}",
            zsh_file.display()
        );
        let fish = std::fs::read_to_string(&fish_file).unwrap();
        assert!(fish.contains("complete -c"), "{}", fish_file.display());
    }
    assert!(share.join("man/man5/sweepkit-records.5").is_file());
    // The installed sweep answers its installed completion.
    assert!(usr.join("bin/sweep").is_file());
    let bash_file = share.join("bash-completion/completions/sweep");
    let offered = complete(&bash_file, "sweep", &["sweep", "--kee"]);
    assert_eq!(offered, ["--keep-winner".to_string()].into());
    std::fs::remove_dir_all(dest).unwrap();
}

#[test]
fn gated_summary_counts_tests_that_ran_and_names_those_that_skipped() {
    let log = testkit::temp_file(
        "gated-summary",
        "gated-tests.log",
        "ran\tssh::a\tsshd\nran\tssh::a\tssh-agent\nran\tssh::b\tsshd\n\
         ran\tnetns::c\tnetns\nskipped\tnetns::c\tsshd missing\n\
         skipped\tsystemd::d\tsystemd-nspawn not found\n",
    );
    let dir = std::path::Path::new(&log).parent().unwrap();
    let script = testkit::repo_root().join("scripts/gated-summary.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&log)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout,
        "2 prerequisite-gated tests ran for real, 2 skipped\n"
    );
    assert!(
        stderr.contains("skipped: netns::c (sshd missing)"),
        "{stderr}"
    );
    assert!(stderr.contains("skipped: systemd::d"), "{stderr}");
    let none = Command::new("bash")
        .arg(&script)
        .arg(dir.join("absent.log"))
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&none.stderr).starts_with("gated-summary: error: "));
    std::fs::remove_dir_all(dir).unwrap();
}
