//! Figures that are not the level's own (a speculative-decoding figure
//! whose record says `spec.source` `lifetime_average`, `gauge` or the older
//! `server_info`): they never fill a table cell, are never ranked, and are
//! listed apart with what they really are, in every format.

use serde_json::{json, Value};
use sweepkit::lines::SummaryAside;

use crate::analysis::group::{Aside, Model};
use crate::wording::num;

/// What a source means, in a few words.
pub fn meaning(source: &str) -> &'static str {
    match source {
        "lifetime_average" | "server_info" => {
            "SGLang's lifetime average since server start, warm-up and earlier levels included"
        }
        "gauge" => "SGLang's /metrics gauge, its last logging window",
        _ => "not the level's own figure",
    }
}

/// Every aside with its row and level: (row, col, aside).
fn all(m: &Model) -> impl Iterator<Item = (usize, usize, &Aside)> {
    m.cells.iter().enumerate().flat_map(|(r, row)| {
        row.iter()
            .enumerate()
            .flat_map(move |(c, cell)| cell.asides.iter().map(move |x| (r, c, x)))
    })
}

/// True when any record gave a figure that is not per-level.
pub fn any(m: &Model) -> bool {
    all(m).next().is_some()
}

/// The warning every format carries when there are asides.
pub fn warning(m: &Model, path: &str) -> Option<String> {
    let n = all(m).count();
    (n > 0).then(|| {
        format!(
            "{n} record(s) give {path} as a figure that is not the level's own (SGLang's \
             lifetime average or /metrics gauge): left out of the table and listed as \
             \"not per-level\"; run loadgen --endpoint generate for per-level acceptance"
        )
    })
}

/// One line per config and figure: `LABEL: VALUE at LEVELS (SOURCE:
/// meaning)`; a lifetime average repeats at every level, so its levels are
/// listed once.
pub fn lines(m: &Model) -> Vec<String> {
    let mut groups: Vec<(usize, String, String, Vec<String>)> = Vec::new();
    for (r, c, x) in all(m) {
        let (value, level) = (num(x.value), m.levels[c].label());
        match groups
            .iter_mut()
            .find(|g| g.0 == r && g.1 == x.source && g.2 == value)
        {
            Some(g) if g.3.contains(&level) => {}
            Some(g) => g.3.push(level),
            None => groups.push((r, x.source.clone(), value, vec![level])),
        }
    }
    groups
        .into_iter()
        .map(|(r, source, value, levels)| {
            format!(
                "{}: {value} at {} ({source}: {})",
                m.rows[r].label,
                levels.join(", "),
                meaning(&source)
            )
        })
        .collect()
}

/// The asides for the JSON summary's `details.not_per_level`.
pub fn json(m: &Model) -> Value {
    all(m)
        .map(|(r, c, x)| {
            json!({
                "label": m.rows[r].label,
                "level": m.levels[c].label(),
                "value": x.value,
                "source": x.source,
            })
        })
        .collect()
}

/// The CSV/JSON cell row's columns for cell (r, c): its first aside's
/// value and source, or nulls (every row has the columns when any has).
pub fn cell_columns(m: &Model, r: usize, c: usize) -> SummaryAside {
    let x = m.cells[r][c].asides.first();
    SummaryAside {
        not_per_level: x.map(|x| x.value),
        not_per_level_source: x.map(|x| x.source.clone()),
    }
}
