//! The Pareto panel of `--plot` (with `--pareto`) and of the report: every
//! measured cell as a point, one line per config through its levels, the
//! frontier as a dashed line, each frontier point labelled with its config
//! and level where the label fits clear of every other label, else with
//! its number in the frontier's list.

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::plot::chart::{esc, nice_axis, Frame, Panel, Series, PANEL_H, PANEL_W};
use crate::plot::labels::{place, Rect};
use crate::views::pareto::Pareto;
use crate::wording::num;

/// The panel: x interactivity (tok/s per user), y throughput per GPU.
pub(crate) fn panel(a: &Analysis, p: &Pareto) -> Panel {
    let m = &a.model;
    let mut series = Vec::new();
    for r in 0..m.rows.len() {
        let mut pts: Vec<&crate::views::pareto::Point> =
            p.points.iter().filter(|q| q.row == r).collect();
        pts.sort_by_key(|q| q.col);
        if pts.is_empty() {
            continue;
        }
        series.push(Series {
            label: m.rows[r].label.clone(),
            points: pts.iter().map(|q| (q.x, q.y)).collect(),
            err: pts.iter().map(|q| q.y_hw).collect(),
            dash: false,
        });
    }
    Panel {
        id: "pareto",
        title: "pareto frontier: throughput against interactivity".into(),
        x_name: "interactivity, 1000 / TPOT p50 (tok/s per user)".into(),
        x_ticks: ticks(x_reach(p)),
        series,
        note: (!p.notes.is_empty()).then(|| p.notes.join("; ")),
        size: (PANEL_W, PANEL_H),
    }
}

/// How far right the points reach with their intervals: the x axis covers
/// each point's interval, as the y axis does (`chart::Frame`).
pub(crate) fn x_reach(p: &Pareto) -> f64 {
    p.points.iter().map(|q| q.x + q.x_hw).fold(0.0, f64::max)
}

/// Round ticks from 0 to at least `max`.
pub(crate) fn ticks(max: f64) -> Vec<(f64, String)> {
    let (step, top) = nice_axis(max);
    let mut out = Vec::new();
    let mut x = 0.0;
    while x <= top + step / 2.0 {
        out.push((x, num(x)));
        x += step;
    }
    out
}

/// The frontier line and its point labels over the drawn panel, clear of
/// the boxes in `taken` (the lines' end labels) and of each other.
pub(crate) fn overlay(out: &mut String, a: &Analysis, p: &Pareto, f: &Frame, mut taken: Vec<Rect>) {
    let m = &a.model;
    let pts: Vec<String> = p
        .frontier
        .iter()
        .map(|&i| format!("{:.1},{:.1}", f.sx(p.points[i].x), f.sy(p.points[i].y)))
        .collect();
    let _ = writeln!(out, r#"<g class="frontier">"#);
    if !pts.is_empty() {
        let _ = writeln!(
            out,
            r##"<polyline points="{}" fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="6 4"/>"##,
            pts.join(" ")
        );
    }
    let area = f.area();
    for (n, &i) in p.frontier.iter().enumerate() {
        let q = &p.points[i];
        let at = (f.sx(q.x), f.sy(q.y));
        let full = format!("{} {}", m.rows[q.row].label, m.levels[q.col].label());
        // The number is the point's place in the report's frontier list.
        let number = (n + 1).to_string();
        let spot = place(&full, at, 10.0, &area, &mut taken)
            .map(|s| (s, full.clone()))
            .or_else(|| place(&number, at, 10.0, &area, &mut taken).map(|s| (s, number)));
        let Some((s, text)) = spot else { continue };
        let anchor = if s.end { "end" } else { "start" };
        let _ = writeln!(
            out,
            r##"<text class="frontier-label" x="{:.1}" y="{:.1}" font-size="10" text-anchor="{anchor}" fill="#000">{}</text>"##,
            s.x,
            s.y,
            esc(&text)
        );
    }
    out.push_str("</g>\n");
}
