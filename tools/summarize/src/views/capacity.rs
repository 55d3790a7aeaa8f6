//! Capacity under an SLO (`--slo`): per config, the highest measured
//! concurrency at which every term holds, its goodput there, and the
//! bracket when the next measured level misses; configs ranked by it.
//! "How many users can this config serve with p99 TTFT under 500 ms" is
//! the question the peers' trackers ask most (vllm#27084, aiperf#883).
//! guidellm searches concurrency rather than rate for the same reason
//! loadgen's closed loop does: above capacity an open-loop rate builds an
//! unbounded backlog, a concurrency does not. Only closed-loop levels
//! (`c=N`) count.

use std::fmt::Write as _;

use serde_json::{json, Value};
use sweepkit::stats::median;

use crate::analysis::Analysis;
use crate::input::level::Level;
use crate::metric::lookup;
use crate::wording::num;

/// How one level of a config fared against the SLO.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Meets,
    /// The terms missed, as `p99_ttft_ms 812 > 500`.
    Misses(Vec<String>),
    /// It failed there (the failure's words).
    Failed(String),
}

/// One config's capacity.
#[derive(Debug, Clone, PartialEq)]
pub struct Capacity {
    pub row: usize,
    /// The highest concurrency meeting every term, and its column.
    pub at: Option<(u64, usize)>,
    /// The first measured level above it, and why it did not count.
    pub next: Option<(u64, Verdict)>,
    /// Median goodput (requests/s meeting loadgen's own --slo) there.
    pub goodput_req_per_s: Option<f64>,
    pub output_tok_per_s: Option<f64>,
    /// Levels below the capacity that miss (a non-monotone config).
    pub misses_below: Vec<u64>,
    /// The lowest measured level, when none meets the SLO.
    pub lowest: Option<(u64, Verdict)>,
}

fn verdict(a: &Analysis, r: usize, c: usize) -> Option<Verdict> {
    let s = a.grid[r][c].as_ref();
    if s.is_none() {
        let f = a.model.failures_at(r, c);
        return f
            .first()
            .map(|f| Verdict::Failed(crate::wording::failure_label(f)));
    }
    if s.is_some_and(|s| s.slo_ok) {
        return Some(Verdict::Meets);
    }
    let recs = &a.records[r][c];
    let missed = a
        .opts
        .slo
        .iter()
        .filter_map(|t| {
            let xs: Vec<f64> = recs.iter().filter_map(|v| lookup(v, &t.path)).collect();
            match median(&xs) {
                Some(x) if t.op.holds(x, t.limit) => None,
                Some(x) => Some(format!("{} {}", t.name, num(x))),
                None => Some(format!("{} not measured", t.name)),
            }
        })
        .collect();
    Some(Verdict::Misses(missed))
}

fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Meets => "meets".into(),
        Verdict::Misses(t) => format!("misses ({})", t.join(", ")),
        Verdict::Failed(f) => format!("failed ({f})"),
    }
}

fn med_at(a: &Analysis, r: usize, c: usize, path: &str) -> Option<f64> {
    let xs: Vec<f64> = a.records[r][c]
        .iter()
        .filter_map(|v| lookup(v, path))
        .collect();
    median(&xs)
}

/// Every config's capacity, best first: highest capacity, then goodput,
/// then output throughput there; configs meeting it nowhere last.
pub fn of(a: &Analysis) -> Vec<Capacity> {
    let m = &a.model;
    let cols: Vec<(u64, usize)> = m
        .levels
        .iter()
        .enumerate()
        .filter_map(|(c, l)| match l {
            Level::Concurrency(n) => Some((*n, c)),
            Level::Rate(_) => None,
        })
        .collect();
    let mut out: Vec<Capacity> = (0..m.rows.len())
        .map(|r| {
            let seen: Vec<(u64, usize, Verdict)> = cols
                .iter()
                .filter_map(|&(n, c)| verdict(a, r, c).map(|v| (n, c, v)))
                .collect();
            let at = seen
                .iter()
                .rev()
                .find(|s| s.2 == Verdict::Meets)
                .map(|s| (s.0, s.1));
            let next =
                at.and_then(|(n, _)| seen.iter().find(|s| s.0 > n).map(|s| (s.0, s.2.clone())));
            let misses_below = at.map_or_else(Vec::new, |(n, _)| {
                seen.iter()
                    .filter(|s| s.0 < n && s.2 != Verdict::Meets)
                    .map(|s| s.0)
                    .collect()
            });
            Capacity {
                row: r,
                at,
                next,
                goodput_req_per_s: at
                    .and_then(|(_, c)| med_at(a, r, c, "throughput.goodput_req_per_s")),
                output_tok_per_s: at
                    .and_then(|(_, c)| med_at(a, r, c, "throughput.output_tok_per_s")),
                misses_below,
                lowest: if at.is_none() {
                    seen.first().map(|s| (s.0, s.2.clone()))
                } else {
                    None
                },
            }
        })
        .collect();
    let key = |c: &Capacity| {
        (
            c.at.map_or(0, |x| x.0),
            c.goodput_req_per_s.unwrap_or(f64::NEG_INFINITY),
            c.output_tok_per_s.unwrap_or(f64::NEG_INFINITY),
        )
    };
    out.sort_by(|x, y| {
        let (a0, a1, a2) = key(x);
        let (b0, b1, b2) = key(y);
        b0.cmp(&a0)
            .then(b1.total_cmp(&a1))
            .then(b2.total_cmp(&a2))
            .then(x.row.cmp(&y.row))
    });
    out
}

/// One line per config: `c=16 (c=32 misses (p99_ttft_ms 812))`.
pub fn describe(a: &Analysis, c: &Capacity) -> String {
    let Some((n, _)) = c.at else {
        return match &c.lowest {
            Some((l, v)) => format!(
                "none: below c={l}, the lowest level measured, which {}",
                verdict_text(v)
            ),
            None => "none: no closed-loop level measured".to_string(),
        };
    };
    let mut s = format!("c={n}");
    match &c.next {
        Some((k, v)) => s += &format!(", between c={n} and c={k}, which {}", verdict_text(v)),
        None => s += " or more (the highest level measured meets it)",
    }
    if let Some(g) = c.goodput_req_per_s {
        s += &format!("; goodput {} req/s", num(g));
    }
    if let Some(t) = c.output_tok_per_s {
        s += &format!("; {} output tok/s", num(t));
    }
    if !c.misses_below.is_empty() {
        let l: Vec<String> = c.misses_below.iter().map(|k| format!("c={k}")).collect();
        s += &format!(
            "; but {} below it miss (noisy or non-monotone)",
            l.join(", ")
        );
    }
    let _ = a;
    s
}

/// The section of the text output.
pub fn text(a: &Analysis, caps: &[Capacity], startup: &crate::views::startup::Startup) -> String {
    let terms: Vec<String> = a.opts.slo.iter().map(|t| t.to_string()).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\ncapacity under the SLO ({}), highest measured concurrency meeting every term, best first:",
        terms.join(",")
    );
    for (i, c) in caps.iter().enumerate() {
        let label = &a.model.rows[c.row].label;
        let _ = writeln!(
            out,
            "  {}. {label}: {}{}",
            i + 1,
            describe(a, c),
            startup.suffix(c.row)
        );
    }
    out
}

/// `details.capacity` of the summary record.
pub fn json(a: &Analysis, caps: &[Capacity]) -> Value {
    let m = &a.model;
    Value::Array(
        caps.iter()
            .map(|c| {
                json!({
                    "label": m.rows[c.row].label,
                    "config": m.rows[c.row].config,
                    "capacity_concurrency": c.at.map(|x| x.0),
                    "next_concurrency": c.next.as_ref().map(|x| x.0),
                    "next": c.next.as_ref().map(|x| verdict_text(&x.1)),
                    "goodput_req_per_s": c.goodput_req_per_s,
                    "output_tok_per_s": c.output_tok_per_s,
                    "text": describe(a, c),
                })
            })
            .collect(),
    )
}
