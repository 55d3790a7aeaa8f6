//! One small exporter per output format (as hyperfine's `src/export/`
//! writes one result set with one exporter per markup): the comparison
//! table, which table.rs builds once, as aligned text for a terminal,
//! Markdown for pull requests and the HTML report's results table; and
//! the machine formats, the summary's rows as CSV and its one summary
//! record as JSON (summary.rs).

pub(crate) mod html;
pub(crate) mod markdown;
pub(crate) mod summary;
pub(crate) mod text;

#[cfg(test)]
mod tests {
    use crate::analysis::Analysis;
    use crate::table::Table;

    /// A bench record of config `n` at concurrency `c` with `tok_s` tokens/s.
    fn bench(n: &str, c: u64, tok_s: f64) -> String {
        serde_json::json!({
            "type": "bench", "schema": 1, "config": {"num-steps": n},
            "load": {"mode": "closed", "concurrency": c},
            "throughput": {"output_tok_per_s": tok_s},
        })
        .to_string()
    }

    fn analysis_of(lines: &[String]) -> Analysis {
        crate::analysis::analysis_of_lines(lines)
    }

    /// True when every word of `words` stands in `line`, in that order.
    fn in_order(line: &str, words: &[String]) -> bool {
        let mut rest = line;
        for w in words {
            match rest.find(w.as_str()) {
                Some(i) => rest = &rest[i + w.len()..],
                None => return false,
            }
        }
        true
    }

    #[test]
    fn text_and_markdown_show_the_same_cells_of_one_table() {
        let mut lines = Vec::new();
        for (n, base) in [("0", 1000.0), ("3", 1500.0), ("5", 1400.0)] {
            for (c, f) in [(1, 1.0), (16, 6.0)] {
                lines.push(bench(n, c, base * f));
            }
        }
        // A repeat: the cell's value is a median with an interval.
        lines.push(bench("3", 16, 9100.0));
        let a = analysis_of(&lines);
        let t = Table::of(&a);
        let text = super::text::write(&t);
        let md = super::markdown::write(&t);
        assert_eq!(t.rows.len(), 3);
        assert!(t
            .rows
            .iter()
            .any(|r| r.cells.iter().any(|c| c.runs == Some(2))));
        for row in &t.rows {
            let words: Vec<String> = row
                .cells
                .iter()
                .flat_map(|c| [c.value.clone(), c.ci.clone(), c.change.clone()])
                .filter(|w| !w.is_empty())
                .collect();
            assert!(!words.is_empty());
            let key = row.keys.join(" ");
            let text_line = text
                .lines()
                .find(|l| l.starts_with(&key) && l.contains(&row.cells[0].value))
                .unwrap_or_else(|| panic!("no text row for {key}:\n{text}"));
            let md_line = md
                .lines()
                .find(|l| l.starts_with(&format!("| {key} |")))
                .unwrap_or_else(|| panic!("no Markdown row for {key}:\n{md}"));
            assert!(in_order(text_line, &words), "{words:?} in {text_line}");
            assert!(in_order(md_line, &words), "{words:?} in {md_line}");
            // The best cell is marked in both.
            for c in row.cells.iter().filter(|c| c.best) {
                assert!(text_line.contains('*') && md_line.contains(&format!("**{}", c.value)));
            }
        }
        // The decisions are the table's, word for word, in both.
        for (k, v) in &t.decisions {
            assert!(text.contains(&format!("{k}: {v}")), "{k}: {v}");
            assert!(md.contains(&format!("- **{k}**: {}", v.replace('*', "\\*"))));
        }
    }
}
