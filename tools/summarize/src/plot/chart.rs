//! An SVG line chart drawn by hand (plotters would add a dependency tree
//! for a few line charts): panels of labelled series on round axes, the
//! frame that maps data to SVG units, and escaping for SVG and HTML text.

use std::fmt::Write as _;

use crate::input::level::Level;
use crate::plot::labels::{text_box, text_width, Rect};
use crate::wording::num;

pub(crate) const PANEL_W: f64 = 600.0;
pub(crate) const PANEL_H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 180.0;
const TOP: f64 = 60.0;
const BOTTOM: f64 = 70.0;
/// The least distance between two end labels' baselines.
const LABEL_GAP: f64 = 16.0;
pub(crate) const PALETTE: &[&str] = &[
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#7f7f7f", "#bcbd22",
];

/// One line: its label and points (x, y) in data units, each with the
/// half-width of its 95% interval (0: none, no bar drawn); a validated
/// schedule's line is dashed (it is not a static value).
pub(crate) struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub err: Vec<f64>,
    pub dash: bool,
}

/// One panel: title, axis names, x tick labels at data positions.
pub(crate) struct Panel {
    pub id: &'static str,
    pub title: String,
    pub x_name: String,
    pub x_ticks: Vec<(f64, String)>,
    pub series: Vec<Series>,
    pub note: Option<String>,
    /// Width and height in SVG units (`PANEL_W` x `PANEL_H` in `--plot`;
    /// the report draws wider panels that fill its page).
    pub size: (f64, f64),
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
        // Room at the right for the longest end label.
        let right = p
            .series
            .iter()
            .map(|s| text_width(&s.label, 12.0) + 16.0)
            .fold(RIGHT, f64::max);
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
            pw: p.size.0 - LEFT - right,
            ph: p.size.1 - TOP - BOTTOM,
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

    /// The plotting area, where labels over the lines may go.
    pub(crate) fn area(&self) -> Rect {
        Rect {
            x0: self.px,
            y0: self.py,
            x1: self.px + self.pw,
            y1: self.py + self.ph,
        }
    }
}

/// Draw panel `p` at (`x0`, `y0`) with `metric` naming its y axis; the
/// boxes of the lines' end labels, for labels drawn over it later.
pub(crate) fn draw_panel(out: &mut String, p: &Panel, x0: f64, y0: f64, metric: &str) -> Vec<Rect> {
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
    let mut boxes = Vec::new();
    for (i, s) in p.series.iter().enumerate() {
        boxes.push(draw_series(
            out,
            s,
            PALETTE[i % PALETTE.len()],
            &f,
            placed[i],
        ));
    }
    if let Some(n) = &p.note {
        let _ = writeln!(
            out,
            r##"<text class="note" x="{:.1}" y="{:.1}" fill="#b00020">{}</text>"##,
            x0 + 10.0,
            f.py + f.ph + 60.0,
            esc(n)
        );
    }
    out.push_str("</g>\n");
    boxes
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
            px - 8.0,
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
            py + ph + 20.0,
            esc(lbl)
        );
    }
    let _ = writeln!(
        out,
        r#"<text class="axis-name" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        px + pw / 2.0,
        py + ph + 40.0,
        esc(&p.x_name)
    );
    let _ = writeln!(
        out,
        r#"<text class="axis-name" x="{:.1}" y="{:.1}" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{}</text>"#,
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
        // A 12 px label's box is about 15 px tall in a browser.
        let y = y.max(last + LABEL_GAP);
        placed[*i] = y;
        last = y;
    }
    placed
}

/// One line with its points and its label at `label_y`; the label's box.
fn draw_series(out: &mut String, s: &Series, color: &str, f: &Frame, label_y: f64) -> Rect {
    let pts: Vec<String> = s
        .points
        .iter()
        .map(|q| format!("{:.1},{:.1}", f.sx(q.0), f.sy(q.1)))
        .collect();
    let _ = writeln!(out, r#"<g class="series" data-label="{}">"#, esc(&s.label));
    let dash = if s.dash {
        r#" stroke-dasharray="8 4""#
    } else {
        ""
    };
    let _ = writeln!(
        out,
        r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
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
    let (x, y) = (f.sx(end) + 8.0, label_y + 4.0);
    let _ = writeln!(
        out,
        r#"<text class="label" x="{x:.1}" y="{y:.1}" fill="{color}">{}</text>"#,
        esc(&s.label)
    );
    out.push_str("</g>\n");
    text_box(&s.label, x, y, 12.0, false)
}

/// An axis of load levels: a tick at each level's place, named by it.
pub(crate) fn level_ticks(levels: &[Level]) -> Vec<(f64, String)> {
    levels
        .iter()
        .enumerate()
        .map(|(i, l)| (i as f64, l.label()))
        .collect()
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
