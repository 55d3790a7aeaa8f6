//! The HTML report's results table: one row per config, one cell per
//! level with its change and marks, the best cell marked, failures in
//! place.

use std::fmt::Write as _;

use crate::analysis::schedule_cells::Verdict;
use crate::plot::chart::esc;
use crate::table::cell::CellText;
use crate::table::schedule_rows::{ScheduleRows, VsText};
use crate::table::Table;

/// A schedule's rows: its values, then its change against the best static
/// value and against the pick, each with its verdict.
fn schedule_rows(s: &ScheduleRows) -> String {
    let mut out = format!("<tr class=\"schedule\"><th>{}</th>", esc(&s.label));
    for c in &s.values {
        out += &cell(c);
    }
    out += "</tr>\n";
    let vs = |label: &str, cells: &[VsText]| {
        let mut line = format!("<tr class=\"schedule-vs\"><th>{}</th>", esc(label));
        for v in cells {
            let word = v.shown_verdict().map_or("", Verdict::word);
            let _ = write!(
                line,
                "<td class=\"num\" title=\"against {}\">{}<br><span class=\"mark\">{}</span></td>",
                esc(&v.against),
                esc(&v.change),
                esc(word)
            );
        }
        line + "</tr>\n"
    };
    out += &vs("vs best static", &s.vs_best);
    out += &vs(&s.vs_pick_label, &s.vs_pick);
    out
}

/// One `<td>`: class by best or failed, value and interval, change, marks.
fn cell(t: &CellText) -> String {
    let class = if t.best {
        "num best"
    } else if !t.measured && t.value != "-" {
        "num failed"
    } else {
        "num"
    };
    let mut marks = Vec::new();
    if let Some(n) = t.runs {
        marks.push(format!("n={n}"));
    }
    if t.some_failed {
        marks.push("some runs failed".into());
    }
    if t.partial {
        marks.push("partial".into());
    }
    if let Some(f) = &t.few {
        marks.push(f.clone());
    }
    if t.misses_slo {
        marks.push("misses SLO".into());
    }
    let ci = if t.ci.is_empty() {
        String::new()
    } else {
        format!(" {}", t.ci)
    };
    let chg = if t.change.is_empty() {
        String::new()
    } else {
        format!("<span class=\"chg\">{}</span>", esc(&t.change))
    };
    let marks = if marks.is_empty() {
        String::new()
    } else {
        format!("<br><span class=\"mark\">{}</span>", esc(&marks.join(", ")))
    };
    format!(
        "<td class=\"{class}\">{}{}{chg}{marks}</td>",
        esc(&t.value),
        esc(&ci)
    )
}

/// The results section; `sfx` tells the ids of one host's tables apart.
pub fn write(t: &Table, sfx: &str) -> String {
    let mut out = format!(
        "<section id=\"table{sfx}\"><h2>Results: {}, {}</h2>\n<table id=\"results{sfx}\"><thead><tr><th>config</th>",
        esc(&crate::metric_name::human(&t.analysis().opts.metric.path)),
        t.analysis().opts.metric.better.word()
    );
    for l in &t.levels {
        let _ = write!(out, "<th>{}</th>", esc(l));
    }
    out += "</tr></thead><tbody>\n";
    for row in &t.rows {
        let _ = write!(out, "<tr><th>{}</th>", esc(&row.label));
        for c in &row.cells {
            out += &cell(c);
        }
        out += "</tr>\n";
    }
    for s in &t.schedule {
        out += &schedule_rows(s);
    }
    out += "</tbody></table>\n";
    // Only the marks that appear are explained.
    let noise = &t.analysis().noise;
    let mut legend = format!(
        "bold green: best at that level; grey: change against the baseline ({})",
        t.baseline
    );
    if noise.any_ci() {
        legend += "; ± H: half-width of the 95% interval (Student t over repeats)";
    }
    if noise.any_batch_means() {
        legend += "; H b: one run's --until-stable batch-means interval";
    }
    if !t.schedule.is_empty() {
        legend += "; schedule rows: the validated per-load schedule (never a static pick), \
                   its change against the best static value and the pick at each level, beyond noise or not";
    }
    let _ = writeln!(out, "<p class=\"legend\">{}</p>", esc(&legend));
    // The schedule's own section (report/verdict.rs) says the rest: its
    // depths, its file and a short note where it loses.
    out += "</section>\n";
    out
}
