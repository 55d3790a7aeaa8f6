//! The INI-like unit-file syntax shared by systemd units and svc-swap's
//! process spec: `[Section]` headers, `Key=value` lines, `#`/`;` comments,
//! backslash-newline continuations. Finds and replaces `ExecStart=` while
//! keeping every other byte of the file as it was. Pure.

/// One logical `Key=value` line and the physical lines it spans.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub section: String,
    pub key: String,
    pub value: String,
    /// 0-based physical line range [first, last].
    pub lines: (usize, usize),
}

/// A line of a unit file that is neither a section, an entry nor a
/// comment; `line` is 1-based.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitFileError {
    #[error("line {line}: bad section header")]
    BadSection { line: usize },
    #[error("line {line}: expected Key=value: {text}")]
    NotKeyValue { line: usize, text: String },
}

/// Parse `text` into entries. Continuation lines are joined with a space,
/// and comment lines inside a continuation are skipped, as systemd does.
pub fn entries(text: &str) -> Result<Vec<Entry>, UnitFileError> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    let mut section = String::new();
    let mut i = 0;
    while i < lines.len() {
        let first = i;
        let mut logical = String::new();
        loop {
            let l = lines[i].trim_end_matches('\r');
            let is_comment = !logical.is_empty() && l.trim_start().starts_with(['#', ';']);
            if !is_comment {
                if let Some(body) = l.strip_suffix('\\') {
                    logical.push_str(body);
                    logical.push(' ');
                } else {
                    logical.push_str(l);
                    break;
                }
            }
            if i + 1 == lines.len() {
                break;
            }
            i += 1;
        }
        let t = logical.trim();
        if t.is_empty() || t.starts_with(['#', ';']) {
        } else if let Some(s) = t.strip_prefix('[') {
            section = s
                .strip_suffix(']')
                .ok_or(UnitFileError::BadSection { line: first + 1 })?
                .to_string();
        } else if let Some((k, v)) = t.split_once('=') {
            out.push(Entry {
                section: section.clone(),
                key: k.trim().to_string(),
                value: v.trim().to_string(),
                lines: (first, i),
            });
        } else {
            return Err(UnitFileError::NotKeyValue {
                line: first + 1,
                text: t.to_string(),
            });
        }
        i += 1;
    }
    Ok(out)
}

/// The effective `ExecStart=` entries (an empty one resets the list).
pub fn exec_starts(entries: &[Entry], section: Option<&str>) -> Vec<Entry> {
    let mut list: Vec<Entry> = Vec::new();
    for e in entries.iter().filter(|e| e.key == "ExecStart") {
        if section.is_some_and(|s| s != e.section) {
            continue;
        }
        if e.value.is_empty() {
            list.clear();
        } else {
            list.push(e.clone());
        }
    }
    list
}

/// Replace the physical lines of `entry` with `Key=value`, leaving the rest
/// of `text` byte for byte.
pub fn replace_entry(text: &str, entry: &Entry, new_value: &str) -> String {
    replace_lines(text, entry, &[format!("{}={new_value}", entry.key)])
}

/// `text` with `entry`'s physical lines replaced by `new`.
pub fn replace_lines(text: &str, entry: &Entry, new: &[String]) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    out.extend(lines[..entry.lines.0].iter().map(|s| s.to_string()));
    out.extend(new.iter().cloned());
    out.extend(lines[entry.lines.1 + 1..].iter().map(|s| s.to_string()));
    out.join("\n")
}

/// One file of `systemctl cat` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatFile {
    pub path: String,
    pub text: String,
}

/// Split `systemctl cat` output at its `# /path` header lines.
pub fn split_cat(out: &str) -> Vec<CatFile> {
    let mut files: Vec<CatFile> = Vec::new();
    for line in out.split_inclusive('\n') {
        let header = line
            .trim_end()
            .strip_prefix("# /")
            .filter(|_| files.last().is_none_or(|f| !f.text.ends_with("\\\n")));
        match header {
            Some(p) if !p.contains(' ') => files.push(CatFile {
                path: format!("/{p}"),
                text: String::new(),
            }),
            _ => {
                if let Some(f) = files.last_mut() {
                    f.text.push_str(line);
                }
            }
        }
    }
    for f in &mut files {
        // `systemctl cat` puts a blank line between files.
        if f.text.ends_with("\n\n") {
            f.text.pop();
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: &str = "[Unit]\nDescription=x\n\n[Service]\n# comment\nExecStart=/bin/s \\\n  --a 1 \\\n# inside\n  --b 2\nRestart=on-failure\n";

    #[test]
    fn continuation_lines_join_and_skip_comments() {
        let e = entries(UNIT).unwrap();
        let ex = exec_starts(&e, Some("Service"));
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].lines, (5, 8));
        let words = crate::execstart::parse(&ex[0].value).unwrap().words;
        assert_eq!(words, ["/bin/s", "--a", "1", "--b", "2"]);
    }

    #[test]
    fn replace_keeps_other_lines() {
        let e = entries(UNIT).unwrap();
        let ex = &exec_starts(&e, Some("Service"))[0];
        let t = replace_entry(UNIT, ex, "/bin/s --a 9");
        assert_eq!(
            t,
            "[Unit]\nDescription=x\n\n[Service]\n# comment\nExecStart=/bin/s --a 9\nRestart=on-failure\n"
        );
    }

    #[test]
    fn empty_exec_start_resets() {
        let t = "[Service]\nExecStart=/bin/a\nExecStart=\nExecStart=/bin/b\n";
        let ex = exec_starts(&entries(t).unwrap(), Some("Service"));
        assert_eq!(ex.len(), 1);
        assert_eq!(ex[0].value, "/bin/b");
    }

    #[test]
    fn bad_lines_are_located() {
        assert_eq!(
            entries("[Service\n").unwrap_err().to_string(),
            "line 1: bad section header"
        );
        let e = entries("ok=1\nnot a pair\n").unwrap_err().to_string();
        assert!(e.starts_with("line 2:"), "{e}");
    }

    #[test]
    fn split_cat_output() {
        let out = "# /etc/systemd/system/x.service\n[Service]\nExecStart=/bin/a\n\n# /etc/systemd/system/x.service.d/50-sweepkit.conf\n[Service]\nExecStart=\nExecStart=/bin/b\n";
        let f = split_cat(out);
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].text, "[Service]\nExecStart=/bin/a\n");
        assert_eq!(
            f[1].path,
            "/etc/systemd/system/x.service.d/50-sweepkit.conf"
        );
    }
}
