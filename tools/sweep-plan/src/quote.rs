//! Words quoted for bash, both ways sweep-plan hands them on: single
//! quotes for the assignments sweep.sh evals ([`single`]), and bash's own
//! `printf %q` for the commands a dry run prints and the batch script
//! holds ([`printf_q`]).

use std::fmt::Write as _;

/// POSIX single-quoting: inside '...' no character is special but the
/// quote itself, written '\'' (close, escaped quote, reopen). Newlines,
/// `$(...)`, backquotes and globs stay literal; argv holds no NUL.
pub fn single(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A word as bash's `printf %q` writes it: `''` if empty, `$'...'` if it
/// holds a control character, else each character the shell would read
/// specially behind a backslash (`#` and `~` only where they would start
/// a comment or a tilde expansion). Checked against bash in the tests.
pub fn printf_q(s: &str) -> String {
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
    fn quote_keeps_every_character_literal() {
        assert_eq!(single("a b"), "'a b'");
        assert_eq!(single("it's"), r"'it'\''s'");
        assert_eq!(single(""), "''");
    }

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
        let ours: String = all.iter().map(|w| printf_q(w) + "\n").collect();
        // A newline inside $'...' is one line of bash's output too.
        assert_eq!(ours, theirs);
    }
}
