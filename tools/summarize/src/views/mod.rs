//! The decision views beyond the table (issue 24), computed once per
//! analysed table and shown by every format: the Pareto frontier
//! (`--pareto`), capacity under the SLO (`--slo`), the start-up cost of
//! each config (whenever swap or ready records are in the input).

pub(crate) mod capacity;
pub(crate) mod gpus;
pub(crate) mod pareto;
pub(crate) mod startup;

use serde_json::Value;

use crate::analysis::Analysis;
use crate::views::capacity::Capacity;
use crate::views::pareto::Pareto;
use crate::views::startup::Startup;

/// What the views found for one table.
#[derive(Debug, Clone, Default)]
pub struct Views {
    pub pareto: Option<Pareto>,
    pub capacity: Option<Vec<Capacity>>,
    pub startup: Startup,
}

/// The views of `a`; `texts` are the raw inputs (for swap and ready records).
pub fn of(a: &Analysis, want_pareto: bool, texts: &[&str]) -> Views {
    Views {
        pareto: want_pareto.then(|| pareto::of(a)),
        capacity: (!a.opts.slo.is_empty()).then(|| capacity::of(a)),
        startup: startup::collect(&a.model, texts),
    }
}

/// The views' sections of the text output.
pub fn text(a: &Analysis, v: &Views) -> String {
    let mut out = String::new();
    if let Some(p) = &v.pareto {
        out += &pareto::text(a, p);
    }
    if let Some(c) = &v.capacity {
        out += &capacity::text(a, c, &v.startup);
    } else if v.startup.any() {
        out += &startup::text(&a.model, &v.startup);
    }
    out
}

/// The same, as Markdown.
pub fn markdown(a: &Analysis, v: &Views) -> String {
    let mut out = String::new();
    if let Some(p) = &v.pareto {
        out += &pareto::markdown(a, p);
    }
    let rest = {
        let mut s = String::new();
        if let Some(c) = &v.capacity {
            s += &capacity::text(a, c, &v.startup);
        } else if v.startup.any() {
            s += &startup::text(&a.model, &v.startup);
        }
        s
    };
    if !rest.is_empty() {
        out += "\n```\n";
        out += rest.trim_start_matches('\n');
        out += "```\n";
    }
    out
}

/// Add the views to a summary record's `details`.
pub fn json_into(details: &mut Value, a: &Analysis, v: &Views) {
    if let Some(p) = &v.pareto {
        details["pareto"] = pareto::json(a, p);
    }
    if let Some(c) = &v.capacity {
        details["capacity"] = capacity::json(a, c);
    }
    if v.startup.any() {
        let rows: Vec<Value> = a
            .model
            .rows
            .iter()
            .enumerate()
            .map(|(r, row)| {
                serde_json::json!({
                    "label": row.label,
                    "time_to_ready_s": v.startup.ready_s[r],
                    "stop_s": v.startup.stop_s[r],
                    "starts": v.startup.rows[r].len(),
                })
            })
            .collect();
        details["startup"] = Value::Array(rows);
    }
}
