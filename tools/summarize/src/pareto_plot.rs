//! The Pareto panel of `--plot` (with `--pareto`): every measured cell as
//! a point, one line per config through its levels, the frontier as a
//! dashed line, each frontier point labelled with its config and level.

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::pareto::Pareto;
use crate::svg_chart::{esc, nice_axis, Frame, Panel, Series};
use crate::wording::num;

/// The panel: x interactivity (tok/s per user), y throughput per GPU.
pub(crate) fn panel(a: &Analysis, p: &Pareto) -> Panel {
    let m = &a.model;
    let mut series = Vec::new();
    for r in 0..m.rows.len() {
        let mut pts: Vec<&crate::pareto::Point> = p.points.iter().filter(|q| q.row == r).collect();
        pts.sort_by_key(|q| q.col);
        if pts.is_empty() {
            continue;
        }
        series.push(Series {
            label: m.rows[r].label.clone(),
            points: pts.iter().map(|q| (q.x, q.y)).collect(),
            err: pts.iter().map(|q| q.y_hw).collect(),
        });
    }
    let xmax = p.points.iter().map(|q| q.x + q.x_hw).fold(0.0, f64::max);
    let (step, top) = nice_axis(xmax);
    let mut x_ticks = Vec::new();
    let mut x = 0.0;
    while x <= top + step / 2.0 {
        x_ticks.push((x, num(x)));
        x += step;
    }
    Panel {
        id: "pareto",
        title: "pareto frontier: throughput against interactivity".into(),
        x_name: "tok/s per user (1000 / TPOT p50)".into(),
        x_ticks,
        series,
        note: (!p.notes.is_empty()).then(|| p.notes.join("; ")),
    }
}

/// The frontier line and its point labels, over the drawn panel.
pub(crate) fn overlay(out: &mut String, a: &Analysis, p: &Pareto, f: &Frame) {
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
    for &i in &p.frontier {
        let q = &p.points[i];
        let label = format!("{} {}", m.rows[q.row].label, m.levels[q.col].label());
        let _ = writeln!(
            out,
            r##"<text class="frontier-label" x="{:.1}" y="{:.1}" font-size="10" fill="#000">{}</text>"##,
            f.sx(q.x) + 5.0,
            f.sy(q.y) - 6.0,
            esc(&label)
        );
    }
    out.push_str("</g>\n");
}
