//! The search's answer (`sweep-plan next`): measure a value, or done with
//! why, the best and what it cost; and a finished search's skipped
//! records for the values it never tried (`--emit-skipped`).

use serde::Serialize;
use sweepkit::records::{Config, Record, SkippedRecord, SCHEMA_VERSION};

use super::decide::{Decision, RowData};
use super::space::Space;

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
    pub cost: Option<super::cost::Cost>,
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
            let cost = super::cost::cost(all, &space.key, space.values.len(), runs);
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
