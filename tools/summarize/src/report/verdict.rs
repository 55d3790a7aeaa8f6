//! The report's verdict (one recommendation in words, and why) and the
//! schedule's own section: its depth per batch range, the config file's
//! real path, the flags, whether it won and, per level where it loses or
//! runs into the server's cap, why.

use std::fmt::Write as _;

use crate::analysis::schedule_cells::Row;
use crate::analysis::Analysis;
use crate::input::schedule_plan::range_text;
use crate::plot::chart::esc;
use crate::table::Table;

/// The verdict block: the action, its reasons, the pick line and plateau.
pub fn verdict(a: &Analysis, t: &Table, sfx: &str) -> String {
    let rec = &t.recommendation;
    let mut out = format!(
        "<section id=\"verdict{sfx}\"><h2>Verdict</h2>\n<p id=\"action{sfx}\" class=\"action\">{}</p>\n<ul id=\"why{sfx}\">\n",
        esc(&capital(&rec.action))
    );
    for w in &rec.why {
        let _ = writeln!(out, "<li>{}</li>", esc(w));
    }
    out += "</ul><dl>\n";
    let best = t
        .pick
        .clone()
        .unwrap_or_else(|| "none: no config was picked (see the warnings)".to_string());
    let _ = writeln!(out, "<dt>pick</dt><dd id=\"pick{sfx}\">{}</dd>", esc(&best));
    if let Some(p) = &a.plateau {
        let _ = writeln!(out, "<dt>plateau</dt><dd>{}</dd>", esc(&p.text));
    }
    out += "</dl></section>\n";
    out
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next().map_or_else(String::new, |f| {
        f.to_uppercase().collect::<String>() + c.as_str()
    })
}

/// Each validated schedule: the table of batch ranges and depths, where
/// its config is, its decision and the notes per level.
pub fn schedules(a: &Analysis, sfx: &str) -> String {
    let mut out = String::new();
    for (i, s) in a.schedule.iter().enumerate() {
        let id = if i == 0 {
            format!("schedule{sfx}")
        } else {
            format!("schedule{sfx}-{i}")
        };
        out += &one(a, s, &id);
    }
    out
}

fn one(a: &Analysis, s: &Row, id: &str) -> String {
    let mut out = format!(
        "<section id=\"{id}\"><h2>The {} schedule</h2>\n<p class=\"decision\">{}</p>\n",
        esc(&s.label),
        esc(&s.decision)
    );
    if let Some(p) = &s.plan {
        out +=
            "<table class=\"schedule-plan\"><thead><tr><th>batch sizes (requests in a step)</th>\
                <th>depth</th><th>chosen at</th></tr></thead><tbody>\n";
        for r in &p.ranges {
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&range_text(r)),
                r.k,
                esc(&r.level)
            );
        }
        let _ = writeln!(
            out,
            "</tbody></table>\n<dl><dt>config file</dt><dd><code class=\"config-path\">{}</code></dd>\
             <dt>flags</dt><dd><code>{}</code></dd><dt>max batch</dt><dd>{}, from {}</dd></dl>",
            esc(&p.where_text()),
            esc(&p.flags.join(" ")),
            p.max_batch,
            esc(&p.max_batch_source)
        );
    }
    let notes: Vec<(String, &String)> = s
        .cells
        .iter()
        .enumerate()
        .flat_map(|(c, cell)| {
            let l = a.model.levels[c].label();
            [&cell.memory_note, &cell.cap_note]
                .into_iter()
                .flatten()
                .map(move |n| (l.clone(), n))
        })
        .collect();
    if !notes.is_empty() {
        out += "<h3>Why it loses where it does</h3><ul class=\"schedule-notes\">\n";
        for (l, n) in notes {
            let _ = writeln!(out, "<li><b>{}</b>: {}</li>", esc(&l), esc(n));
        }
        out += "</ul>\n";
    }
    out + "</section>\n"
}
