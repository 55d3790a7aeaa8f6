//! The HTML report's results table: one row per config, one cell per
//! level with its change and marks, the best cell marked, failures in
//! place.

use std::fmt::Write as _;

use crate::svg_chart::esc;
use crate::table::{CellText, Table};

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
        "<section id=\"table{sfx}\"><h2>Results: {}</h2>\n<table id=\"results{sfx}\"><thead><tr><th>config</th>",
        esc(&t.metric)
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
    out += "</tbody></table>\n";
    let legend = format!(
        "bold green: best at that level; grey: change against the baseline ({}); \
         ± H: half-width of the 95% interval (Student t over repeats; b: --until-stable batch means)",
        t.baseline
    );
    let _ = writeln!(out, "<p class=\"legend\">{}</p></section>", esc(&legend));
    out
}
