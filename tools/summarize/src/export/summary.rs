//! The machine formats: CSV (one row per config and level, written by
//! `sweepkit::flat`, never by hand) and JSON (one `summary` record whose
//! `best_config` is what `svc-swap --apply-from -` applies).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use sweepkit::lines::{SummaryCell, SummaryRow};
use sweepkit::records::{Config, Provenance, SummaryRecord, SCHEMA_VERSION};
use sweepkit::stats;

use crate::analysis::Analysis;
use crate::input::level::trim_float;
use crate::table::cell_text;
use crate::wording::failure_label;

/// Long-format rows: one per (config, level) cell.
fn cell_rows(a: &Analysis) -> Vec<SummaryRow> {
    let m = &a.model;
    let mut rows = Vec::new();
    for r in 0..m.rows.len() {
        for c in 0..m.levels.len() {
            let config = m
                .varying
                .iter()
                .cloned()
                .zip(m.rows[r].key.clone())
                .collect();
            let failures = m.failures_at(r, c);
            let labels: Vec<String> = failures.iter().map(|f| failure_label(f)).collect();
            rows.push(SummaryRow {
                config,
                label: m.rows[r].label.clone(),
                level: m.levels[c].label(),
                metric: a.opts.metric.path.clone(),
                runs: a.grid[r][c].as_ref().map_or(0, |s| s.n as u64),
                measured: measured_cell(a, r, c),
                failure: labels.join("/"),
                // Not the level's own figure: beside the cell, never in it.
                aside: crate::analysis::not_per_level::any(m)
                    .then(|| crate::analysis::not_per_level::cell_columns(m, r, c)),
                simulated: None,
                host: None,
            });
        }
    }
    rows
}

/// The figures of a measured cell (`None`: nothing measured there).
fn measured_cell(a: &Analysis, r: usize, c: usize) -> Option<SummaryCell> {
    let s = a.grid[r][c].as_ref()?;
    let t = cell_text(a, r, c);
    let change = a.grid[a.baseline][c]
        .as_ref()
        .and_then(|b| stats::change_pct(s.median, b.median));
    Some(SummaryCell {
        median: s.median,
        score: s.score,
        spread: s.spread,
        change_pct: change.map(round2),
        best: t.best,
        partial: t.partial,
        slo_ok: (!a.opts.slo.is_empty()).then_some(s.slo_ok),
    })
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The CSV's rows in long form (documented in sweepkit-records(5)), before
/// writing (per-host output sets each row's `host`).
pub fn csv_rows(a: &Analysis, host: Option<&str>) -> anyhow::Result<Vec<serde_json::Value>> {
    let sim = a.model.simulated_records > 0;
    let rows = cell_rows(a)
        .into_iter()
        .chain(crate::schedule::emit::csv_rows(a))
        .map(|r| SummaryRow {
            simulated: Some(sim),
            host: host.map(str::to_string),
            ..r
        })
        .map(|r| serde_json::to_value(&r))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The decisions as one `summary` record.
pub fn summary(a: &Analysis, started: std::time::SystemTime) -> SummaryRecord {
    let m = &a.model;
    let best_config: Config = a
        .overall
        .as_ref()
        .map(|o| m.rows[o.row].config.clone())
        .unwrap_or_default();
    let best_per_level: BTreeMap<String, Config> = a
        .best_per_level
        .iter()
        .enumerate()
        .filter_map(|(c, w)| w.map(|r| (m.levels[c].label(), m.rows[r].config.clone())))
        .collect();
    let plateau_by_level: Map<String, Value> = a
        .plateau
        .iter()
        .flat_map(|p| {
            p.per_level.iter().map(move |(c, at)| {
                let pi = m.varying.iter().position(|k| *k == p.param);
                let v = at.and_then(|r| pi.map(|i| m.rows[r].key[i].clone()));
                (m.levels[*c].label(), json!(v.flatten()))
            })
        })
        .collect();
    let overall = a.overall.as_ref().map(|o| {
        json!({
            "label": m.rows[o.row].label,
            "level": o.col.map(|c| m.levels[c].label()),
            "score": o.score,
            "text": o.text,
        })
    });
    let weights: Map<String, Value> = a
        .opts
        .weights
        .iter()
        .map(|(l, w)| (l.label(), json!(w)))
        .collect();
    let details = json!({
        "better": if a.opts.metric.better == crate::metric::Better::Higher { "higher" } else { "lower" },
        "baseline": {
            "label": m.rows[a.baseline].label,
            "config": m.rows[a.baseline].config,
            "why": a.baseline_why,
        },
        "context": m.context,
        "varying": m.varying,
        "levels": m.levels.iter().map(|l| l.label()).collect::<Vec<_>>(),
        "overall": overall,
        "weighted_scores": weighted(a),
        "plateau_param": a.plateau.as_ref().map(|p| p.param.clone()),
        "plateau_by_level": plateau_by_level,
        "slo": a.opts.slo.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
        "weights": weights,
        "tolerance_pct": trim_float(a.opts.tolerance * 100.0),
        "plateau_threshold_pct": trim_float(a.opts.plateau_threshold * 100.0),
        "records": {
            "bench": m.bench_records,
            "failure": m.failure_records,
            "simulated": m.simulated_records,
        },
        "cells": cell_rows(a),
    });
    let mut details = details;
    if a.noise.any_ci() || a.noise.any_few() {
        details["noise"] = noise_json(a);
    }
    if crate::analysis::not_per_level::any(m) {
        details["not_per_level"] = crate::analysis::not_per_level::json(m);
    }
    if !a.schedule.is_empty() {
        details["schedule"] = crate::schedule::emit::json(a);
    }
    SummaryRecord {
        schema: SCHEMA_VERSION,
        provenance: Provenance::new("summarize", started),
        metric: a.opts.metric.path.clone(),
        objective: a.opts.objective.name().to_string(),
        best_config,
        // Varying keys the winner does not set: a tool applying best_config
        // must remove these flags, not keep their current values.
        best_unset: a
            .overall
            .as_ref()
            .map(|o| {
                m.varying
                    .iter()
                    .zip(&m.rows[o.row].key)
                    .filter(|(_, v)| v.is_none())
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default(),
        best_per_level,
        plateau: a.plateau.as_ref().map(|p| p.text.clone()),
        warnings: a.warnings.clone(),
        simulated: m.simulated_records > 0,
        details: Some(details),
        host: None,
        workload: None,
        validations: Vec::new(),
    }
}

fn weighted(a: &Analysis) -> Value {
    if a.weighted.is_empty() {
        return Value::Null;
    }
    let map: Map<String, Value> = a
        .weighted
        .iter()
        .enumerate()
        .map(|(r, s)| {
            (
                a.model.rows[r].label.clone(),
                json!(s.map(|x| (x * 1e4).round() / 1e4)),
            )
        })
        .collect();
    Value::Object(map)
}

/// Each cell's 95% interval and few-requests flag, for `details.noise`.
fn noise_json(a: &Analysis) -> Value {
    let m = &a.model;
    let mut cells = Vec::new();
    for r in 0..m.rows.len() {
        for c in 0..m.levels.len() {
            let ci = a.noise.ci[r][c];
            let few = &a.noise.few[r][c];
            if ci.is_none() && few.is_none() {
                continue;
            }
            cells.push(json!({
                "label": m.rows[r].label,
                "level": m.levels[c].label(),
                "centre": ci.map(|i| i.centre),
                "half_width": ci.map(|i| i.half_width),
                "n": ci.map(|i| i.n),
                "method": ci.map(|i| match i.method {
                    crate::analysis::noise::Method::TRepeats => "t_repeats",
                    crate::analysis::noise::Method::BatchMeans => "batch_means",
                }),
                "few_requests": few.as_ref().map(|f| json!({
                    "percentile": f.pct, "count": f.count, "need": f.need,
                })),
            }));
        }
    }
    json!({ "level": crate::analysis::interval::LEVEL, "cells": cells })
}
