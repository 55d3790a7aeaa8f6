//! Markdown for a pull request: the header as a list, the table with one
//! column per level (each cell's change, runs and marks in words), the
//! legend, the decisions, the failures, the figures that are not
//! per-level and the warnings.

use std::fmt::Write as _;

use crate::table::cell::CellText;
use crate::table::schedule_rows::{ScheduleRows, VsText};
use crate::table::{LegendWords, Table};

/// A schedule's three rows: its values (italic label: not a static
/// value), its change against the best static value and against the pick.
fn schedule_rows(s: &ScheduleRows) -> String {
    let mut out = format!("| _{}_ |", escape(&s.label));
    for c in &s.values {
        out += &cell(c);
    }
    out.push('\n');
    let vs = |label: &str, cells: &[VsText]| {
        let mut line = format!("| {} |", escape(label));
        for v in cells {
            match (v.verdict, v.shown_verdict()) {
                (None, _) => line += " - |",
                (_, Some(x)) => line += &format!(" {} ({}) |", escape(&v.change), x.word()),
                (_, None) => line += &format!(" {} |", escape(&v.change)),
            }
        }
        line + "\n"
    };
    out += &vs("↳ vs best static", &s.vs_best);
    out += &vs(&format!("↳ {}", s.vs_pick_label), &s.vs_pick);
    out
}

/// `|` would end a table cell.
fn escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// `*` would start emphasis outside the table.
fn star(s: &str) -> String {
    s.replace('*', "\\*")
}

/// One cell: the value (bold and starred when best, italic when it names
/// a failure) and its notes in parentheses.
fn cell(t: &CellText) -> String {
    let mut notes: Vec<String> = Vec::new();
    if !t.change.is_empty() {
        notes.push(t.change.clone());
    }
    if let Some(n) = t.runs {
        notes.push(format!("n={n}"));
    }
    if t.some_failed {
        notes.push("some runs failed".into());
    }
    if t.partial {
        notes.push("partial".into());
    }
    if t.aside {
        notes.push("not per-level, see below".into());
    }
    if let Some(f) = &t.few {
        notes.push(f.clone());
    }
    if t.misses_slo {
        notes.push("misses SLO".into());
    }
    let shown = if t.ci.is_empty() {
        t.value.clone()
    } else {
        format!("{} {}", t.value, t.ci)
    };
    let value = match (t.best, t.measured) {
        (true, _) => format!("**{shown}** \\*"),
        (false, true) => shown,
        (false, false) if t.value == "-" => "-".into(),
        (false, false) => format!("_{}_", t.value),
    };
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    format!(" {}{} |", escape(&value), escape(&notes))
}

/// The whole Markdown output of one table.
pub fn write(t: &Table) -> String {
    let mut out = String::new();
    if let Some(n) = &t.notice {
        let _ = writeln!(out, "> **{n}**\n");
    }
    for (k, v) in &t.header {
        let _ = writeln!(out, "- **{k}**: `{}`", v.replace('`', "'"));
    }
    out.push('\n');
    let mut head = format!("| {} |", escape(&t.key_names.join(" ")));
    let mut rule = String::from("|:---|");
    for l in &t.levels {
        head += &format!(" {l} |");
        rule += "---:|";
    }
    let _ = writeln!(out, "{head}\n{rule}");
    for row in &t.rows {
        let mut line = format!("| {} |", escape(&row.keys.join(" ")));
        for c in &row.cells {
            line += &cell(c);
        }
        let _ = writeln!(out, "{line}");
    }
    for s in &t.schedule {
        out += &schedule_rows(s);
    }
    let words = LegendWords {
        change: "(+N%)",
        partial: "partial",
        failed: "some runs failed",
        aside: "not per-level",
        few: "pN of K requests",
        verdicts: "with whether it is beyond noise",
    };
    let _ = writeln!(out, "\n{}\n", star(&t.legend(&words)));
    let rec = &t.recommendation;
    let _ = writeln!(out, "**Recommendation: {}**\n", star(&rec.action));
    for w in &rec.why {
        let _ = writeln!(out, "- {}", star(w));
    }
    out.push('\n');
    for (k, v) in &t.decisions {
        let _ = writeln!(out, "- **{k}**: {}", star(v));
    }
    for s in &t.schedule {
        let _ = writeln!(out, "\n**{}**\n", s.label);
        for l in s.plan.iter().chain(&s.lines) {
            let _ = writeln!(out, "- {}", star(l));
        }
    }
    let e = &t.explained;
    if !e.is_empty() {
        let _ = writeln!(out, "\n**What the server reported and measured**\n");
        for l in e.capacity.iter().chain(&e.notes).chain(&e.absent) {
            let _ = writeln!(out, "- {}", star(l));
        }
    }
    if !t.failures.is_empty() {
        let _ = writeln!(out, "\n**Failures**\n");
        for f in &t.failures {
            let _ = writeln!(out, "- {}", star(f));
        }
    }
    if !t.not_per_level.is_empty() {
        out += "\n**Not per-level** (left out of the table)\n\n";
        for l in &t.not_per_level {
            out += &format!("- {}\n", escape(l));
        }
    }
    if !t.warnings.is_empty() {
        let _ = writeln!(out, "\n**Warnings**\n");
        for w in &t.warnings {
            let _ = writeln!(out, "- {}", star(w));
        }
    }
    out
}
