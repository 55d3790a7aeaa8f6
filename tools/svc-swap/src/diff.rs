//! The unified diff `--dry-run` prints, from the `similar` crate. Pure.
//!
//! The format is GNU `diff -u`'s: a one-line range reads `-5` rather than
//! `-5,1`, and a last line without a newline is followed by
//! `\ No newline at end of file` (the hand-written LCS diff this replaced
//! wrote `-5,1` and ignored a missing final newline).

use similar::TextDiff;

/// Unified diff of `old` -> `new` with 3 lines of context, or "" if equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_name, new_name)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::unified;

    #[test]
    fn one_changed_line_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        let d = unified(old, new, "old", "new");
        assert_eq!(
            d,
            "--- old\n+++ new\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn new_file_and_equal_files() {
        assert_eq!(unified("x\n", "x\n", "a", "b"), "");
        let d = unified("", "[Service]\nExecStart=\n", "/dev/null", "b");
        assert!(
            d.ends_with("@@ -0,0 +1,2 @@\n+[Service]\n+ExecStart=\n"),
            "{d}"
        );
    }

    #[test]
    fn one_line_ranges_and_missing_final_newline_read_as_gnu_diff() {
        let d = unified("a\n", "b", "old", "new");
        assert_eq!(
            d,
            "--- old\n+++ new\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn far_apart_changes_make_two_hunks() {
        let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
        let new = old
            .replacen("2\n", "two\n", 1)
            .replace("19\n", "nineteen\n");
        let d = unified(&old, &new, "old", "new");
        assert_eq!(d.matches("\n@@ ").count(), 2, "{d}");
    }
}
