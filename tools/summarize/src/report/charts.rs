//! The report's charts, each one standalone inline SVG that fills the
//! page's width: a figure by concurrency with one line per config and a
//! dashed one per validated schedule (throughput, TTFT, TPOT), the
//! frontier with the schedule's points, and each config's timeline (stop,
//! load until ready, bench).

use std::fmt::Write as _;

use serde_json::Value;
use sweepkit::stats::median;

use crate::analysis::interval::{t_interval, LEVEL};
use crate::analysis::Analysis;
use crate::metric::lookup;
use crate::plot::chart::{draw_panel, esc, Frame, Panel, Series};
use crate::plot::labels::text_width;
use crate::report::data::Timeline;
use crate::wording::num;

/// The report's panels: wide enough to fill a 1280 px page (CSS scales
/// them to the content width), short enough to see two at once.
const SIZE: (f64, f64) = (1100.0, 420.0);

fn open(out: &mut String, id: &str, w: f64, h: f64) {
    let _ = writeln!(
        out,
        r#"<svg id="{id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12" role="img">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
}

/// One line through `cells` (each level's bench records): the median of
/// `path` per level, with its 95% interval where a level has repeats.
fn series_of(label: &str, cells: &[&[Value]], path: &str, dash: bool) -> Option<Series> {
    let mut points = Vec::new();
    let mut err = Vec::new();
    for (c, recs) in cells.iter().enumerate() {
        let xs: Vec<f64> = recs.iter().filter_map(|v| lookup(v, path)).collect();
        if let Some(y) = median(&xs) {
            points.push((c as f64, y));
            err.push(t_interval(&xs, LEVEL).map_or(0.0, |t| t.half_width));
        }
    }
    (!points.is_empty()).then(|| Series {
        label: label.to_string(),
        points,
        err,
        dash,
    })
}

/// `path` (e.g. `ttft_ms.p99`) by level, one line per config and a dashed
/// one per schedule, with 95% interval bars where a cell has repeats.
pub fn by_level(a: &Analysis, id: &'static str, path: &str) -> String {
    let m = &a.model;
    let mut series: Vec<Series> = (0..m.rows.len())
        .filter_map(|r| {
            let cells: Vec<&[Value]> = a.records[r].iter().map(Vec::as_slice).collect();
            series_of(&m.rows[r].label, &cells, path, false)
        })
        .collect();
    for s in &a.schedule {
        let cells: Vec<&[Value]> = s.cells.iter().map(|c| c.records.as_slice()).collect();
        series.extend(series_of(&s.label, &cells, path, true));
    }
    let name = crate::metric_name::human(path);
    let panel = Panel {
        id,
        title: format!("{name} by load level"),
        x_name: level_axis(&m.levels),
        x_ticks: crate::plot::chart::level_ticks(&m.levels),
        note: series
            .is_empty()
            .then(|| format!("no {name} in the records")),
        series,
        size: SIZE,
    };
    let mut out = String::new();
    open(&mut out, id, SIZE.0, SIZE.1);
    draw_panel(&mut out, &panel, 0.0, 0.0, &name);
    out.push_str("</svg>\n");
    out
}

/// The x axis's name: concurrency or request rate, with its unit.
fn level_axis(levels: &[crate::input::level::Level]) -> String {
    let open = levels.iter().filter(|l| l.is_open()).count();
    if open == 0 {
        "concurrency, c (requests in flight)".into()
    } else if open == levels.len() {
        "request rate (req/s)".into()
    } else {
        "load level (c: requests in flight; rate: req/s)".into()
    }
}

/// The frontier chart (see `plot::pareto_panel`), with each schedule's cells as
/// a dashed line of their own (not candidates for the frontier, which is
/// of static values).
pub fn frontier(a: &Analysis, p: &crate::views::pareto::Pareto) -> String {
    let mut panel = crate::plot::pareto_panel::panel(a, p);
    panel.size = SIZE;
    // The x axis covers the static points with their intervals (as
    // `--plot`'s panel does) and the schedules' points.
    let mut xmax = crate::plot::pareto_panel::x_reach(p);
    for s in &a.schedule {
        let pts: Vec<(f64, f64)> = s
            .cells
            .iter()
            .filter_map(|c| crate::views::pareto::xy(&c.records, p.per_gpu))
            .collect();
        xmax = pts.iter().map(|q| q.0).fold(xmax, f64::max);
        if !pts.is_empty() {
            panel.series.push(Series {
                label: s.label.clone(),
                err: vec![0.0; pts.len()],
                points: pts,
                dash: true,
            });
        }
    }
    panel.x_ticks = crate::plot::pareto_panel::ticks(xmax);
    let mut out = String::new();
    open(&mut out, "frontier-chart", SIZE.0, SIZE.1);
    let taken = draw_panel(&mut out, &panel, 0.0, 0.0, crate::views::pareto::y_name(p));
    crate::plot::pareto_panel::overlay(&mut out, a, p, &Frame::new(&panel, 0.0, 0.0), taken);
    out.push_str("</svg>\n");
    out
}

/// One bar per config (and schedule): stop, load (until ready), bench, to
/// one scale; the labels get the room their text needs.
pub fn timeline(rows: &[(String, Timeline)]) -> String {
    const ROW: f64 = 26.0;
    const RIGHT: f64 = 80.0;
    let width = SIZE.0;
    let left = rows
        .iter()
        .map(|(l, _)| text_width(l, 12.0) + 16.0)
        .fold(120.0, f64::max);
    let total = |x: &Timeline| x.stop_s.unwrap_or(0.0) + x.ready_s.unwrap_or(0.0) + x.bench_s;
    let longest = rows
        .iter()
        .map(|r| total(&r.1))
        .fold(0.0, f64::max)
        .max(1e-9);
    let scale = (width - left - RIGHT) / longest;
    let h = 40.0 + ROW * rows.len() as f64;
    let mut out = String::new();
    open(&mut out, "timeline-chart", width, h);
    let parts = [
        ("stop", "#9467bd"),
        ("load", "#ff7f0e"),
        ("bench", "#1f77b4"),
    ];
    for (i, (name, color)) in parts.iter().enumerate() {
        let x = left + 90.0 * i as f64;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="8" width="12" height="12" fill="{color}"/><text x="{}" y="18">{name}</text>"#,
            x + 16.0
        );
    }
    for (r, (label, x)) in rows.iter().enumerate() {
        let y = 32.0 + ROW * r as f64;
        let _ = writeln!(
            out,
            r#"<g class="timeline-row" data-label="{0}"><text x="4" y="{1:.1}">{0}</text>"#,
            esc(label),
            y + 14.0,
        );
        let mut at = left;
        let segs = [x.stop_s.unwrap_or(0.0), x.ready_s.unwrap_or(0.0), x.bench_s];
        for (i, len) in segs.iter().enumerate() {
            if *len <= 0.0 {
                continue;
            }
            let w = len * scale;
            let _ = writeln!(
                out,
                r#"<rect class="{}" x="{at:.1}" y="{y:.1}" width="{w:.1}" height="18" fill="{}"><title>{} {} s</title></rect>"#,
                parts[i].0,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A bench record of config `n` at c=1 with TPOT p50 `tpot` ms.
    fn bench(n: &str, tpot: f64, tok_s: f64) -> String {
        serde_json::json!({
            "type": "bench", "schema": 1, "config": {"num-steps": n},
            "load": {"mode": "closed", "concurrency": 1},
            "tpot_ms": {"p50": tpot},
            "throughput": {"output_tok_per_s": tok_s},
        })
        .to_string()
    }

    /// The largest x tick of an SVG chart's frontier panel.
    fn last_x_tick(svg: &str) -> f64 {
        svg.lines()
            .filter(|l| l.contains(r#"<text class="tick""#) && l.contains("text-anchor=\"middle\""))
            .filter_map(|l| l.split('>').nth(1)?.split('<').next()?.parse().ok())
            .fold(0.0, f64::max)
    }

    #[test]
    fn the_frontiers_x_axis_covers_the_points_intervals() {
        // 1000 / TPOT: 100, 95.2, 105.3 tok/s per user; the interval of
        // the mean reaches past 110, beyond the axis's round 100.
        let lines = [
            bench("3", 10.0, 500.0),
            bench("3", 10.5, 510.0),
            bench("3", 9.5, 490.0),
        ];
        let a = crate::analysis::analysis_of_lines(&lines.map(String::from));
        let p = crate::views::pareto::of(&a);
        let reach = p.points.iter().map(|q| q.x + q.x_hw).fold(0.0, f64::max);
        assert!(reach > 110.0, "{reach}");
        let svg = frontier(&a, &p);
        assert!(
            last_x_tick(&svg) >= reach,
            "{} < {reach}",
            last_x_tick(&svg)
        );
    }
}
