//! `--report FILE.html` with `--compare` or `--trend`: one self-contained
//! page with the header, the rows (a change column per level) and one
//! chart per config x metric: before and after as two series over the
//! levels, or, over dated runs, one series per level across the runs.

use std::fmt::Write as _;

use super::render;
use super::verdict::{Row, Verdict};
use crate::plot::chart::{draw_panel, esc, Panel, Series, PANEL_H, PANEL_W};

const CSS: &str = "body{font-family:sans-serif;margin:2em;max-width:1300px}\
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px}\
td.n{text-align:right}.worse{color:#b00;font-weight:bold}.better{color:#070}\
svg{display:block;margin:1em 0}";

/// One chart: its title, x ticks, and series of (label, y per tick).
pub struct Chart {
    pub title: String,
    pub metric: String,
    pub x_name: String,
    pub ticks: Vec<String>,
    pub series: Vec<(String, Vec<Option<f64>>)>,
}

/// The chart titled `title` in `out`, added (by `make`) when absent.
pub fn chart_for<'a>(
    out: &'a mut Vec<Chart>,
    title: &str,
    make: impl FnOnce() -> Chart,
) -> &'a mut Chart {
    let i = match out.iter().position(|c| c.title == title) {
        Some(i) => i,
        None => {
            out.push(make());
            out.len() - 1
        }
    };
    &mut out[i]
}

/// The before/after charts: per config x metric, two series over levels.
pub fn compare_charts(rows: &[Row], before: &str, after: &str) -> Vec<Chart> {
    let mut out: Vec<Chart> = Vec::new();
    for r in rows {
        let title = format!("{}: {}", r.config, r.metric);
        let c = chart_for(&mut out, &title, || Chart {
            title: title.clone(),
            metric: r.metric.clone(),
            x_name: "load level".into(),
            ticks: Vec::new(),
            series: vec![
                (format!("before: {before}"), vec![]),
                (format!("after: {after}"), vec![]),
            ],
        });
        c.ticks.push(r.level.clone());
        c.series[0].1.push(r.before);
        c.series[1].1.push(r.after);
    }
    out
}

fn svg(c: &Chart, id: usize) -> String {
    let series = c
        .series
        .iter()
        .map(|(label, ys)| {
            let pts: Vec<(f64, f64)> = ys
                .iter()
                .enumerate()
                .filter_map(|(i, y)| Some((i as f64, (*y)?)))
                .collect();
            Series {
                label: label.clone(),
                err: vec![0.0; pts.len()],
                points: pts,
                dash: false,
            }
        })
        .collect();
    let p = Panel {
        id: "chart",
        title: c.title.clone(),
        x_name: c.x_name.clone(),
        x_ticks: c
            .ticks
            .iter()
            .enumerate()
            .map(|(i, t)| (i as f64, t.clone()))
            .collect(),
        series,
        note: None,
        size: (PANEL_W * 1.5, PANEL_H),
    };
    let mut body = String::new();
    draw_panel(&mut body, &p, 0.0, 0.0, &c.metric);
    format!(
        "<svg id=\"chart-{id}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" \
         height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n{body}</svg>\n",
        w = PANEL_W * 1.5,
        h = PANEL_H
    )
}

/// The page.
pub fn html(title: &str, lines: &[String], rows: &[Row], charts: &[Chart]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; \
         style-src 'unsafe-inline'; img-src data:\"><title>{}</title><style>{CSS}</style>\
         </head><body>\n<h1>{}</h1>\n<ul id=\"header\">\n",
        esc(title),
        esc(title)
    );
    for l in lines {
        let _ = writeln!(out, "<li>{}</li>", esc(l));
    }
    out += "</ul>\n<table id=\"rows\"><tr><th>config</th><th>level</th><th>metric</th>\
            <th>before</th><th>after</th><th>change</th><th>95% interval</th><th>verdict</th></tr>\n";
    for r in rows {
        let class = match r.verdict {
            Verdict::Worse => "worse",
            Verdict::Better => "better",
            _ => "",
        };
        let c = render::cells(r);
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"{class}\">{}</td></tr>",
            esc(&c[0]),
            esc(&c[1]),
            esc(&c[2]),
            esc(&c[3]),
            esc(&c[4]),
            esc(&c[5]),
            esc(&c[6]),
            esc(&c[7])
        );
    }
    out += "</table>\n";
    for n in render::method_notes(rows) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(&n));
    }
    for (i, c) in charts.iter().enumerate() {
        out += &svg(c, i);
    }
    out + "</body></html>\n"
}
