//! A small unified diff for `--dry-run` (unit files and specs are short,
//! so a plain LCS table is fast enough and needs no extra crate). Pure.

/// Unified diff of `old` -> `new` with 3 lines of context, or "" if equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a == b {
        return String::new();
    }
    // lcs[i][j] = LCS length of a[i..] and b[j..].
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    // Edit script: (tag, old index, new index).
    let mut ops = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((' ', i, j));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', i, j));
            i += 1;
        } else {
            ops.push(('+', i, j));
            j += 1;
        }
    }
    let mut out = format!("--- {old_name}\n+++ {new_name}\n");
    let ctx = 3;
    let mut k = 0;
    while k < ops.len() {
        if ops[k].0 == ' ' {
            k += 1;
            continue;
        }
        let start = k.saturating_sub(ctx);
        let mut end = k;
        // Extend the hunk while changes are within 2*ctx of each other.
        let mut last_change = k;
        while end < ops.len() {
            if ops[end].0 != ' ' {
                last_change = end;
            } else if end - last_change > 2 * ctx {
                break;
            }
            end += 1;
        }
        let end = (last_change + ctx + 1).min(ops.len());
        let hunk = &ops[start..end];
        let a_len = hunk.iter().filter(|o| o.0 != '+').count();
        let b_len = hunk.iter().filter(|o| o.0 != '-').count();
        let a_start = hunk[0].1 + usize::from(a_len > 0);
        let b_start = hunk[0].2 + usize::from(b_len > 0);
        out.push_str(&format!("@@ -{a_start},{a_len} +{b_start},{b_len} @@\n"));
        for &(tag, oi, nj) in hunk {
            let text = if tag == '+' { b[nj] } else { a[oi] };
            out.push_str(&format!("{tag}{text}\n"));
        }
        k = end;
    }
    out
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
}
