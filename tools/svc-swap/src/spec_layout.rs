//! An edited `ExecStart=` that keeps the user's layout: where the entry was
//! split over backslash-continued lines, the new words go on the same lines
//! with the same indentation, so a restore gives the file back byte for byte
//! (issue 33: the restore joined a spec's continued line into one). Pure.

use crate::execstart::{parse, render, render_word, ExecLine};
use crate::unitfile::{replace_entry, replace_lines, Entry};

/// `text` with `entry` (an `ExecStart=` parsed as `old`) set to `new`: on
/// the entry's lines when the words per line can be told (the old words laid
/// out that way give back the old lines exactly), else on one line. Words
/// added past the old count go on the last line.
pub fn replace_exec(text: &str, entry: &Entry, old: &ExecLine, new: &ExecLine) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let Some(phys) = lines.get(entry.lines.0..=entry.lines.1) else {
        return replace_entry(text, entry, &render(new));
    };
    let head = format!("{}=", entry.key);
    let relaid = layout(phys, &head).and_then(|l| {
        let same = lay_out(&l, &head, old, false)?;
        (same.iter().map(String::as_str).eq(phys.iter().copied()))
            .then(|| lay_out(&l, &head, new, true))
            .flatten()
    });
    match relaid {
        Some(new_lines) => replace_lines(text, entry, &new_lines),
        None => replace_entry(text, entry, &render(new)),
    }
}

/// One physical line: its leading whitespace, how many words it holds, and
/// what follows the last word (spaces and the continuation backslash).
struct Line<'a> {
    lead: &'a str,
    words: usize,
    tail: &'a str,
}

/// The layout of a continued entry; None for one line, a comment inside the
/// continuation, or anything else it cannot tell.
fn layout<'a>(phys: &[&'a str], head: &str) -> Option<Vec<Line<'a>>> {
    if phys.len() < 2 {
        return None;
    }
    let mut out = Vec::new();
    // Words per line: from the words of the lines so far (a break falls
    // between words, so each such head parses), as systemd splits them.
    let (mut joined, mut before) = (String::new(), 0);
    for (i, l) in phys.iter().enumerate() {
        let body = if i == 0 { l.strip_prefix(head)? } else { l };
        let end = if i + 1 == phys.len() {
            body.len()
        } else {
            body.strip_suffix('\\')?.trim_end().len()
        };
        let (text, tail) = body.split_at(end);
        let lead = &text[..text.len() - text.trim_start().len()];
        if text.trim_start().starts_with(['#', ';']) && i > 0 {
            return None;
        }
        joined.push(' ');
        joined.push_str(text);
        let so_far = parse(&joined).ok()?.words.len();
        out.push(Line {
            lead,
            words: so_far - before,
            tail,
        });
        before = so_far;
    }
    Some(out)
}

/// `line`'s words on `layout`'s lines; None when the counts differ (more
/// words are allowed, on the last line, when `grow`).
fn lay_out(layout: &[Line<'_>], head: &str, line: &ExecLine, grow: bool) -> Option<Vec<String>> {
    let words: Vec<String> = line.words.iter().map(|w| render_word(w)).collect();
    let total: usize = layout.iter().map(|l| l.words).sum();
    if words.len() < total || (words.len() > total && !grow) {
        return None;
    }
    let mut out = Vec::new();
    let mut k = 0;
    for (i, l) in layout.iter().enumerate() {
        let n = if i + 1 == layout.len() {
            words.len() - k
        } else {
            l.words
        };
        let mut s = String::new();
        if i == 0 {
            s.push_str(head);
            s.push_str(l.lead);
            s.push_str(&line.prefix);
        } else {
            s.push_str(l.lead);
        }
        s.push_str(&words[k..k + n].join(" "));
        s.push_str(l.tail);
        k += n;
        out.push(s);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unitfile::entries;

    fn swap(text: &str, new_words: &str) -> String {
        let e = entries(text)
            .unwrap()
            .into_iter()
            .find(|e| e.key == "ExecStart")
            .unwrap();
        let old = parse(&e.value).unwrap();
        let new = parse(new_words).unwrap();
        replace_exec(text, &e, &old, &new)
    }

    const SPEC: &str = "Port=1\nExecStart=sim --port 1 \\\n  --steps 1 --topk 1 \\\n    --x \"a b\"\nTimeoutStopSec=5\n";

    #[test]
    fn a_continued_line_keeps_its_breaks_and_comes_back_byte_for_byte() {
        let edited = swap(SPEC, "sim --port 1 --steps 4 --topk 1 --x \"a b\"");
        assert_eq!(
            edited,
            "Port=1\nExecStart=sim --port 1 \\\n  --steps 4 --topk 1 \\\n    --x \"a b\"\nTimeoutStopSec=5\n"
        );
        assert_eq!(
            swap(&edited, "sim --port 1 --steps 1 --topk 1 --x \"a b\""),
            SPEC
        );
    }

    #[test]
    fn added_words_go_on_the_last_line_and_fewer_words_make_one_line() {
        let added = swap(SPEC, "sim --port 1 --steps 1 --topk 1 --x \"a b\" --new 2");
        assert!(
            added.contains("    --x \"a b\" --new 2\nTimeout"),
            "{added}"
        );
        let fewer = swap(SPEC, "sim --port 1 --steps 1");
        assert!(
            fewer.contains("ExecStart=sim --port 1 --steps 1\nTimeout"),
            "{fewer}"
        );
    }

    #[test]
    fn a_comment_inside_the_continuation_falls_back_to_one_line() {
        let t = "ExecStart=sim \\\n# note\n  --k 1\n";
        assert_eq!(swap(t, "sim --k 2"), "ExecStart=sim --k 2\n");
    }
}
