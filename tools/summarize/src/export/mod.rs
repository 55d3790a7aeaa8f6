//! One small exporter per output format (as hyperfine's `src/export/`
//! writes one result set with one exporter per markup): the comparison
//! table, which table/ builds once, as aligned text for a terminal,
//! Markdown for pull requests and the HTML report's results table; and
//! the machine formats, the summary's rows as CSV and its one summary
//! record as JSON (summary.rs).

pub(crate) mod html;
pub(crate) mod markdown;
pub(crate) mod summary;
pub(crate) mod text;

use std::io::Write;

use anyhow::Context;
use serde_json::Value;
use sweepkit::exit::Exit;
use sweepkit::records::Record;
use sweepkit::redact;

use crate::cli::Format;
use crate::input::host_id::HostId;
use crate::parts::Part;
use crate::table::Table;
use crate::views::Views;

/// What the output shows beside the parts' tables.
pub(crate) struct Shown<'a> {
    /// The frontier (`--pareto`; the report computes it for itself).
    pub pareto: bool,
    /// `--by workload`'s table of the best config per workload and level.
    pub by_workload: bool,
    /// The adaptive sweep's notes (skipped, repeated cells), once, last.
    pub table_notes: &'a str,
    /// The --validate-on records.
    pub validations: &'a [Value],
}

/// Write every part in `format`: in text and Markdown each table under a
/// line naming its workload and host, in JSON one summary record per part
/// with its `host` and `workload`, in CSV one header and each row with a
/// `host` column. Tables quote config values: no secret in them
/// (`sweepkit::redact`).
pub(crate) fn write(
    parts: &[Part],
    shown: &Shown<'_>,
    format: Format,
    started: std::time::SystemTime,
    stdout: &mut impl Write,
) -> Result<(), Exit> {
    let validations = crate::validation::json(shown.validations);
    let mut csv_rows = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let a = &p.analysis;
        let views = Views {
            pareto: p.views.pareto.clone().filter(|_| shown.pareto),
            ..p.views.clone()
        };
        let new_workload = i == 0 || parts[i - 1].workload != p.workload;
        let workload = p.workload.as_ref().filter(|_| new_workload);
        let gap = if i > 0 { "\n" } else { "" };
        match format {
            Format::Text => {
                if let Some(w) = workload {
                    writeln!(stdout, "{gap}== workload {} ==", redact::text(w))?;
                }
                if let Some(h) = &p.host {
                    writeln!(stdout, "{gap}== host {} ==", redact::text(&title(h)))?;
                }
                let notes = if i + 1 == parts.len() {
                    shown.table_notes
                } else {
                    ""
                };
                let text = text::write(&Table::of(a)) + &crate::views::text(a, &views) + notes;
                stdout.write_all(redact::text(&text).as_bytes())?;
            }
            Format::Markdown => {
                if let Some(w) = workload {
                    writeln!(stdout, "\n## workload `{}`\n", redact::text(w))?;
                }
                if let Some(h) = &p.host {
                    writeln!(stdout, "{gap}### host `{}`\n", redact::text(&title(h)))?;
                }
                let md = markdown::write(&Table::of(a)) + &crate::views::markdown(a, &views);
                stdout.write_all(redact::text(&md).as_bytes())?;
            }
            Format::Csv => {
                let label = p.host.as_ref().map(|h| h.label.as_str());
                csv_rows.extend(summary::csv_rows(a, label)?);
            }
            Format::Json => {
                let mut rec = summary::summary(a, started);
                rec.host = p.host.as_ref().map(title);
                rec.workload = p.workload.clone();
                rec.validations = validations.clone();
                if let Some(d) = rec.details.as_mut() {
                    crate::views::json_into(d, a, &views);
                }
                sweepkit::io::write_record(stdout, &Record::Summary(rec))?;
            }
        }
    }
    if format == Format::Csv {
        sweepkit::flat::write_csv(&mut *stdout, &csv_rows).context("writing stdout")?;
    }
    if format == Format::Text && shown.by_workload {
        stdout.write_all(redact::text(&text::by_workload(parts)).as_bytes())?;
    }
    if matches!(format, Format::Text | Format::Markdown) && !shown.validations.is_empty() {
        let lines = crate::validation::text(shown.validations);
        stdout.write_all(redact::text(&format!("\n{lines}")).as_bytes())?;
    }
    Ok(())
}

/// A host as a table's heading names it: `label (key)`.
fn title(h: &HostId) -> String {
    format!("{} ({})", h.label, h.key)
}

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
