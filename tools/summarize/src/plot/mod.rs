//! `--plot FILE.svg`: two panels in one hand-written SVG (plotters would
//! add a dependency tree for two line charts): the metric against load
//! level with one line per config, and against the ordered parameter with
//! one line per level. Every line is labelled at its right end, so there is
//! no legend to hunt through.

pub(crate) mod chart;
pub(crate) mod labels;
pub(crate) mod pareto_panel;

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::plot::chart::{draw_panel, esc, Frame, Panel, Series, PANEL_H, PANEL_W};
use crate::table::cell_text;

/// The half-width of cell (r, c)'s interval, 0 without one.
fn err_of(a: &Analysis, r: usize, c: usize) -> f64 {
    a.noise.ci[r][c].map_or(0.0, |i| i.half_width)
}

/// The SVG document, with the Pareto frontier as a last panel when given.
pub fn svg(a: &Analysis, pareto: Option<&crate::views::pareto::Pareto>) -> String {
    let mut panels = vec![by_level(a)];
    if let Some(p) = by_param(a) {
        panels.push(p);
    }
    let front = pareto.map(|p| (crate::plot::pareto_panel::panel(a, p), p));
    let width = PANEL_W * (panels.len() + usize::from(front.is_some())) as f64;
    let sim = crate::table::simulated_notice(&a.model);
    let height = PANEL_H + if sim.is_some() { 24.0 } else { 0.0 };
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let mut dy = 0.0;
    if let Some(n) = sim {
        let _ = writeln!(
            out,
            r##"<text class="simulated" x="10" y="18" fill="#b00020" font-weight="bold">{}</text>"##,
            esc(&n)
        );
        dy = 24.0;
    }
    for (i, p) in panels.iter().enumerate() {
        let y_name = crate::metric_name::human(&a.opts.metric.path);
        draw_panel(&mut out, p, PANEL_W * i as f64, dy, &y_name);
    }
    if let Some((panel, p)) = &front {
        let x0 = PANEL_W * panels.len() as f64;
        let taken = draw_panel(&mut out, panel, x0, dy, crate::views::pareto::y_name(p));
        crate::plot::pareto_panel::overlay(&mut out, a, p, &Frame::new(panel, x0, dy), taken);
    }
    out.push_str("</svg>\n");
    out
}

fn by_level(a: &Analysis) -> Panel {
    let m = &a.model;
    let mut series = Vec::new();
    let mut missing = Vec::new();
    for r in 0..m.rows.len() {
        let cols: Vec<usize> = (0..m.levels.len())
            .filter(|&c| a.grid[r][c].is_some())
            .collect();
        let points: Vec<(f64, f64)> = cols
            .iter()
            .filter_map(|&c| a.grid[r][c].as_ref().map(|s| (c as f64, s.median)))
            .collect();
        let err: Vec<f64> = cols.iter().map(|&c| err_of(a, r, c)).collect();
        if points.is_empty() {
            let why = (0..m.levels.len())
                .map(|c| cell_text(a, r, c).value)
                .find(|v| v != "-")
                .unwrap_or_else(|| "no data".into());
            missing.push(format!("{} ({why})", m.rows[r].label));
        } else {
            series.push(Series {
                label: m.rows[r].label.clone(),
                points,
                err,
                dash: false,
            });
        }
    }
    Panel {
        id: "by-level",
        title: "by load level: one line per config".into(),
        x_name: "load level".into(),
        x_ticks: crate::plot::chart::level_ticks(&m.levels),
        series,
        note: (!missing.is_empty()).then(|| format!("not plotted: {}", missing.join(", "))),
        size: (PANEL_W, PANEL_H),
    }
}

fn by_param(a: &Analysis) -> Option<Panel> {
    let m = &a.model;
    let key = &a.plateau.as_ref()?.param;
    let pi = m.varying.iter().position(|k| k == key)?;
    let x_of = |r: usize| -> Option<f64> {
        match &m.rows[r].key[pi] {
            None => Some(0.0),
            Some(s) => s.trim().parse().ok(),
        }
    };
    let mut xs: Vec<f64> = Vec::new();
    let mut series = Vec::new();
    for (c, l) in m.levels.iter().enumerate() {
        let mut pts: Vec<(f64, f64, f64)> = (0..m.rows.len())
            .filter_map(|r| Some((x_of(r)?, a.grid[r][c].as_ref()?.median, err_of(a, r, c))))
            .collect();
        pts.sort_by(|p, q| p.0.total_cmp(&q.0));
        xs.extend(pts.iter().map(|p| p.0));
        if !pts.is_empty() {
            series.push(Series {
                label: l.label(),
                points: pts.iter().map(|p| (p.0, p.1)).collect(),
                err: pts.iter().map(|p| p.2).collect(),
                dash: false,
            });
        }
    }
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    Some(Panel {
        id: "by-param",
        title: format!("by {key}: one line per level"),
        x_name: key.clone(),
        x_ticks: xs
            .iter()
            .map(|x| (*x, crate::input::level::trim_float(*x)))
            .collect(),
        series,
        note: None,
        size: (PANEL_W, PANEL_H),
    })
}
