//! The report's charts, each one standalone inline SVG: a figure by
//! concurrency with one line per config (throughput, TTFT, TPOT), the
//! frontier, and each config's timeline (stop, load until ready, bench).

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::interval::{t_interval, LEVEL};
use crate::metric::lookup;
use crate::report_data::Timeline;
use crate::stats::median;
use crate::svg_chart::{draw_panel, esc, Frame, Panel, Series, PANEL_H, PANEL_W};
use crate::wording::num;

fn open(out: &mut String, id: &str, w: f64, h: f64) {
    let _ = writeln!(
        out,
        r#"<svg id="{id}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12" role="img">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
}

/// `path` (e.g. `ttft_ms.p99`) by level, one line per config, with 95%
/// interval bars where a cell has repeats.
pub fn by_level(a: &Analysis, id: &'static str, path: &str, title: &str) -> String {
    let m = &a.model;
    let mut series = Vec::new();
    for r in 0..m.rows.len() {
        let mut points = Vec::new();
        let mut err = Vec::new();
        for c in 0..m.levels.len() {
            let xs: Vec<f64> = a.records[r][c]
                .iter()
                .filter_map(|v| lookup(v, path))
                .collect();
            if let Some(y) = median(&xs) {
                points.push((c as f64, y));
                err.push(t_interval(&xs, LEVEL).map_or(0.0, |t| t.half_width));
            }
        }
        if !points.is_empty() {
            series.push(Series {
                label: m.rows[r].label.clone(),
                points,
                err,
            });
        }
    }
    let panel = Panel {
        id,
        title: title.to_string(),
        x_name: "load level".into(),
        x_ticks: m
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, l.label()))
            .collect(),
        note: series
            .is_empty()
            .then(|| format!("no {path} in the records")),
        series,
    };
    let mut out = String::new();
    open(&mut out, id, PANEL_W, PANEL_H);
    draw_panel(&mut out, &panel, 0.0, 0.0, path);
    out.push_str("</svg>\n");
    out
}

/// The frontier chart (see `pareto_plot`).
pub fn frontier(a: &Analysis, p: &crate::pareto::Pareto) -> String {
    let panel = crate::pareto_plot::panel(a, p);
    let mut out = String::new();
    open(&mut out, "frontier-chart", PANEL_W, PANEL_H);
    draw_panel(&mut out, &panel, 0.0, 0.0, crate::pareto::y_name(p));
    crate::pareto_plot::overlay(&mut out, a, p, &Frame::new(&panel, 0.0, 0.0));
    out.push_str("</svg>\n");
    out
}

/// One bar per config: stop, load (until ready), bench, to one scale.
pub fn timeline(a: &Analysis, t: &[Timeline]) -> String {
    const ROW: f64 = 26.0;
    const LEFT: f64 = 260.0;
    const WIDTH: f64 = 900.0;
    let total = |x: &Timeline| x.stop_s.unwrap_or(0.0) + x.ready_s.unwrap_or(0.0) + x.bench_s;
    let longest = t.iter().map(total).fold(0.0, f64::max).max(1e-9);
    let scale = (WIDTH - LEFT - 20.0) / longest;
    let h = 40.0 + ROW * t.len() as f64;
    let mut out = String::new();
    open(&mut out, "timeline-chart", WIDTH, h);
    let parts = [
        ("stop", "#9467bd"),
        ("load", "#ff7f0e"),
        ("bench", "#1f77b4"),
    ];
    for (i, (name, color)) in parts.iter().enumerate() {
        let x = LEFT + 90.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="8" width="12" height="12" fill="{color}"/><text x="{}" y="18">{name}</text>"#,
            x + 16.0
        );
    }
    for (r, x) in t.iter().enumerate() {
        let y = 32.0 + ROW * r as f64;
        let _ = writeln!(
            out,
            r#"<g class="timeline-row" data-label="{}"><text x="4" y="{:.1}">{}</text>"#,
            esc(&a.model.rows[r].label),
            y + 14.0,
            esc(&a.model.rows[r].label)
        );
        let mut at = LEFT;
        let segs = [x.stop_s.unwrap_or(0.0), x.ready_s.unwrap_or(0.0), x.bench_s];
        for (i, len) in segs.iter().enumerate() {
            if *len <= 0.0 {
                continue;
            }
            let w = len * scale;
            let _ = writeln!(
                out,
                r#"<rect x="{at:.1}" y="{y:.1}" width="{w:.1}" height="18" fill="{}"><title>{} {} s</title></rect>"#,
                parts[i].1,
                parts[i].0,
                num(*len)
            );
            at += w;
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="11">{} s</text></g>"#,
            at + 4.0,
            y + 14.0,
            num(total(x))
        );
    }
    out.push_str("</svg>\n");
    out
}
