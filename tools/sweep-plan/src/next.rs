//! `sweep-plan next`: the adaptive sweep's question "what next?", answered
//! from the results file and summarize's scores of it (its summary record,
//! `details.cells` and `details.weighted_scores`: summarize summarizes,
//! sweep-plan decides), and `--emit-skipped`: the skipped records of a
//! finished search.

use std::collections::BTreeMap;

use anyhow::anyhow;
use serde::Serialize;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::lines::SummaryRow;
use sweepkit::records::{Config, Record, SkippedRecord, SCHEMA_VERSION};
use sweepkit::report::Exit;

use crate::adapt::{self, Better, Decision, Knobs, RowData};
use crate::results::{self, Line, State};

/// The swept parameter and its values, in ascending numeric order.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub key: String,
    /// As given (the text a config carries).
    pub values: Vec<String>,
}

impl Space {
    /// Order `values` numerically; a value that is not a number has no
    /// order to find a plateau along (exit 52).
    pub fn ordered(key: &str, values: &[String]) -> Result<Space, Exit> {
        let key = key.trim_start_matches('-').to_string();
        for v in values {
            if v.parse::<f64>().map_or(true, |x| !x.is_finite()) {
                return Err(Exit::new(
                    exit::NEXT_NOT_NUMERIC,
                    anyhow!(
                        "--param {key}: value '{v}' is not a number; the adaptive search needs an ordered numeric parameter (use the grid)"
                    ),
                ));
            }
        }
        let num = |v: &String| v.parse::<f64>().unwrap_or(0.0);
        let mut values = values.to_vec();
        values.sort_by(|a, b| num(a).total_cmp(&num(b)));
        values.dedup();
        Ok(Space { key, values })
    }

    fn index(&self, v: &str) -> Option<usize> {
        let x = v.parse::<f64>().ok();
        self.values
            .iter()
            .position(|s| s == v || (x.is_some() && s.parse::<f64>().ok() == x))
    }

    pub fn label(&self, i: usize) -> String {
        format!("{}={}", self.key, self.values[i])
    }
}

/// Refuse a results file that is not this sweep's: no record at all (exit
/// 50), or a record whose config lacks the key or differs in another
/// parameter (exit 51).
pub fn check_input(space: &Space, name: &str, lines: &[Line]) -> Result<(), Exit> {
    // value -> (where first seen, the other parameters)
    let mut others: BTreeMap<String, (String, BTreeMap<String, Value>)> = BTreeMap::new();
    for l in lines {
        if !matches!(l.tag.as_str(), "bench" | "failure" | "skipped") {
            continue;
        }
        let Some(cfg) = l.raw.get("config").and_then(Value::as_object) else {
            continue;
        };
        if cfg.is_empty() {
            continue; // a failure before any config was known
        }
        let at = format!("{name}: line {}", l.line);
        let Some(v) = cfg.get(&space.key) else {
            let keys: Vec<&str> = cfg.keys().map(String::as_str).collect();
            return Err(mixed(format!(
                "{at}: a {} record for {} has no {}: records of another sweep",
                l.tag,
                keys.join(","),
                space.key
            )));
        };
        let rest: BTreeMap<String, Value> = cfg
            .iter()
            .filter(|(k, _)| **k != space.key)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // Other keys may follow from the swept one (SGLang's algorithm is
        // set exactly when steps > 0), but one value with two sets of other
        // parameters is a grid over more than one.
        let v = v.to_string();
        match others.get(&v) {
            None => {
                others.insert(v, (at, rest));
            }
            Some((first, o)) if *o != rest => {
                return Err(mixed(format!(
                    "{at}: {}={v} again with other parameters than at {first}: more than one parameter varies; the adaptive search walks one",
                    space.key
                )))
            }
            Some(_) => {}
        }
    }
    if lines.is_empty() {
        return Err(Exit::new(
            exit::NEXT_EMPTY,
            anyhow!(
                "{name}: no records (sweep writes an origin record first; give its results file)"
            ),
        ));
    }
    Ok(())
}

fn mixed(msg: String) -> Exit {
    Exit::new(exit::NEXT_MIXED, anyhow!(msg))
}

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

/// The answer, one object: measure a value, or the search is done.
#[derive(Debug, Clone, Serialize)]
pub struct Answer {
    /// `next`
    #[serde(rename = "type")]
    pub tag: &'static str,
    /// `measure` or `done`.
    pub action: &'static str,
    /// The value to measure now (the first of `measure`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `value`'s config in the grid, numbered as `configs` numbers them
    /// (set by the caller, which knows the grid's order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub index: Option<usize>,
    /// Every value this round asks for, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub measure: Vec<String>,
    pub why: String,
    /// Done: why the exploration stopped (`plateau`, `peaked`, `exhausted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    /// Done: the best value's `KEY=VALUE` (absent: none measured).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best: Option<String>,
    /// Done: the values never measured.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// Done: how many values were skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<usize>,
    /// Done: what the search spent and what the full grid would have.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::cost::Cost>,
    /// Done: `cost` as one line of `KEY=VALUE` words, for messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_line: Option<String>,
}

/// The decision as an [`Answer`].
pub fn answer(space: &Space, d: &Decision, all: &str, rows: &[RowData]) -> Answer {
    let mut a = Answer {
        tag: "next",
        action: "measure",
        value: None,
        index: None,
        measure: Vec::new(),
        why: String::new(),
        rule: None,
        best: None,
        skip: Vec::new(),
        skipped: None,
        cost: None,
        cost_line: None,
    };
    match d {
        Decision::Measure { rows, why } => {
            a.measure = rows.iter().map(|&i| space.values[i].clone()).collect();
            a.value = a.measure.first().cloned();
            a.why = why.clone();
        }
        Decision::Done {
            best,
            skip,
            rule,
            stop_why,
            repeat_why,
        } => {
            let runs = best.map_or(1, |b| rows[b].runs);
            let cost = crate::cost::cost(all, &space.key, space.values.len(), runs);
            a.action = "done";
            a.why = format!("{stop_why}; {repeat_why}");
            a.rule = Some(rule.word());
            a.best = best.map(|b| space.label(b));
            a.skip = skip.iter().map(|&i| space.values[i].clone()).collect();
            a.skipped = Some(skip.len());
            a.cost_line = Some(cost.words());
            a.cost = Some(cost);
        }
    }
    a
}

/// Skipped records for a finished search's untried values that the file
/// does not hold yet (so a resumed sweep appends none twice).
pub fn skipped_records(
    space: &Space,
    d: &Decision,
    all: &str,
    started: std::time::SystemTime,
) -> Vec<Record> {
    let Decision::Done {
        best,
        skip,
        rule,
        stop_why,
        ..
    } = d
    else {
        return Vec::new();
    };
    let have: Vec<usize> = all
        .lines()
        .filter_map(|l| match serde_json::from_str::<Record>(l) {
            Ok(Record::Skipped(s)) => s.config.get(&space.key).and_then(|v| space.index(v)),
            _ => None,
        })
        .collect();
    let mut best_config = Config::new();
    if let Some(b) = best {
        best_config.insert(space.key.clone(), space.values[*b].clone());
    }
    skip.iter()
        .filter(|i| !have.contains(i))
        .map(|&i| {
            Record::Skipped(SkippedRecord {
                schema: SCHEMA_VERSION,
                config: Config::from([(space.key.clone(), space.values[i].clone())]),
                provenance: sweepkit::Provenance::new("sweep-plan", started),
                rule: rule.word().into(),
                reason: stop_why.clone(),
                best_config: best_config.clone(),
            })
        })
        .collect()
}

/// The knobs: the search's own flags, and the metric's direction, the
/// tolerance and the plateau threshold summarize decided with.
pub fn knobs(k: &crate::cli::NextArgs, s: &Scores) -> Knobs {
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
    k: &crate::cli::NextArgs,
) -> (Decision, Vec<RowData>) {
    let rows = rows(space, lines, scores);
    let d = adapt::decide(&rows, &knobs(k, scores), &|i| space.label(i));
    (d, rows)
}
