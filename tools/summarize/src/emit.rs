//! The machine formats: CSV (one row per config and level, written by
//! `sweepkit::flat`, never by hand) and JSON (one `summary` record whose
//! `best_config` is what `svc-swap --apply-from -` applies).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use sweepkit::records::{Config, Provenance, SummaryRecord, SCHEMA_VERSION};

use crate::analysis::Analysis;
use crate::level::trim_float;
use crate::render::{cell_text, failure_label};
use crate::stats;

fn objective_name(a: &Analysis) -> &'static str {
    match a.opts.objective {
        crate::Objective::Max => "max",
        crate::Objective::Slo => "slo",
        crate::Objective::Weighted => "weighted",
    }
}

/// Long-format rows: one per (config, level) cell.
fn cell_rows(a: &Analysis) -> Vec<Value> {
    let m = &a.model;
    let mut rows = Vec::new();
    for r in 0..m.rows.len() {
        for c in 0..m.levels.len() {
            let mut cfg = Map::new();
            for (k, v) in m.varying.iter().zip(&m.rows[r].key) {
                cfg.insert(k.clone(), json!(v));
            }
            let t = cell_text(a, r, c);
            let mut row = json!({
                "config": cfg,
                "label": m.rows[r].label,
                "level": m.levels[c].label(),
                "metric": a.opts.metric.path,
            });
            let o = row.as_object_mut().expect("object");
            let failures = m.failures_at(r, c);
            match &a.grid[r][c] {
                Some(s) => {
                    let change = a.grid[a.baseline][c]
                        .as_ref()
                        .and_then(|b| stats::change_pct(s.median, b.median));
                    o.insert("runs".into(), json!(s.n));
                    o.insert("median".into(), json!(s.median));
                    o.insert("score".into(), json!(s.score));
                    o.insert("spread".into(), json!(s.spread));
                    o.insert("change_pct".into(), json!(change.map(round2)));
                    o.insert("best".into(), json!(t.best));
                    // Only when set: complete results keep their columns.
                    if t.partial {
                        o.insert("partial".into(), json!(true));
                    }
                    if !a.opts.slo.is_empty() {
                        o.insert("slo_ok".into(), json!(s.slo_ok));
                    }
                }
                None => {
                    o.insert("runs".into(), json!(0));
                }
            }
            let labels: Vec<String> = failures.iter().map(|f| failure_label(f)).collect();
            o.insert("failure".into(), json!(labels.join("/")));
            if crate::aside::any(m) {
                // Not the level's own figure: beside the cell, never in it.
                let (v, src) = crate::aside::cell_columns(a, r, c);
                o.insert("not_per_level".into(), v);
                o.insert("not_per_level_source".into(), src);
            }
            rows.push(row);
        }
    }
    rows
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// CSV of the table in long form.
pub fn csv(a: &Analysis, w: &mut dyn std::io::Write) -> anyhow::Result<()> {
    sweepkit::flat::write_csv(w, &csv_rows(a))?;
    Ok(())
}

/// The CSV's rows, before writing (per-host output adds a `host` column).
pub fn csv_rows(a: &Analysis) -> Vec<Value> {
    let mut rows = cell_rows(a);
    let sim = a.model.simulated_records > 0;
    for r in &mut rows {
        r["simulated"] = json!(sim);
    }
    rows
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
    if crate::aside::any(m) {
        details["not_per_level"] = crate::aside::json(a);
    }
    SummaryRecord {
        schema: SCHEMA_VERSION,
        provenance: Provenance::new("summarize", started),
        metric: a.opts.metric.path.clone(),
        objective: objective_name(a).to_string(),
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
