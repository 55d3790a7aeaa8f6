//! Each tool's words for one target, from sweep's parsed options: svc-swap's
//! target (`--unit`/`--spec`, `--ssh` with its key options, `--exec-prefix`,
//! the pass-through words), wait-ready's URL, timeout and preset, loadgen's
//! URL and levels. A pool host (`--hosts`) is one target: its own SSH
//! destination, exec prefix and URL. Also `--dry-run`'s plan, the configs'
//! pipes as commands to copy, quoted as bash's `printf %q` quotes.

use std::fmt::Write as _;

use crate::grid::Grid;
use crate::hosts::Host;

/// Where the configs run: the SSH destination and exec prefix (`None`:
/// here, as given) and the server's URL.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Target {
    pub ssh: Option<String>,
    pub exec_prefix: Option<String>,
    pub url: String,
}

impl Target {
    /// A pool host's target (`-` is this machine).
    pub fn of_host(h: &Host) -> Target {
        Target {
            ssh: Some(h.dest.clone()).filter(|d| d != "-"),
            exec_prefix: Some(h.exec.clone()).filter(|e| !e.is_empty()),
            url: h.url.clone(),
        }
    }
}

/// What every config's stages share, less the tool names: as sweep.sh's
/// `target`, `ready` and `load` arrays.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stages {
    pub target: Vec<String>,
    pub ready: Vec<String>,
    pub load: Vec<String>,
}

/// The settings a target's words are built from (sweep's options).
#[derive(Debug, Clone, Default)]
pub struct Base<'a> {
    pub unit: Option<&'a str>,
    pub spec: Option<&'a str>,
    pub ssh_opts: &'a [String],
    pub swap_args: &'a [String],
    pub ready_timeout: &'a str,
    pub server: Option<&'a str>,
    pub ready_args: &'a [String],
    pub concurrency: Option<&'a str>,
    pub load_args: &'a [String],
}

fn given(o: Option<&str>) -> Option<&str> {
    o.filter(|s| !s.is_empty())
}

/// The three stages' shared words for target `t`.
pub fn stages(b: &Base<'_>, t: &Target) -> Stages {
    let w = |s: &str| s.to_string();
    let mut target = Vec::new();
    if let Some(u) = given(b.unit) {
        target.extend([w("--unit"), w(u)]);
    }
    if let Some(s) = given(b.spec) {
        target.extend([w("--spec"), w(s)]);
    }
    if let Some(d) = given(t.ssh.as_deref()) {
        target.extend([w("--ssh"), w(d)]);
        target.extend(b.ssh_opts.iter().cloned());
    }
    if let Some(e) = given(t.exec_prefix.as_deref()) {
        target.extend([w("--exec-prefix"), w(e)]);
    }
    target.extend(b.swap_args.iter().cloned());
    let mut ready = vec![t.url.clone(), w("--timeout"), w(b.ready_timeout)];
    if let Some(s) = given(b.server) {
        ready.extend([w("--server"), w(s)]);
    }
    ready.extend(b.ready_args.iter().cloned());
    let mut load = vec![w("--url"), t.url.clone()];
    if let Some(c) = given(b.concurrency) {
        load.extend([w("-c"), w(c)]);
    }
    load.extend(b.load_args.iter().cloned());
    Stages {
        target,
        ready,
        load,
    }
}

/// The tools' paths, as the script found them.
pub struct Tools<'a> {
    pub swap: &'a str,
    pub ready: &'a str,
    pub load: &'a str,
}

/// `--dry-run`: with a pool, each host and its URL; then each config's
/// pipe (on the first host), as a command to copy.
#[allow(clippy::too_many_arguments)]
pub fn dry_run(
    g: &Grid,
    st: &Stages,
    tools: &Tools<'_>,
    pool: &[Host],
    expect_config: bool,
    results: &str,
) -> String {
    let mut out = String::new();
    for h in pool {
        let _ = writeln!(out, "# host {}: {} -> {}", h.n, h.name, h.url);
    }
    let n = g.points.len();
    for p in &g.points {
        let own = p.stage_words(expect_config);
        let whole = |tool: &str, shared: &[String], own: Vec<String>| {
            let mut ws = vec![tool.to_string()];
            ws.extend(shared.iter().cloned());
            ws.extend(own);
            ws
        };
        let swap = whole(tools.swap, &st.target, own.swap);
        let ready = whole(tools.ready, &st.ready, own.ready);
        let load = whole(tools.load, &st.load, own.load);
        let _ = writeln!(out, "# [{}/{n}] {}", p.index, p.label());
        let words = |ws: &[String]| ws.iter().map(|w| bash_q(w) + " ").collect::<String>();
        let _ = writeln!(
            out,
            "{}\\\n  | {}\\\n  | {}>> {}",
            words(&swap),
            words(&ready),
            words(&load),
            bash_q(results)
        );
    }
    out
}

/// A word as bash's `printf %q` writes it: `''` if empty, `$'...'` if it
/// holds a control character, else each character the shell would read
/// specially behind a backslash (`#` and `~` only where they would start
/// a comment or a tilde expansion). Checked against bash in the tests.
pub fn bash_q(s: &str) -> String {
    if s.is_empty() {
        return "''".into();
    }
    if s.chars().any(|c| c.is_control()) {
        let mut out = String::from("$'");
        for c in s.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                '\x07' => out.push_str("\\a"),
                '\x08' => out.push_str("\\b"),
                '\x0b' => out.push_str("\\v"),
                '\x0c' => out.push_str("\\f"),
                '\x1b' => out.push_str("\\E"),
                '\'' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                c if c.is_control() => {
                    let _ = write!(out, "\\{:03o}", c as u32);
                }
                c => out.push(c),
            }
        }
        out.push('\'');
        return out;
    }
    let mut out = String::new();
    let mut prev: Option<char> = None;
    for c in s.chars() {
        let special = " \"$&'()*,;<>?[\\]^`{|}!".contains(c)
            || (c == '#' && prev.is_none())
            || (c == '~' && matches!(prev, None | Some(':') | Some('=')));
        if special {
            out.push('\\');
        }
        out.push(c);
        prev = Some(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_q_quotes_as_bash_printf_does() {
        let words = [
            "a b",
            "x,y",
            "a=b",
            "~x",
            "a~",
            "a=~b",
            "a:~b",
            "#a",
            "a#",
            "it's",
            "",
            "a:b",
            "%",
            "@",
            "+",
            "-",
            ".",
            "/",
            "$(x)",
            "`x`",
            "a\"b",
            "a\\b",
            "*?[x]",
            "{a}",
            "a|b&c;d",
            "<>",
            "!x",
            "^x",
            "a\tb",
            "a\nb",
            "é",
            "pct exec 129 --",
            "--b=x y",
        ];
        let printable: String = (0x20u8..0x7f).map(char::from).collect();
        let mut all: Vec<&str> = words.to_vec();
        all.push(&printable);
        let out = std::process::Command::new("bash")
            .args([
                "--norc",
                "-c",
                r#"for w in "$@"; do printf '%q\n' "$w"; done"#,
                "bash",
            ])
            .args(&all)
            .env("LC_ALL", "C.UTF-8")
            .output()
            .expect("bash");
        let theirs = String::from_utf8(out.stdout).unwrap();
        let ours: String = all.iter().map(|w| bash_q(w) + "\n").collect();
        // A newline inside $'...' is one line of bash's output too.
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_host_is_a_target_of_its_own() {
        let b = Base {
            unit: Some("sim"),
            ssh_opts: &["--ssh-key".into(), "k".into()],
            ready_timeout: "10m",
            server: Some("vllm"),
            concurrency: Some("1,4"),
            ..Base::default()
        };
        let here = Target {
            url: "http://h:1".into(),
            exec_prefix: Some("pct exec 1 --".into()),
            ..Target::default()
        };
        let s = stages(&b, &here);
        assert_eq!(
            s.target,
            ["--unit", "sim", "--exec-prefix", "pct exec 1 --"]
        );
        assert_eq!(
            s.ready,
            ["http://h:1", "--timeout", "10m", "--server", "vllm"]
        );
        assert_eq!(s.load, ["--url", "http://h:1", "-c", "1,4"]);
        let far = Target {
            ssh: Some("root@g".into()),
            url: "u".into(),
            ..Target::default()
        };
        assert_eq!(
            stages(&b, &far).target,
            ["--unit", "sim", "--ssh", "root@g", "--ssh-key", "k"]
        );
    }
}
