//! Start-up cost per config: how long the old server took to stop (the
//! swap record's `stop.duration_s`) and the new one to become ready (the
//! ready record's `time_to_ready_s`), medians over every start of that
//! config in the input. Read leniently from the raw records, like
//! `input`; a swap or ready record belongs to the row whose varying
//! values it has.

use serde_json::Value;
use sweepkit::records::{upstream_chain, SwapMethod};
use sweepkit::stats::median;

use crate::analysis::group::Model;
use crate::input::record_view::Head;
use crate::metric::lookup;
use crate::wording::num;

/// One start of a config.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Start {
    pub stop_s: Option<f64>,
    pub ready_s: Option<f64>,
    /// The ready record's outcome (`ready`, `timeout`, ...).
    pub outcome: Option<String>,
}

/// Per row: every start seen, and their medians.
#[derive(Debug, Clone, Default)]
pub struct Startup {
    pub rows: Vec<Vec<Start>>,
    pub stop_s: Vec<Option<f64>>,
    pub ready_s: Vec<Option<f64>>,
}

impl Startup {
    pub fn any(&self) -> bool {
        self.stop_s.iter().chain(&self.ready_s).any(Option::is_some)
    }

    /// `; ready in 95 s, stop 3.2 s` for a row, or empty.
    pub fn suffix(&self, r: usize) -> String {
        let t = self.text(r);
        if t.is_empty() {
            t
        } else {
            format!("; {t}")
        }
    }

    /// `ready in 95 s, stop 3.2 s` (empty when neither is known).
    pub fn text(&self, r: usize) -> String {
        let mut parts = Vec::new();
        if let Some(x) = self.ready_s.get(r).copied().flatten() {
            parts.push(format!("ready in {} s", num(x)));
        }
        if let Some(x) = self.stop_s.get(r).copied().flatten() {
            parts.push(format!("stop {} s", num(x)));
        }
        parts.join(", ")
    }
}

/// The row a record's config belongs to.
pub fn row_of(model: &Model, rec: &Value) -> Option<usize> {
    let cfg = rec.get("config")?.as_object()?;
    let val = |k: &str| {
        cfg.get(k)
            .filter(|v| !v.is_null())
            .map(|v| v.as_str().map_or_else(|| v.to_string(), String::from))
    };
    model.rows.iter().position(|row| {
        model
            .varying
            .iter()
            .zip(&row.key)
            .all(|(k, v)| val(k) == *v)
    })
}

/// Every swap and ready record of `texts` placed in `model`'s rows: those
/// written on their own line and those a bench or failure record carries
/// upstream (a sweep's results file holds only the latter), each record
/// once however many levels carry it. A schedule's starts are not a
/// static row's ([`schedule_starts`]).
pub fn collect(model: &Model, texts: &[&str]) -> Startup {
    let mut rows = vec![Vec::<Start>::new(); model.rows.len()];
    let mut seen = std::collections::HashSet::new();
    for text in texts {
        for line in text.lines() {
            let Ok(rec) = serde_json::from_str::<Value>(line.trim()) else {
                continue;
            };
            if crate::input::schedule_tag::server_of(&rec).is_some() {
                continue;
            }
            for (start, at) in starts_in(&rec, &mut seen) {
                if let Some(r) = row_of(model, at).or_else(|| row_of(model, &rec)) {
                    rows[r].push(start);
                }
            }
        }
    }
    let (stop_s, ready_s) = rows.iter().map(|r| medians(r)).unzip();
    Startup {
        stop_s,
        ready_s,
        rows,
    }
}

/// The medians of `starts`: stop, and time to ready over the starts that
/// became ready.
pub fn medians(starts: &[Start]) -> (Option<f64>, Option<f64>) {
    let stop: Vec<f64> = starts.iter().filter_map(|s| s.stop_s).collect();
    let ready: Vec<f64> = starts
        .iter()
        .filter(|s| s.outcome.as_deref().is_none_or(|o| o == "ready"))
        .filter_map(|s| s.ready_s)
        .collect();
    (median(&stop), median(&ready))
}

/// The starts of a schedule's row, from its bench records' upstream.
pub fn schedule_starts(records: &[&Value]) -> Vec<Start> {
    let mut seen = std::collections::HashSet::new();
    records
        .iter()
        .flat_map(|r| starts_in(r, &mut seen))
        .map(|(s, _)| s)
        .collect()
}

/// `rec` and each record up its `upstream` chain that is a swap or ready
/// record not seen before, as a start, with the record it came from.
fn starts_in<'a>(
    rec: &'a Value,
    seen: &mut std::collections::HashSet<String>,
) -> Vec<(Start, &'a Value)> {
    let mut out = Vec::new();
    for v in upstream_chain(rec) {
        let head = Head::of(v);
        let kind = head.record_type().unwrap_or("");
        if (kind != "swap" && kind != "ready") || head.method.0 == Some(SwapMethod::DryRun) {
            continue;
        }
        if !seen.insert(v.to_string()) {
            continue;
        }
        let start = if kind == "swap" {
            Start {
                stop_s: lookup(v, "stop.duration_s"),
                ..Start::default()
            }
        } else {
            Start {
                ready_s: lookup(v, "time_to_ready_s"),
                outcome: head.outcome.0.clone(),
                ..Start::default()
            }
        };
        out.push((start, v));
    }
    out
}

/// The text section listing each config's start-up cost.
pub fn text(model: &Model, s: &Startup) -> String {
    let mut out = String::from("\nstart-up cost (median over starts):\n");
    for (r, row) in model.rows.iter().enumerate() {
        let t = s.text(r);
        let t = if t.is_empty() {
            "not recorded".to_string()
        } else {
            t
        };
        out += &format!("  {}: {t}\n", row.label);
    }
    out
}
