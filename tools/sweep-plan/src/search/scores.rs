//! summarize's scores of a results file, as the search reads them (its
//! summary record's `details.cells` and `details.weighted_scores`:
//! summarize summarizes, sweep-plan decides), and the decision they give
//! with the search's knobs.

use std::collections::BTreeMap;

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::lines::SummaryRow;
use sweepkit::records::Config;

use sweepkit::pick::Better;

use super::decide::{self, Decision, Knobs, RowData};
use super::knobs::SearchArgs;
use super::space::Space;
use crate::results::{self, Line, State};

/// summarize's scores, as its summary record gives them.
#[derive(Debug, Clone, Default)]
pub struct Scores {
    pub better: Option<Better>,
    /// `details.tolerance_pct` and `details.plateau_threshold_pct`, as
    /// fractions.
    pub tolerance: Option<f64>,
    pub threshold: Option<f64>,
    context: Config,
    levels: Vec<String>,
    cells: Vec<SummaryRow>,
    weighted: BTreeMap<String, Option<f64>>,
}

/// Read the first summary record of `text` (summarize --format json);
/// no record: nothing measured yet.
pub fn read_scores(text: &str) -> Result<Scores, Exit> {
    let bad = |e: String| Exit::new(exit::BAD_INPUT, anyhow!("--summary: {e}"));
    let Some(rec) = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("type").and_then(Value::as_str) == Some("summary"))
    else {
        return Ok(Scores::default());
    };
    let d = rec.get("details").cloned().unwrap_or(Value::Null);
    let pct = |k: &str| -> Option<f64> {
        let v = d.get(k)?;
        let x = v.as_f64().or_else(|| v.as_str()?.parse().ok())?;
        Some(x / 100.0)
    };
    fn from<T: serde::de::DeserializeOwned>(d: &Value, k: &str) -> serde_json::Result<T> {
        serde_json::from_value(d.get(k).cloned().unwrap_or_default())
    }
    Ok(Scores {
        better: match d.get("better").and_then(Value::as_str) {
            Some("lower") => Some(Better::Lower),
            Some(_) => Some(Better::Higher),
            None => None,
        },
        tolerance: pct("tolerance_pct"),
        threshold: pct("plateau_threshold_pct"),
        context: from(&d, "context").unwrap_or_default(),
        levels: from(&d, "levels").map_err(|e| bad(format!("details.levels: {e}")))?,
        cells: from(&d, "cells").map_err(|e| bad(format!("details.cells: {e}")))?,
        weighted: from(&d, "weighted_scores").unwrap_or_default(),
    })
}

/// What the file and the scores say about each value of the space.
pub fn rows(space: &Space, lines: &[Line], s: &Scores) -> Vec<RowData> {
    let mut rows = vec![RowData::default(); space.values.len()];
    for (i, row) in rows.iter_mut().enumerate() {
        let v = &space.values[i];
        let st = results::state_of(lines, |c| {
            c.get(&space.key).and_then(|x| space.index(x)) == space.index(v)
        });
        row.done = st.is_done();
        row.failed = st == State::Failed;
    }
    // Cells by row label, in the table's row order.
    let mut labels: Vec<&str> = Vec::new();
    for c in &s.cells {
        if !labels.contains(&c.label.as_str()) {
            labels.push(&c.label);
        }
    }
    for label in labels {
        let cells: Vec<&SummaryRow> = s.cells.iter().filter(|c| c.label == label).collect();
        // A key equal in every row is context, not a column.
        let value = match cells[0].config.get(&space.key) {
            Some(v) => v.clone(),
            None => s.context.get(&space.key).cloned(),
        };
        let Some(i) = value.and_then(|v| space.index(&v)) else {
            continue;
        };
        let d = &mut rows[i];
        d.medians = s
            .levels
            .iter()
            .map(|l| {
                let c = cells.iter().find(|c| &c.level == l)?;
                c.measured.as_ref().map(|m| m.median)
            })
            .collect();
        d.failed &= d.medians.iter().all(Option::is_none);
        d.runs = cells.iter().map(|c| c.runs as usize).max().unwrap_or(0);
        // The same weighted scores as summarize's own pick (conservative,
        // each cell's noise moderated towards its level's), so the
        // search's best is the pick sweep applies.
        d.weighted = s.weighted.get(label).copied().flatten();
        let mut rel: Vec<f64> = cells
            .iter()
            .filter(|c| c.runs >= 2)
            .filter_map(|c| c.measured.as_ref())
            .filter(|m| m.median != 0.0)
            .map(|m| ((m.median - m.score) / m.median).abs())
            .collect();
        rel.sort_by(f64::total_cmp);
        d.sigma_rel = (!rel.is_empty()).then(|| rel[rel.len() / 2]);
    }
    rows
}

/// The knobs: the search's own flags, and the metric's direction, the
/// tolerance and the plateau threshold summarize decided with.
pub fn knobs(k: &SearchArgs, s: &Scores) -> Knobs {
    Knobs {
        patience: k.patience,
        threshold: s.threshold.unwrap_or(0.02),
        margin: k.noise_margin,
        repeat_budget: k.repeat_budget,
        tolerance: s.tolerance.unwrap_or(0.01),
        better: s.better.unwrap_or(Better::Higher),
    }
}

/// The decision for the results file `all`, given summarize's `scores`.
pub fn decide(
    space: &Space,
    lines: &[Line],
    scores: &Scores,
    k: &SearchArgs,
) -> (Decision, Vec<RowData>) {
    let rows = rows(space, lines, scores);
    let d = decide::decide(&rows, &knobs(k, scores), &|i| space.label(i));
    (d, rows)
}
