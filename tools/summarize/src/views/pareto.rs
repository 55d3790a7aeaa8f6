//! `--pareto`: which (config, level) cells are on the frontier of
//! interactivity against throughput per GPU, the trade every serving
//! engineer reads off vLLM's `vllm bench sweep plot_pareto`, NVIDIA
//! AIPerf's Pareto analysis and SemiAnalysis InferenceX.
//!
//! Definitions (each cell's median over its repeats):
//! - interactivity, the frontier's x: tokens/s per user = 1000 / TPOT
//!   p50 (ms), InferenceX's "interactivity = 1000 / TPOT"; it leaves out
//!   the wait for the first token.
//! - also shown, vLLM's tokens/s/user: output tokens/s / achieved
//!   concurrency (plot_pareto divides by the configured concurrency; we
//!   divide by the mean requests in flight loadgen measured, so a level
//!   that never filled its slots is not flattered). It includes prefill.
//! - throughput, the frontier's y: output tokens/s per GPU, GPUs per
//!   server from `gpus` (tp x pp x dp); vLLM's `tokens_per_gpu`
//!   (InferenceX plots total tokens/s per GPU, which counts input tokens).
//!   When any config's GPU count is unknown every point is per server, and
//!   the text says so: per-GPU and per-server figures never share an axis.
//!
//! A cell is on the frontier when no other cell is at least as good on
//! both axes and better on one (equal cells are both on it). A dominated
//! cell whose 95% intervals overlap a cell dominating it is marked within
//! noise.

use std::fmt::Write as _;

use serde_json::{json, Value};
use sweepkit::stats::median;

use crate::analysis::interval::{overlap, t_interval, LEVEL};
use crate::analysis::Analysis;
use crate::metric::lookup;
use crate::wording::num;

/// One measured cell on the chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub row: usize,
    pub col: usize,
    /// 1000 / TPOT p50: tokens/s per user.
    pub x: f64,
    pub x_hw: f64,
    /// Output tokens/s / achieved concurrency.
    pub per_user_by_concurrency: Option<f64>,
    /// Output tokens/s per GPU (or per server, see `Pareto::per_gpu`).
    pub y: f64,
    pub y_hw: f64,
    pub gpus: Option<u64>,
    pub on_frontier: bool,
    /// Dominated, but within noise of a cell that dominates it.
    pub near: bool,
}

/// The frontier and every point.
#[derive(Debug, Clone, Default)]
pub struct Pareto {
    pub points: Vec<Point>,
    /// Indexes into `points` of the frontier, by rising interactivity.
    pub frontier: Vec<usize>,
    /// True when y is per GPU; false: per server.
    pub per_gpu: bool,
    /// How the GPUs were counted, per config label, for people.
    pub gpu_notes: Vec<String>,
    pub notes: Vec<String>,
}

fn half_width(xs: &[f64]) -> f64 {
    t_interval(xs, LEVEL).map_or(0.0, |t| t.half_width)
}

/// The points and frontier of the analysed table.
pub fn of(a: &Analysis) -> Pareto {
    let m = &a.model;
    let mut out = Pareto::default();
    let mut raw = Vec::new();
    let mut unknown = Vec::new();
    for r in 0..m.rows.len() {
        let mut how = None;
        for c in 0..m.levels.len() {
            let recs = &a.records[r][c];
            if recs.is_empty() || a.grid[r][c].is_none() {
                continue;
            }
            let g = crate::views::gpus::of(&m.rows[r].config, &recs[0]);
            how.get_or_insert_with(|| g.how.clone());
            let (x, tput) = interactivity_and_tput(recs);
            let by_conc: Vec<f64> = recs
                .iter()
                .filter_map(|v| {
                    let t = lookup(v, "throughput.output_tok_per_s")?;
                    let k = lookup(v, "throughput.achieved_concurrency")?;
                    (k > 0.0).then_some(t / k)
                })
                .collect();
            let (Some(xm), Some(ym)) = (median(&x), median(&tput)) else {
                continue;
            };
            if g.per_server.is_none() && !unknown.contains(&r) {
                unknown.push(r);
            }
            raw.push((
                r,
                c,
                xm,
                half_width(&x),
                median(&by_conc),
                ym,
                half_width(&tput),
                g.per_server,
            ));
        }
        if let Some(h) = how {
            out.gpu_notes.push(format!("{}: {h}", m.rows[r].label));
        }
    }
    out.per_gpu = unknown.is_empty();
    if !out.per_gpu && raw.iter().any(|p| p.7.is_some()) {
        let names: Vec<&str> = unknown.iter().map(|&r| m.rows[r].label.as_str()).collect();
        out.notes.push(format!(
            "throughput is per server for every config: the GPU count of {} is unknown, \
             and per-GPU and per-server figures cannot share an axis",
            names.join(", ")
        ));
    }
    for (row, col, x, x_hw, by_conc, y, y_hw, gpus) in raw {
        let div = if out.per_gpu {
            gpus.unwrap_or(1) as f64
        } else {
            1.0
        };
        out.points.push(Point {
            row,
            col,
            x,
            x_hw,
            per_user_by_concurrency: by_conc,
            y: y / div,
            y_hw: y_hw / div,
            gpus,
            on_frontier: false,
            near: false,
        });
    }
    mark_frontier(&mut out.points);
    let mut f: Vec<usize> = (0..out.points.len())
        .filter(|&i| out.points[i].on_frontier)
        .collect();
    f.sort_by(|&i, &j| {
        let (p, q) = (&out.points[i], &out.points[j]);
        p.x.total_cmp(&q.x).then(q.y.total_cmp(&p.y))
    });
    out.frontier = f;
    out
}

/// Each record's interactivity (1000 / TPOT p50) and output tok/s.
fn interactivity_and_tput(recs: &[Value]) -> (Vec<f64>, Vec<f64>) {
    let x = recs
        .iter()
        .filter_map(|v| lookup(v, "tpot_ms.p50"))
        .filter(|t| *t > 0.0)
        .map(|t| 1000.0 / t)
        .collect();
    let y = recs
        .iter()
        .filter_map(|v| lookup(v, "throughput.output_tok_per_s"))
        .collect();
    (x, y)
}

/// A cell's place on the chart from its bench records: (1000 / TPOT p50,
/// output tok/s per GPU, or per server when `per_gpu` is false or its GPU
/// count is unknown), medians over the records, as [`of`] places the
/// static cells. For a schedule's line beside them.
pub fn xy(recs: &[Value], per_gpu: bool) -> Option<(f64, f64)> {
    let (x, y) = interactivity_and_tput(recs);
    let div = match (per_gpu, recs.first()) {
        (true, Some(r)) => crate::views::gpus::of(&Default::default(), r)
            .per_server
            .unwrap_or(1) as f64,
        _ => 1.0,
    };
    Some((median(&x)?, median(&y)? / div))
}

/// Does `q` dominate `p` (at least as good on both axes, better on one)?
pub fn dominates(q: &Point, p: &Point) -> bool {
    q.x >= p.x && q.y >= p.y && (q.x > p.x || q.y > p.y)
}

/// Set `on_frontier` and `near` on every point.
pub fn mark_frontier(points: &mut [Point]) {
    let n = points.len();
    for i in 0..n {
        let doms: Vec<usize> = (0..n)
            .filter(|&j| dominates(&points[j], &points[i]))
            .collect();
        let p = &points[i];
        let near = !doms.is_empty()
            && doms.iter().all(|&j| {
                let q = &points[j];
                overlap((p.x, p.x_hw), (q.x, q.x_hw)) && overlap((p.y, p.y_hw), (q.y, q.y_hw))
            })
            && (p.x_hw > 0.0 || p.y_hw > 0.0);
        points[i].on_frontier = doms.is_empty();
        points[i].near = near;
    }
}

/// The y axis's name.
pub fn y_name(p: &Pareto) -> &'static str {
    if p.per_gpu {
        "output throughput per GPU (tok/s)"
    } else {
        "output throughput per server (tok/s)"
    }
}

fn cell(a: &Analysis, p: &Point) -> String {
    format!(
        "{} at {}",
        a.model.rows[p.row].label,
        a.model.levels[p.col].label()
    )
}

/// Per config: where it is on the frontier, or why not.
pub fn per_config(a: &Analysis, p: &Pareto) -> Vec<(String, String)> {
    let m = &a.model;
    (0..m.rows.len())
        .map(|r| {
            let mine: Vec<&Point> = p.points.iter().filter(|q| q.row == r).collect();
            let on: Vec<String> = mine
                .iter()
                .filter(|q| q.on_frontier)
                .map(|q| m.levels[q.col].label())
                .collect();
            let near: Vec<String> = mine
                .iter()
                .filter(|q| q.near)
                .map(|q| m.levels[q.col].label())
                .collect();
            let what = if !on.is_empty() {
                format!("on the frontier at {}", on.join(", "))
            } else if mine.is_empty() {
                let why: Vec<String> = (0..m.levels.len())
                    .map(|c| crate::table::cell_text(a, r, c).value)
                    .filter(|v| v != "-")
                    .collect();
                match why.first() {
                    Some(w) => format!("not on the frontier: nothing measured ({w})"),
                    None => "not on the frontier: nothing measured".to_string(),
                }
            } else if !near.is_empty() {
                format!(
                    "not on the frontier; within noise of it at {}",
                    near.join(", ")
                )
            } else {
                "not on the frontier (dominated at every level)".to_string()
            };
            (m.rows[r].label.clone(), what)
        })
        .collect()
}

/// The `--pareto` section of the text output.
pub fn text(a: &Analysis, p: &Pareto) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\npareto frontier (x: interactivity = 1000 / TPOT p50, tok/s per user; \
         y: {}):",
        y_name(p)
    );
    for n in &p.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    if p.frontier.is_empty() {
        let _ = writeln!(out, "  no cell has TPOT and throughput to place");
    }
    for &i in &p.frontier {
        let q = &p.points[i];
        let by_c = q.per_user_by_concurrency.map_or_else(String::new, |v| {
            format!(", {} by output/concurrency", num(v))
        });
        let _ = writeln!(
            out,
            "  {}: {} tok/s/user{by_c}; {} {}",
            cell(a, q),
            num(q.x),
            num(q.y),
            if p.per_gpu {
                "tok/s/GPU"
            } else {
                "tok/s/server"
            }
        );
    }
    let _ = writeln!(out, "per config:");
    for (label, what) in per_config(a, p) {
        let _ = writeln!(out, "  {label}: {what}");
    }
    if p.per_gpu {
        let _ = writeln!(out, "GPUs per server:");
        for g in &p.gpu_notes {
            let _ = writeln!(out, "  {g}");
        }
    }
    out
}

/// The same, as Markdown.
pub fn markdown(a: &Analysis, p: &Pareto) -> String {
    let t = text(a, p);
    let mut out = String::from("\n**Pareto frontier**\n\n```\n");
    out += t.trim_start_matches('\n');
    out += "```\n";
    out
}

/// `details.pareto` of the summary record.
pub fn json(a: &Analysis, p: &Pareto) -> Value {
    let m = &a.model;
    let pt = |q: &Point| {
        json!({
            "label": m.rows[q.row].label,
            "level": m.levels[q.col].label(),
            "tok_per_s_per_user": q.x,
            "tok_per_s_per_user_by_concurrency": q.per_user_by_concurrency,
            "output_tok_per_s_per_gpu": if p.per_gpu { Some(q.y) } else { None },
            "output_tok_per_s_per_server": if p.per_gpu { None } else { Some(q.y) },
            "gpus": q.gpus,
            "on_frontier": q.on_frontier,
            "within_noise": q.near,
        })
    };
    json!({
        "x": "1000 / tpot_ms.p50",
        "y": if p.per_gpu { "throughput.output_tok_per_s / gpus" } else { "throughput.output_tok_per_s" },
        "per_gpu": p.per_gpu,
        "frontier": p.frontier.iter().map(|&i| pt(&p.points[i])).collect::<Vec<_>>(),
        "points": p.points.iter().map(pt).collect::<Vec<_>>(),
        "per_config": per_config(a, p).into_iter().map(|(l, w)| json!({"label": l, "frontier": w})).collect::<Vec<_>>(),
        "notes": p.notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(row: usize, x: f64, y: f64) -> Point {
        Point {
            row,
            col: 0,
            x,
            x_hw: 0.0,
            per_user_by_concurrency: None,
            y,
            y_hw: 0.0,
            gpus: Some(1),
            on_frontier: false,
            near: false,
        }
    }

    #[test]
    fn dominated_points_leave_the_frontier_and_ties_stay() {
        let mut ps = vec![
            pt(0, 100.0, 50.0),
            pt(1, 50.0, 100.0),
            pt(2, 40.0, 90.0),  // dominated by 1
            pt(3, 100.0, 50.0), // ties 0
            pt(4, 100.0, 40.0), // dominated by 0 (equal x, lower y)
        ];
        mark_frontier(&mut ps);
        let on: Vec<usize> = ps.iter().filter(|p| p.on_frontier).map(|p| p.row).collect();
        assert_eq!(on, [0, 1, 3]);
    }

    #[test]
    fn within_noise_needs_overlap_on_both_axes() {
        let mut ps = vec![pt(0, 100.0, 50.0), pt(1, 98.0, 49.0)];
        ps[1].x_hw = 3.0;
        ps[1].y_hw = 2.0;
        mark_frontier(&mut ps);
        assert!(!ps[1].on_frontier && ps[1].near);
        ps[1].y_hw = 0.5;
        mark_frontier(&mut ps);
        assert!(!ps[1].near);
    }
}
