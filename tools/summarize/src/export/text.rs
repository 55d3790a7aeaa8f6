//! Aligned text for a terminal: the header lines, the table with one
//! value, change and mark column per level, the legend, the decisions,
//! the failures, the figures that are not per-level and the warnings; and
//! `--by workload`'s table of the best config per workload and level.

use std::fmt::Write as _;

use crate::analysis::schedule_cells::Verdict;
use crate::analysis::Analysis;
use crate::parts::Part;
use crate::table::cell::CellText;
use crate::table::schedule_rows::{ScheduleRows, VsText};
use crate::table::{LegendWords, Table};

/// The marks after a cell's change: best, misses the SLO, some runs
/// failed, partial, not per-level only, too few requests, runs.
fn mark(t: &CellText) -> String {
    let mut mark = String::from(if t.best { "*" } else { "" });
    if t.misses_slo {
        mark.push('x');
    }
    if t.some_failed {
        mark.push('!');
    }
    if t.partial {
        mark.push('~');
    }
    if t.aside {
        mark.push('#');
    }
    if t.few.is_some() {
        mark.push('^');
    }
    if let Some(n) = t.runs {
        mark += &format!(" n={n}");
    }
    mark
}

/// The table's cells as text, a header row first: key columns, then
/// value/chg/mark per level (blank where a row's one note stands).
fn grid(t: &Table) -> Vec<Vec<String>> {
    let mut head: Vec<String> = t.key_names.clone();
    for l in &t.levels {
        head.extend([l.clone(), "chg".into(), String::new()]);
    }
    let mut grid = vec![head];
    for row in &t.rows {
        let mut line = row.keys.clone();
        for c in &row.cells {
            if row.same_everywhere.is_some() {
                line.extend([String::new(), String::new(), String::new()]);
            } else {
                let value = if c.ci.is_empty() {
                    c.value.clone()
                } else {
                    format!("{} {}", c.value, c.ci)
                };
                line.extend([value, c.change.clone(), mark(c)]);
            }
        }
        grid.push(line);
    }
    for s in &t.schedule {
        grid.extend(schedule_lines(t, s));
    }
    grid
}

/// A first key cell and blanks for the other key columns.
fn keys(t: &Table, first: &str) -> Vec<String> {
    let mut k = vec![first.to_string()];
    k.resize(t.key_names.len(), String::new());
    k
}

/// A schedule's three table lines: its values, its change against the
/// best static value and against the pick (the change, then its verdict).
fn schedule_lines(t: &Table, s: &ScheduleRows) -> Vec<Vec<String>> {
    let mut values = keys(t, &s.label);
    for c in &s.values {
        let value = if c.ci.is_empty() {
            c.value.clone()
        } else {
            format!("{} {}", c.value, c.ci)
        };
        values.extend([value, c.change.clone(), mark(c)]);
    }
    let vs = |label: &str, cells: &[VsText]| {
        let mut line = keys(t, label);
        for v in cells {
            let mark = v.shown_verdict().map_or("", Verdict::mark);
            line.extend([v.change.clone(), mark.to_string(), String::new()]);
        }
        line
    };
    vec![
        values,
        vs("  vs best static", &s.vs_best),
        vs(&format!("  {}", s.vs_pick_label), &s.vs_pick),
    ]
}

/// The table lines, aligned: parameter values and marks left, numbers
/// right; a row's one note starts where its first level would.
fn table_lines(t: &Table, out: &mut String) {
    let grid = grid(t);
    let spans: Vec<Option<&String>> = std::iter::once(None)
        .chain(t.rows.iter().map(|r| r.same_everywhere.as_ref()))
        .chain(t.schedule.iter().flat_map(|_| [None, None, None]))
        .collect();
    let nk = t.key_names.len();
    let widths: Vec<usize> = (0..grid[0].len())
        .map(|i| grid.iter().map(|row| row[i].len()).max().unwrap_or(0))
        .collect();
    for (row, span) in grid.iter().zip(&spans) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if let (Some(note), true) = (span, i == nk) {
                line += "   ";
                line += note;
                break;
            }
            let w = widths[i];
            let sep = if i == 0 {
                ""
            } else if i < nk || (i - nk).is_multiple_of(3) {
                "   "
            } else {
                " "
            };
            line += sep;
            if i < nk || (i - nk) % 3 == 2 {
                line += &format!("{cell:<w$}");
            } else {
                line += &format!("{cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

/// Columns a wrapped line may use (a terminal's 80, less its last).
pub const WIDTH: usize = 79;

/// `text` wrapped between words to [`WIDTH`]: its first line indented two
/// spaces, the rest four.
pub fn indented(text: &str) -> String {
    let mut out = String::new();
    for (i, l) in sweepkit::wrap::wrap(text, WIDTH - 4, WIDTH - 4)
        .iter()
        .enumerate()
    {
        let pad = if i == 0 { "  " } else { "    " };
        let _ = writeln!(out, "{pad}{l}");
    }
    out
}

/// What the server reported and measured (explain/), when anything.
fn server_lines(e: &crate::explain::Explained) -> String {
    let mut out = String::new();
    if !e.capacity.is_empty() {
        out += "\nserver capacity (as reported once ready):\n";
        for l in &e.capacity {
            out += &indented(l);
        }
    }
    if !e.notes.is_empty() || e.absent.is_some() {
        out += "\nwhat the server measured:\n";
        for l in e.notes.iter().chain(&e.absent) {
            out += &indented(l);
        }
    }
    out
}

/// The whole text output of one table.
pub fn write(t: &Table) -> String {
    let mut out = String::new();
    if let Some(n) = &t.notice {
        let _ = writeln!(out, "{n}");
    }
    for (k, v) in &t.header {
        let _ = writeln!(out, "{:<10}{v}", format!("{k}:"));
    }
    out.push('\n');
    table_lines(t, &mut out);
    let words = LegendWords {
        change: "chg",
        partial: "~",
        failed: "!",
        aside: "#",
        few: "^",
        verdicts: "then = within noise, + / - better / worse beyond noise (blank: noise unknown)",
    };
    let _ = writeln!(out, "\n{}\n", t.legend(&words));
    let rec = &t.recommendation;
    let _ = writeln!(out, "recommendation: {}", rec.action);
    for w in &rec.why {
        out += &indented(w);
    }
    for (k, v) in &t.decisions {
        let _ = writeln!(out, "{k}: {v}");
    }
    for s in &t.schedule {
        let _ = writeln!(out, "\n{}:", s.label);
        for l in &s.plan {
            out += &indented(l);
        }
        for l in &s.lines {
            out += &indented(l);
        }
    }
    out += &server_lines(&t.explained);
    if !t.failures.is_empty() {
        let _ = writeln!(out, "\nfailures:");
        for f in &t.failures {
            out += &indented(f);
        }
    }
    if !t.not_per_level.is_empty() {
        out += "\nnot per-level (left out of the table):\n";
        for l in &t.not_per_level {
            out += &format!("  {l}\n");
        }
    }
    if !t.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &t.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

/// `--by workload`'s table: per workload (rows) and level (columns), the
/// config picked there, or `-` where none was.
pub(crate) fn by_workload(parts: &[Part]) -> String {
    let parts: Vec<(&String, &Analysis)> = parts
        .iter()
        .filter_map(|p| Some((p.workload.as_ref()?, &p.analysis)))
        .collect();
    let mut levels = Vec::new();
    for (_, a) in &parts {
        for l in &a.model.levels {
            if !levels.contains(l) {
                levels.push(*l);
            }
        }
    }
    levels.sort();
    let mut rows = vec![std::iter::once("workload".to_string())
        .chain(levels.iter().map(|l| l.label()))
        .collect::<Vec<_>>()];
    for (name, a) in &parts {
        let mut row = vec![name.to_string()];
        for l in &levels {
            let pick = a
                .model
                .levels
                .iter()
                .position(|x| x == l)
                .and_then(|c| a.best_per_level[c].map(|r| a.model.rows[r].label.clone()));
            row.push(pick.unwrap_or_else(|| "-".into()));
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    let metric = parts
        .first()
        .map_or("", |(_, a)| a.opts.metric.path.as_str());
    let mut out = format!("\nbest config per workload and level ({metric}):\n");
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
