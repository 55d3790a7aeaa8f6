//! Lines never mix on stderr (issue 46: "svc-swapwait-ready: error: ..."):
//! every tool writes each stderr line in one write, so tools that share
//! one stderr (a pipeline's stages, a terminal) never split each other's
//! lines. The tools run many at a time into one pipe; every line read back
//! must be one a tool wrote whole when it ran alone. Before the fix,
//! `eprintln!` with arguments (and `writeln!` to stderr) wrote each piece
//! of a line with its own write(2). Needs `cargo build --workspace --bins`.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};

use testkit::{bin, temp_dir};

/// How many copies of each command run at once.
const COPIES: usize = 8;

/// The commands: each writes several stderr lines, built of several
/// pieces, that do not depend on timing.
fn commands(dir: &std::path::Path) -> Vec<Vec<String>> {
    let spec = dir.join("s.spec");
    let port = testkit::free_port();
    std::fs::write(
        &spec,
        format!("ExecStart=/bin/sleep 1000 --a 1 --b 2 --c 3\nPort={port}\n"),
    )
    .unwrap();
    // 30 records summarize ignores: a warning each (20, then "... and N
    // more").
    let junk = dir.join("junk.jsonl");
    let text: String = (0..30)
        .map(|i| format!("{{\"type\":\"newer{i}\"}}\n"))
        .collect();
    std::fs::write(&junk, text).unwrap();
    let s = |v: &[&str]| v.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let spec = spec.to_str().unwrap();
    vec![
        // The unified diff of a dry run, line by line.
        s(&["svc-swap", "--spec", spec, "--dry-run", "--no-preflight"])
            .into_iter()
            .chain(s(&["--set", "--a=10", "--set", "--c=30", "--set", "--d=4"]))
            .collect(),
        s(&["summarize", "--format", "text", junk.to_str().unwrap()]),
        // Refused at once: nothing listens (one error line).
        s(&[
            "wait-ready",
            &format!("tcp://127.0.0.1:{port}"),
            "--timeout",
            "300ms",
        ]),
    ]
}

/// Run `words` (a tool and its arguments) with stderr to `err`.
fn spawn(words: &[String], err: &std::io::PipeWriter) -> std::process::Child {
    Command::new(bin(&words[0]))
        .args(&words[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err.try_clone().unwrap())
        .spawn()
        .unwrap()
}

/// The stderr lines of `cmds`, each run `copies` times at once, all into
/// one pipe, counted.
fn lines_of(cmds: &[Vec<String>], copies: usize) -> BTreeMap<String, usize> {
    let (mut reader, writer) = std::io::pipe().unwrap();
    let children: Vec<_> = (0..copies)
        .flat_map(|_| cmds.iter().map(|c| spawn(c, &writer)))
        .collect();
    drop(writer);
    let mut all = String::new();
    reader.read_to_string(&mut all).unwrap();
    for mut c in children {
        c.wait().unwrap();
    }
    let mut n = BTreeMap::new();
    for l in all.lines() {
        *n.entry(l.to_string()).or_insert(0) += 1;
    }
    n
}

#[test]
fn tools_sharing_one_stderr_never_split_each_other_s_lines() {
    let dir = temp_dir("stderr-lines");
    let cmds = commands(&dir);
    // Alone: what each writes, and that it writes several lines.
    let mut want: BTreeMap<String, usize> = BTreeMap::new();
    for c in &cmds {
        let alone = lines_of(std::slice::from_ref(c), 1);
        assert!(alone.len() >= 2 || c[0] == "wait-ready", "{c:?}: {alone:?}");
        for (l, k) in alone {
            *want.entry(l).or_insert(0) += k * COPIES;
        }
    }
    // Together, eight times over: the same lines, each whole. (Before the
    // fix, most rounds split some line.)
    for round in 0..8 {
        let got = lines_of(&cmds, COPIES);
        let broken: Vec<&String> = got.keys().filter(|l| !want.contains_key(*l)).collect();
        assert!(
            broken.is_empty(),
            "round {round}: lines split by another tool's: {broken:#?}"
        );
        assert_eq!(got, want, "round {round}");
    }
}
