//! Behaviour held byte for byte while the code moves (issue 42): every
//! tool's help, `sweep --dry-run` and sweep-plan's answers for a set of
//! command lines (good and bad), and summarize's every format on frozen
//! results files. The cases are `tests/fixtures/golden/cases` (one per
//! line: `NAME: TOOL ARGS...`, shell words); each one's exit status,
//! stdout and stderr are `tests/fixtures/golden/out/NAME`.
//!
//! `SWEEPKIT_UPDATE_GOLDEN=1` rewrites the outputs: a change of behaviour
//! is then a reviewed diff of those files, in the commit that makes it.
//!
//! In the words: `{fx}` is the golden fixtures folder, `{dir}` a fresh
//! folder holding copies of its `specs/` (so a case may write there), and
//! a trailing `--golden-file PATH` appends that file (a report a case
//! wrote) to the output. Outputs name those folders and the binaries'
//! folder as `{fx}`, `{dir}` and `{bin}`, so they hold on any machine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

struct Case {
    name: String,
    /// `NAME=VALUE` words before the tool: its environment beside
    /// [`KEY_ENV`]'s default (`SWEEPKIT_API_KEY=` runs it with no key).
    env: Vec<(String, String)>,
    tool: String,
    args: Vec<String>,
    append: Option<String>,
}

/// Every case runs with a key in the environment, as a user whose server
/// has `--api-key` (the specs' launch lines) is told to run sweep, unless
/// the case sets `SWEEPKIT_API_KEY=` itself.
const KEY_ENV: (&str, &str) = ("SWEEPKIT_API_KEY", "GOLDEN-KEY-IN-ENV");

fn golden_dir() -> PathBuf {
    testkit::repo_root().join("tests/fixtures/golden")
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(golden_dir().join("cases")).expect("cases");
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, cmd) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("cases:{}: no `NAME: ` in {line}", i + 1));
        let mut words = shell_words::split(cmd).unwrap_or_else(|e| panic!("cases:{}: {e}", i + 1));
        let mut append = None;
        if words.len() >= 2 && words[words.len() - 2] == "--golden-file" {
            append = words.pop();
            words.pop();
        }
        let mut env = Vec::new();
        while let Some((k, v)) = words.first().and_then(|w| w.split_once('=')) {
            env.push((k.to_string(), v.to_string()));
            words.remove(0);
        }
        let tool = words.remove(0);
        out.push(Case {
            name: name.to_string(),
            env,
            tool,
            args: words,
            append,
        });
    }
    out
}

/// A fresh folder with the golden specs copied in.
fn fresh_dir() -> PathBuf {
    let dir = testkit::temp_dir("golden");
    let specs = golden_dir().join("specs");
    for e in std::fs::read_dir(&specs).expect("specs") {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    dir
}

fn subst(word: &str, fx: &Path, dir: &Path) -> String {
    word.replace("{fx}", &fx.display().to_string())
        .replace("{dir}", &dir.display().to_string())
}

fn run_case(case: &Case) -> String {
    let fx = golden_dir();
    let dir = fresh_dir();
    let bin_dir = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let args: Vec<String> = case.args.iter().map(|a| subst(a, &fx, &dir)).collect();
    let mut cmd = if case.tool == "sweep" {
        let mut c = Command::new("bash");
        c.arg(testkit::repo_root().join("scripts/sweep.sh"))
            .arg("--bin-dir")
            .arg(&bin_dir);
        c
    } else {
        Command::new(testkit::bin(&case.tool))
    };
    cmd.args(&args)
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .env("TMPDIR", &dir)
        .env(KEY_ENV.0, KEY_ENV.1)
        .envs(case.env.iter().map(|(k, v)| (k, v)))
        .env_remove("OPENAI_API_KEY")
        .env_remove("SWEEPKIT_BIN")
        .env_remove("SLURM_CONF")
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let mut text = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if let Some(f) = &case.append {
        let path = subst(f, &fx, &dir);
        let body = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("(none: {e})\n"));
        text.push_str(&format!("--- {f}\n{body}"));
    }
    let text = text
        .replace(&dir.display().to_string(), "{dir}")
        .replace(&bin_dir.display().to_string(), "{bin}")
        .replace(&fx.display().to_string(), "{fx}")
        .replace(&testkit::repo_root().display().to_string(), "{repo}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        !text.contains(KEY_ENV.1),
        "{}: the environment's key is printed:\n{text}",
        case.name
    );
    steady(&text)
}

/// What differs from run to run and machine to machine whatever the code
/// does: clock stamps, svc-swap's job ids, process ids, the host's name.
fn steady(text: &str) -> String {
    let rules = [
        (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "<time>"),
        (r"\d{8}T\d{6,9}Z-\d+", "<job>"),
        (r"\b(PID|pid) \d+", "$1 <pid>"),
        (r#""(hostname|host)":"[^"]*""#, r#""$1":"<host>""#),
    ];
    let mut text = text.to_string();
    for (pat, with) in rules {
        text = regex::Regex::new(pat)
            .unwrap()
            .replace_all(&text, with)
            .into_owned();
    }
    text
}

#[test]
fn every_golden_case_behaves_as_recorded() {
    let update = std::env::var_os("SWEEPKIT_UPDATE_GOLDEN").is_some();
    let out_dir = golden_dir().join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let cases = cases();
    assert!(cases.len() > 50, "the cases file lost its cases");
    let mut differ = Vec::new();
    for case in &cases {
        let got = run_case(case);
        let path = out_dir.join(&case.name);
        if update {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != want {
            let diff = similar::TextDiff::from_lines(&want, &got)
                .unified_diff()
                .context_radius(2)
                .header(&format!("out/{} (recorded)", case.name), "now")
                .to_string();
            differ.push(diff);
        }
    }
    if update {
        // No stale outputs: every file in out/ is a case's.
        for e in std::fs::read_dir(&out_dir).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if !cases.iter().any(|c| c.name == name) {
                std::fs::remove_file(out_dir.join(name)).unwrap();
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} golden cases changed (SWEEPKIT_UPDATE_GOLDEN=1 rewrites them once the change is meant):\n{}",
        differ.len(),
        cases.len(),
        differ.join("\n")
    );
}
