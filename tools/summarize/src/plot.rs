//! `--plot FILE.svg`: two panels in one hand-written SVG (plotters would
//! add a dependency tree for two line charts): the metric against load
//! level with one line per config, and against the ordered parameter with
//! one line per level. Every line is labelled at its right end, so there is
//! no legend to hunt through.

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::render::cell_text;
use crate::words::num;

pub(crate) const PANEL_W: f64 = 600.0;
pub(crate) const PANEL_H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 180.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 70.0;
pub(crate) const PALETTE: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// One line: its label and points (x, y) in data units, each with the
/// half-width of its 95% interval (0: none, no bar drawn).
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub err: Vec<f64>,
}

/// One panel: title, axis names, x tick labels at data positions.
pub(crate) struct Panel {
    pub id: &'static str,
    pub title: String,
    pub x_name: String,
    pub x_ticks: Vec<(f64, String)>,
    pub series: Vec<Series>,
    pub note: Option<String>,
}

/// The half-width of cell (r, c)'s interval, 0 without one.
fn err_of(a: &Analysis, r: usize, c: usize) -> f64 {
    a.noise.ci[r][c].map_or(0.0, |i| i.half_width)
}

/// The whole SVG document.
pub fn svg(a: &Analysis) -> String {
    svg_with(a, None)
}

/// The SVG document, with the Pareto frontier as a last panel when given.
pub fn svg_with(a: &Analysis, pareto: Option<&crate::pareto::Pareto>) -> String {
    let mut panels = vec![by_level(a)];
    if let Some(p) = by_param(a) {
        panels.push(p);
    }
    let front = pareto.map(|p| (crate::pareto_plot::panel(a, p), p));
    let width = PANEL_W * (panels.len() + usize::from(front.is_some())) as f64;
    let sim = crate::render::simulated_notice(&a.model);
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
        draw_panel(&mut out, p, PANEL_W * i as f64, dy, &a.opts.metric.path);
    }
    if let Some((panel, p)) = &front {
        let x0 = PANEL_W * panels.len() as f64;
        draw_panel(&mut out, panel, x0, dy, crate::pareto::y_name(p));
        crate::pareto_plot::overlay(&mut out, a, p, &Frame::new(panel, x0, dy));
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
            });
        }
    }
    Panel {
        id: "by-level",
        title: "by load level: one line per config".into(),
        x_name: "load level".into(),
        x_ticks: m
            .levels
            .iter()
            .enumerate()
            .map(|(i, l)| (i as f64, l.label()))
            .collect(),
        series,
        note: (!missing.is_empty()).then(|| format!("not plotted: {}", missing.join(", "))),
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
            .map(|x| (*x, crate::level::trim_float(*x)))
            .collect(),
        series,
        note: None,
    })
}

/// A panel's plotting area in SVG units and its data-to-SVG mapping.
pub(crate) struct Frame {
    /// The panel's left edge.
    x0: f64,
    /// The plot area's top left corner, width and height.
    px: f64,
    py: f64,
    pw: f64,
    ph: f64,
    xmin: f64,
    xmax: f64,
    xspan: f64,
    ymax: f64,
    /// The y tick step.
    step: f64,
}

impl Frame {
    pub(crate) fn new(p: &Panel, x0: f64, y0: f64) -> Self {
        let xs = || p.x_ticks.iter().map(|t| t.0);
        let xmin = xs().fold(f64::INFINITY, f64::min);
        let xmax = xs().fold(f64::NEG_INFINITY, f64::max);
        let ymax_data = p
            .series
            .iter()
            .flat_map(|s| {
                s.points
                    .iter()
                    .enumerate()
                    .map(|(i, q)| q.1 + s.err.get(i).copied().unwrap_or(0.0))
            })
            .fold(0.0, f64::max);
        let (step, ymax) = nice_axis(ymax_data);
        Frame {
            x0,
            px: x0 + LEFT,
            py: y0 + TOP,
            pw: PANEL_W - LEFT - RIGHT,
            ph: PANEL_H - TOP - BOTTOM,
            xmin,
            xmax,
            xspan: if xmax > xmin { xmax - xmin } else { 1.0 },
            ymax,
            step,
        }
    }

    pub(crate) fn sx(&self, x: f64) -> f64 {
        self.px + (x - self.xmin) / self.xspan * self.pw
    }

    pub(crate) fn sy(&self, y: f64) -> f64 {
        self.py + self.ph - y / self.ymax * self.ph
    }
}

pub(crate) fn draw_panel(out: &mut String, p: &Panel, x0: f64, y0: f64, metric: &str) {
    let f = Frame::new(p, x0, y0);
    let _ = writeln!(out, r#"<g class="panel" id="{}">"#, p.id);
    let _ = writeln!(
        out,
        r#"<text class="title" x="{}" y="{}" font-size="14" font-weight="bold">{}</text>"#,
        x0 + 10.0,
        y0 + 24.0,
        esc(&p.title)
    );
    draw_axes(out, p, &f, metric);
    let placed = label_positions(p, &f);
    for (i, s) in p.series.iter().enumerate() {
        draw_series(out, s, PALETTE[i % PALETTE.len()], &f, placed[i]);
    }
    if let Some(n) = &p.note {
        let _ = writeln!(
            out,
            r##"<text class="note" x="{:.1}" y="{:.1}" fill="#b00020">{}</text>"##,
            x0 + 10.0,
            f.py + f.ph + 56.0,
            esc(n)
        );
    }
    out.push_str("</g>\n");
}

/// The frame, the y grid with its values, the x ticks and both axis names.
fn draw_axes(out: &mut String, p: &Panel, f: &Frame, metric: &str) {
    let Frame { px, py, pw, ph, .. } = *f;
    let _ = writeln!(
        out,
        r##"<rect x="{px}" y="{py}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>"##
    );
    let mut y = 0.0;
    while y <= f.ymax + f.step / 2.0 {
        let yy = f.sy(y);
        let _ = writeln!(
            out,
            r##"<line x1="{px}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            px + pw,
            px - 6.0,
            yy + 4.0,
            num(y)
        );
        y += f.step;
    }
    for (x, lbl) in &p.x_ticks {
        let xx = f.sx(*x);
        let _ = writeln!(
            out,
            r#"<text class="tick" x="{xx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            py + ph + 16.0,
            esc(lbl)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        px + pw / 2.0,
        py + ph + 36.0,
        esc(&p.x_name)
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{}</text>"#,
        f.x0 + 16.0,
        py + ph / 2.0,
        f.x0 + 16.0,
        py + ph / 2.0,
        esc(metric)
    );
}

/// End labels: the y of each line's label, at its last point, pushed
/// apart so none overlap.
fn label_positions(p: &Panel, f: &Frame) -> Vec<f64> {
    let mut ends: Vec<(f64, usize)> = p
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| (f.sy(s.points.last().map_or(0.0, |q| q.1)), i))
        .collect();
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut placed = vec![0.0; p.series.len()];
    let mut last = f64::NEG_INFINITY;
    for (y, i) in &ends {
        let y = y.max(last + 13.0);
        placed[*i] = y;
        last = y;
    }
    placed
}

/// One line with its points and its label at `label_y`.
fn draw_series(out: &mut String, s: &Series, color: &str, f: &Frame, label_y: f64) {
    let pts: Vec<String> = s
        .points
        .iter()
        .map(|q| format!("{:.1},{:.1}", f.sx(q.0), f.sy(q.1)))
        .collect();
    let _ = writeln!(out, r#"<g class="series" data-label="{}">"#, esc(&s.label));
    let _ = writeln!(
        out,
        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
        pts.join(" ")
    );
    for (i, q) in s.points.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
            f.sx(q.0),
            f.sy(q.1)
        );
        let e = s.err.get(i).copied().unwrap_or(0.0);
        if e > 0.0 {
            // The 95% interval: a vertical bar with caps.
            let (x, lo, hi) = (f.sx(q.0), f.sy((q.1 - e).max(0.0)), f.sy(q.1 + e));
            let _ = writeln!(
                out,
                r#"<path class="errbar" d="M{x:.1} {lo:.1}V{hi:.1}M{:.1} {lo:.1}H{:.1}M{:.1} {hi:.1}H{:.1}" stroke="{color}" fill="none"/>"#,
                x - 4.0,
                x + 4.0,
                x - 4.0,
                x + 4.0
            );
        }
    }
    let end = s.points.last().map_or(f.xmax, |q| q.0);
    let _ = writeln!(
        out,
        r#"<text class="label" x="{:.1}" y="{:.1}" fill="{color}">{}</text>"#,
        f.sx(end) + 8.0,
        label_y + 4.0,
        esc(&s.label)
    );
    out.push_str("</g>\n");
}

/// A round tick step and the axis maximum: steps of 1, 2 or 5 x 10^k, about
/// five ticks, the top at or above the data.
pub(crate) fn nice_axis(max: f64) -> (f64, f64) {
    if max <= 0.0 || !max.is_finite() {
        return (1.0, 1.0);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    (step, (max / step).ceil() * step)
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_is_round_and_covers_data() {
        assert_eq!(nice_axis(3150.0), (1000.0, 4000.0));
        assert_eq!(nice_axis(282.0), (100.0, 300.0));
        assert_eq!(nice_axis(0.0), (1.0, 1.0));
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
