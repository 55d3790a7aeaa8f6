//! `summarize --trend RUN...`: several dated runs of the same grid (one
//! results file each, e.g. one per server version), in the order they were
//! run: each config x level x metric across the runs, the change from the
//! first to the last with its interval and verdict, and with `--report`
//! one chart per config x metric with a series per level across the runs.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::load::{self, field_text, Side};
use super::report::Chart;
use super::verdict::{self, Row};

/// A run's name on the axis: its label, else its first day, else its file.
fn tick(side: &Side) -> String {
    let first = side.benches().next();
    first
        .and_then(|r| field_text(r, "label"))
        .or_else(|| {
            side.benches()
                .filter_map(|r| field_text(r, "provenance.started_at"))
                .min()
                .map(|t| t.chars().take(16).collect())
        })
        .unwrap_or_else(|| side.name.clone())
}

fn started(side: &Side) -> String {
    side.benches()
        .filter_map(|r| field_text(r, "provenance.started_at"))
        .min()
        .unwrap_or_default()
}

/// The runs in the order they were run (their first record's start).
pub fn order(mut sides: Vec<Side>) -> Vec<Side> {
    sides.sort_by_key(started);
    sides
}

/// The trend: each run's value per (config, level, metric), and the first
/// to last comparison rows.
pub struct Trend {
    pub ticks: Vec<String>,
    /// (config, level, metric) -> value per run.
    pub values: BTreeMap<(String, String, String), Vec<Option<f64>>>,
    /// In the order of the first-to-last comparison.
    pub rows: Vec<Row>,
}

pub fn of(sides: &[Side], metrics: &[String]) -> Result<Trend, sweepkit::exit::Exit> {
    let first = &sides[0];
    let last = &sides[sides.len() - 1];
    let m = load::matched(first, last)?;
    let rows: Vec<Row> = m
        .cells
        .iter()
        .flat_map(|c| metrics.iter().map(|x| verdict::row(first, last, c, x)))
        .collect();
    let mut values: BTreeMap<(String, String, String), Vec<Option<f64>>> = BTreeMap::new();
    for r in &rows {
        values.insert(
            (r.config.clone(), r.level.clone(), r.metric.clone()),
            vec![None; sides.len()],
        );
    }
    for (i, side) in sides.iter().enumerate().skip(1) {
        let Ok(mi) = load::matched(first, side) else {
            continue;
        };
        for c in &mi.cells {
            for x in metrics {
                let r = verdict::row(first, side, c, x);
                if let Some(v) =
                    values.get_mut(&(r.config.clone(), r.level.clone(), r.metric.clone()))
                {
                    v[0] = v[0].or(r.before);
                    v[i] = r.after;
                }
            }
        }
    }
    Ok(Trend {
        ticks: sides.iter().map(tick).collect(),
        values,
        rows,
    })
}

/// Per config x metric, a series per level across the runs.
pub fn charts(t: &Trend) -> Vec<Chart> {
    let mut out: Vec<Chart> = Vec::new();
    for r in &t.rows {
        let title = format!("{}: {} across runs", r.config, r.metric);
        let c = super::report::chart_for(&mut out, &title, || Chart {
            title: title.clone(),
            metric: r.metric.clone(),
            x_name: "run".into(),
            ticks: t.ticks.clone(),
            series: Vec::new(),
        });
        let ys = t.values[&(r.config.clone(), r.level.clone(), r.metric.clone())].clone();
        c.series.push((r.level.clone(), ys));
    }
    out
}

/// The text table: one column per run, then the first-to-last change.
pub fn text(t: &Trend) -> String {
    let mut head: Vec<String> = ["config", "level", "metric"].map(String::from).to_vec();
    head.extend(t.ticks.iter().cloned());
    head.extend(["change", "95% interval", "verdict"].map(String::from));
    let mut body = vec![head];
    for r in &t.rows {
        let c = super::render::cells(r);
        let mut line = vec![c[0].clone(), c[1].clone(), c[2].clone()];
        let vals = &t.values[&(r.config.clone(), r.level.clone(), r.metric.clone())];
        line.extend(
            vals.iter()
                .map(|v| v.map_or_else(|| "-".into(), super::render::num)),
        );
        line.extend([c[5].clone(), c[6].clone(), c[7].clone()]);
        body.push(line);
    }
    let cols = body[0].len();
    let w: Vec<usize> = (0..cols)
        .map(|i| body.iter().map(|l| l[i].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!("trend over {} runs, first to last\n\n", t.ticks.len());
    for l in &body {
        let cells: Vec<String> = l
            .iter()
            .enumerate()
            .map(|(i, x)| {
                if i >= 3 && i + 1 < cols {
                    format!("{x:>w$}", w = w[i])
                } else {
                    format!("{x:<w$}", w = w[i])
                }
            })
            .collect();
        out += cells.join("  ").trim_end();
        out.push('\n');
    }
    out
}

pub fn json(t: &Trend) -> Value {
    let rows: Vec<Value> = t
        .rows
        .iter()
        .map(|r| {
            let mut v = super::render::row_json(r);
            v["values"] = json!(t.values[&(r.config.clone(), r.level.clone(), r.metric.clone())]);
            v
        })
        .collect();
    json!({"type": "trend", "runs": t.ticks, "rows": rows})
}
