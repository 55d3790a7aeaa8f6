//! systemd `ExecStart=` syntax: split a command line into words the way
//! systemd does (prefixes, double and single quotes, C escapes, `\;`) and
//! render words back with minimal quoting. Pure: no I/O.
//!
//! Words are kept in *unit-file form*: quotes and C escapes are resolved, but
//! `%` specifiers and `$` variables stay exactly as written, because only
//! systemd (at start time) knows what `%i` or `$FOO` expand to. `logical()`
//! turns a word into what the server will see for the escapes svc-swap
//! understands (`%%` -> `%`, `$$` -> `$`); `escape_value()` goes the other way
//! for values given on the command line.

/// One parsed `ExecStart=` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecLine {
    /// Special-executable prefix characters (`-`, `@`, `+`, `!`, `!!`, `:`).
    pub prefix: String,
    /// The words in unit-file form; `words[0]` is the program path.
    pub words: Vec<String>,
}

impl ExecLine {
    /// Index of the first argument after the program (and after argv[0]
    /// when the `@` prefix gives one).
    pub fn first_arg(&self) -> usize {
        if self.prefix.contains('@') {
            2
        } else {
            1
        }
    }

    /// The words as the server will see them (see `logical`).
    pub fn logical_argv(&self) -> Vec<String> {
        self.words.iter().map(|w| logical(w)).collect()
    }
}

/// Why an `ExecStart=` value does not read as one command.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    #[error("ExecStart= has no command")]
    NoCommand,
    #[error("ExecStart= with '@' needs a path and an argv[0]")]
    AtWithoutArgv0,
    #[error("';' separates commands; svc-swap edits one command")]
    Separator,
    #[error("ExecStart= ends with a lone backslash")]
    LoneBackslash,
    #[error("ExecStart= has an unterminated {0} quote")]
    Unterminated(char),
    /// `\x`, `\u` or `\U` and the digits that followed it.
    #[error("ExecStart= has a bad escape \\{0}{1}")]
    BadEscape(char, String),
    #[error("ExecStart= has a bad octal escape")]
    BadOctal,
}

/// Parse an `ExecStart=` value (continuations already joined).
pub fn parse(value: &str) -> Result<ExecLine, ExecError> {
    let mut rest = value.trim_start_matches(is_ws);
    let mut prefix = String::new();
    while let Some(c) = rest.chars().next() {
        if "@-:+!".contains(c) {
            prefix.push(c);
            rest = &rest[1..];
        } else {
            break;
        }
    }
    let mut words = Vec::new();
    let mut chars = rest.chars().peekable();
    loop {
        while chars.peek().copied().is_some_and(is_ws) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        words.push(next_word(&mut chars)?);
    }
    if words.is_empty() {
        return Err(ExecError::NoCommand);
    }
    if prefix.contains('@') && words.len() < 2 {
        return Err(ExecError::AtWithoutArgv0);
    }
    Ok(ExecLine { prefix, words })
}

fn is_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r')
}

/// Read one word, unquoting and C-unescaping as systemd's
/// `extract_first_word(EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE)` does.
fn next_word(chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<String, ExecError> {
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut first = true;
    while let Some(&c) = chars.peek() {
        if quote.is_none() && is_ws(c) {
            break;
        }
        chars.next();
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, ';') if first && chars.peek().is_none_or(|&n| is_ws(n)) => {
                return Err(ExecError::Separator)
            }
            (_, '\\') => {
                let Some(e) = chars.next() else {
                    return Err(ExecError::LoneBackslash);
                };
                unescape(e, chars, &mut word)?;
            }
            _ => word.push(c),
        }
        first = false;
    }
    if let Some(q) = quote {
        return Err(ExecError::Unterminated(q));
    }
    Ok(word)
}

/// One C escape after a backslash (systemd's `cunescape_one`).
fn unescape(
    e: char,
    chars: &mut std::iter::Peekable<std::str::Chars>,
    out: &mut String,
) -> Result<(), ExecError> {
    let mut hex = |n: usize| -> Result<char, ExecError> {
        let digits: String = (0..n).filter_map(|_| chars.next()).collect();
        u32::from_str_radix(&digits, 16)
            .ok()
            .and_then(char::from_u32)
            .filter(|_| digits.len() == n)
            .ok_or(ExecError::BadEscape(e, digits))
    };
    let c = match e {
        'a' => '\x07',
        'b' => '\x08',
        'f' => '\x0c',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\x0b',
        's' => ' ',
        'x' => hex(2)?,
        'u' => hex(4)?,
        'U' => hex(8)?,
        '0'..='7' => {
            let mut v = e.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                let d = chars.next().and_then(|d| d.to_digit(8));
                v = v * 8 + d.ok_or(ExecError::BadOctal)?;
            }
            char::from_u32(v).ok_or(ExecError::BadOctal)?
        }
        // `\\`, `\"`, `\'`, `\;` and anything else: the character itself.
        other => other,
    };
    out.push(c);
    Ok(())
}

/// Render a line back to an `ExecStart=` value, quoting only where needed.
pub fn render(line: &ExecLine) -> String {
    let mut out = line.prefix.clone();
    for (i, w) in line.words.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&render_word(w));
    }
    out
}

/// One word in unit-file syntax: bare when safe, else double-quoted with
/// C escapes. `;` alone would end the command, so it is written `\;`.
pub fn render_word(w: &str) -> String {
    if w == ";" {
        return r"\;".into();
    }
    let safe = !w.is_empty()
        && w.chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && !"\"'\\".contains(c));
    if safe {
        return w.to_string();
    }
    let mut out = String::from("\"");
    for c in w.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A word as the server sees it for the escapes svc-swap resolves itself:
/// `%%` -> `%` and `$$` -> `$` (other specifiers and variables stay).
pub fn logical(w: &str) -> String {
    w.replace("%%", "%").replace("$$", "$")
}

/// A value from the command line in unit-file form: `%` -> `%%`, `$` -> `$$`,
/// so systemd passes it through unexpanded.
pub fn escape_value(v: &str) -> String {
    v.replace('%', "%%").replace('$', "$$")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        parse(s).unwrap().words
    }

    #[test]
    fn plain_words_and_prefixes() {
        let l = parse("-@/usr/bin/python3 python -m sglang --port 30000").unwrap();
        assert_eq!(l.prefix, "-@");
        assert_eq!(
            l.words,
            [
                "/usr/bin/python3",
                "python",
                "-m",
                "sglang",
                "--port",
                "30000"
            ]
        );
        assert_eq!(l.first_arg(), 2);
        let l = parse("+!!/bin/x").unwrap();
        assert_eq!((l.prefix.as_str(), l.first_arg()), ("+!!", 1));
    }

    #[test]
    fn quotes_concatenate_and_escape() {
        assert_eq!(
            words(r#"/bin/x "a b" 'c"d' "x\ny" pre"mid"post 'it''s' "q\"q""#),
            ["/bin/x", "a b", "c\"d", "x\ny", "premidpost", "its", "q\"q"]
        );
        assert_eq!(
            words(r"/bin/x \; a\ b \x41\101\u00e9"),
            ["/bin/x", ";", "a b", "AAé"]
        );
        assert_eq!(words("/bin/x ''"), ["/bin/x", ""]);
    }

    #[test]
    fn specifiers_and_variables_stay_raw() {
        let l = parse("/bin/x %% %n $$HOME ${FOO} 50%%").unwrap();
        assert_eq!(l.words, ["/bin/x", "%%", "%n", "$$HOME", "${FOO}", "50%%"]);
        assert_eq!(
            l.logical_argv(),
            ["/bin/x", "%", "%n", "$HOME", "${FOO}", "50%"]
        );
        assert_eq!(escape_value("50%$x"), "50%%$$x");
        assert_eq!(logical(&escape_value("a%%b$$c")), "a%%b$$c");
    }

    #[test]
    fn bad_lines_are_errors() {
        assert!(parse("").is_err());
        assert!(parse("   ").is_err());
        let msg = |s: &str| parse(s).unwrap_err().to_string();
        assert!(msg("/bin/x \"open").contains("unterminated"));
        assert!(msg("/bin/x ; /bin/y").contains("separates"));
        assert!(parse("/bin/x trailing\\").is_err());
        assert!(parse("@/bin/x").is_err());
        assert!(parse("/bin/x \\xZZ").is_err());
    }

    #[test]
    fn render_quotes_minimally_and_round_trips() {
        let nasty = [
            "/opt/bin/llm-sim",
            "--model",
            "; rm -rf /",
            "$(touch /tmp/pwned)",
            "it's \"quoted\"",
            "a\nb\tc",
            "",
            ";",
            "back\\slash",
            "50%%",
            "é ü",
        ];
        let line = ExecLine {
            prefix: "-".into(),
            words: nasty.iter().map(|s| s.to_string()).collect(),
        };
        let text = render(&line);
        assert!(
            text.starts_with("-/opt/bin/llm-sim --model \"; rm -rf /\""),
            "{text}"
        );
        assert!(!text.contains('\n'), "a newline would end the line: {text}");
        assert_eq!(parse(&text).unwrap(), line, "{text}");
    }

    #[test]
    fn render_word_leaves_plain_words_alone() {
        assert_eq!(render_word("--port=8000"), "--port=8000");
        assert_eq!(render_word("a b"), "\"a b\"");
        assert_eq!(render_word("\x01"), "\"\\x01\"");
    }
}
