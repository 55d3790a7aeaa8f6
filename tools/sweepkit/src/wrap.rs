//! Text broken between words for a terminal: summarize's failures and
//! notes, and each tool's `-h` summary. A word longer than its line stands
//! alone, whole: text is never cut mid-word.

/// `text` in lines broken between words: the first line at most `first`
/// characters, the others at most `rest`. Empty text is one empty line.
pub fn wrap(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let len = line.chars().count();
        let width = if lines.is_empty() { first } else { rest };
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaks_between_words_within_each_lines_width() {
        let text = "restored the original config after the server exited at once";
        let lines = wrap(text, 20, 20);
        assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(wrap("aa bb cc dd", 5, 5), ["aa bb", "cc dd"]);
        assert_eq!(wrap("aa bb cc dd", 2, 8), ["aa", "bb cc dd"]);
        assert_eq!(wrap("a-very-long-word x", 5, 5), ["a-very-long-word", "x"]);
        assert_eq!(wrap("", 5, 5), [""]);
    }
}
