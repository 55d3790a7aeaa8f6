//! How sure each cell is: a 95% interval where a cell has repeats (or a
//! `loadgen --until-stable` batch-means interval), percentiles measured on
//! too few requests, and picks that are within noise of another cell.
//! The numbers come from `interval`; this module places them in the table.

use serde_json::Value;

use crate::analysis::group::Model;
use crate::analysis::interval::{self, LEVEL};
use crate::input::{Body, Obs};
use crate::metric::lookup;
use crate::wording::num;

/// Where a cell's interval came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Student t over the cell's repeats (`interval::t_interval`).
    TRepeats,
    /// One run's `--until-stable` interval (non-overlapping batch means of
    /// the steady state, Law & Kelton; loadgen(1)), as a fraction of the
    /// level's throughput.
    BatchMeans,
}

/// A cell's 95% interval: its centre and half-width in the metric's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellInterval {
    pub centre: f64,
    pub half_width: f64,
    /// Repeats (t) or batches (batch means) it rests on.
    pub n: usize,
    pub method: Method,
}

/// A percentile measured on fewer requests than it needs.
#[derive(Debug, Clone, PartialEq)]
pub struct FewRequests {
    /// The percentile (99 for `ttft_ms.p99`).
    pub pct: f64,
    /// The fewest requests of the cell's runs.
    pub count: u64,
    /// `interval::min_requests(pct)`.
    pub need: u64,
}

/// Per cell (`[row][level]`): the interval and the few-requests flag.
#[derive(Debug, Clone, Default)]
pub struct Noise {
    pub ci: Vec<Vec<Option<CellInterval>>>,
    pub few: Vec<Vec<Option<FewRequests>>>,
}

impl Noise {
    /// True when some cell has an interval (the legend explains ±).
    pub fn any_ci(&self) -> bool {
        self.ci.iter().flatten().any(Option::is_some)
    }

    pub fn any_batch_means(&self) -> bool {
        self.ci
            .iter()
            .flatten()
            .flatten()
            .any(|c| c.method == Method::BatchMeans)
    }

    pub fn any_few(&self) -> bool {
        self.few.iter().flatten().any(Option::is_some)
    }
}

/// The bench records of a cell's runs.
fn records<'a>(model: &Model, obs: &'a [Obs], r: usize, c: usize) -> Vec<&'a Value> {
    model.cells[r][c]
        .runs
        .iter()
        .filter_map(|&i| match &obs[i].body {
            Body::Bench(v) => Some(v),
            Body::Failure(_) => None,
        })
        .collect()
}

/// Every cell's bench records, cloned (`[row][level]`).
pub fn cell_records(model: &Model, obs: &[Obs]) -> Vec<Vec<Vec<Value>>> {
    (0..model.rows.len())
        .map(|r| {
            (0..model.levels.len())
                .map(|c| records(model, obs, r, c).into_iter().cloned().collect())
                .collect()
        })
        .collect()
}

/// Every cell's interval and few-requests flag for the metric at `path`.
pub fn of(model: &Model, obs: &[Obs], path: &str) -> Noise {
    let mut noise = Noise::default();
    for r in 0..model.rows.len() {
        let mut ci = Vec::new();
        let mut few = Vec::new();
        for c in 0..model.levels.len() {
            let recs = records(model, obs, r, c);
            ci.push(cell_interval(&model.cells[r][c].values, &recs, path));
            few.push(few_requests(&recs, path));
        }
        noise.ci.push(ci);
        noise.few.push(few);
    }
    noise
}

/// The t interval over repeats; with one run, the batch-means interval of
/// an output-throughput metric when loadgen measured one.
fn cell_interval(values: &[f64], recs: &[&Value], path: &str) -> Option<CellInterval> {
    if let Some(t) = interval::t_interval(values, LEVEL) {
        return Some(CellInterval {
            centre: t.mean,
            half_width: t.half_width,
            n: t.n,
            method: Method::TRepeats,
        });
    }
    let throughput = matches!(
        path,
        "throughput.output_tok_per_s" | "steady.output_tok_per_s"
    );
    let (&value, [rec]) = (values.first()?, recs) else {
        return None;
    };
    if !throughput {
        return None;
    }
    let pct = lookup(rec, "stability.half_width_pct")?;
    let batches = lookup(rec, "stability.batches").unwrap_or(0.0);
    Some(CellInterval {
        centre: value,
        half_width: value.abs() * pct / 100.0,
        n: batches as usize,
        method: Method::BatchMeans,
    })
}

/// The flag for a percentile metric whose runs had fewer requests than it
/// needs (the fewest of the runs' `count` under the same block).
pub fn few_requests(recs: &[&Value], path: &str) -> Option<FewRequests> {
    let pct = interval::percentile_of(path)?;
    let block = path.rsplit_once('.')?.0;
    let count = recs
        .iter()
        .filter_map(|r| lookup(r, &format!("{block}.count")))
        .map(|c| c as u64)
        .min()?;
    let need = interval::min_requests(pct);
    (count < need).then_some(FewRequests { pct, count, need })
}

/// The `± 12` after a cell's value (empty without an interval).
pub fn ci_text(noise: &Noise, r: usize, c: usize) -> String {
    match &noise.ci[r][c] {
        Some(i) if i.method == Method::BatchMeans => format!("± {}b", num(i.half_width)),
        Some(i) => format!("± {}", num(i.half_width)),
        None => String::new(),
    }
}

/// `p99 of 40 requests` for a flagged cell.
pub fn few_text(f: &FewRequests) -> String {
    format!(
        "p{} of {} requests",
        crate::input::level::trim_float(f.pct),
        f.count
    )
}

/// The legend's words for ± and the few-requests mark.
pub fn legend(noise: &Noise, few_mark: &str) -> String {
    let mut s = String::new();
    if noise.any_ci() {
        s += "; ± H: half-width of the 95% interval of the mean (Student t over the \
              repeats, n - 1 degrees of freedom)";
        if noise.any_batch_means() {
            s += "; H b: one run's --until-stable batch-means interval";
        }
    }
    if noise.any_few() {
        s += &format!(
            "; {few_mark}: a percentile of fewer requests than it needs \
             (p99 100, p95 20, p90 10): it is near the slowest request"
        );
    }
    s
}

/// Warnings for cells whose percentile rests on too few requests.
pub fn few_warnings(model: &Model, noise: &Noise, path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (r, row) in noise.few.iter().enumerate() {
        for (c, f) in row.iter().enumerate() {
            if let Some(f) = f {
                out.push(format!(
                    "{} at {}: {} is a {} (fewer than {}): near the slowest request, \
                     not a percentile; run more requests (--requests)",
                    model.rows[r].label,
                    model.levels[c].label(),
                    path,
                    few_text(f),
                    f.need
                ));
            }
        }
    }
    out
}

/// The cells whose intervals overlap the interval of cell `win` among
/// `cands` (`(row, level)`): the pick is within noise of each.
pub fn within_noise_of(
    noise: &Noise,
    win: (usize, usize),
    cands: &[(usize, usize)],
) -> Vec<(usize, usize)> {
    let Some(w) = noise.ci[win.0][win.1] else {
        return Vec::new();
    };
    cands
        .iter()
        .copied()
        .filter(|&x| x != win)
        .filter(|&(r, c)| {
            noise.ci[r][c].is_some_and(|o| {
                interval::overlap((w.centre, w.half_width), (o.centre, o.half_width))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repeats_give_a_t_interval() {
        let i = cell_interval(&[3150.0, 2950.0, 3200.0], &[], "x").unwrap();
        assert_eq!(i.method, Method::TRepeats);
        assert!((i.half_width - 328.6208).abs() < 1e-3, "{}", i.half_width);
    }

    #[test]
    fn one_stable_run_gives_its_batch_means_interval() {
        let rec = json!({"stability": {"half_width_pct": 2.0, "batches": 10}});
        let i = cell_interval(&[500.0], &[&rec], "throughput.output_tok_per_s").unwrap();
        assert_eq!(i.method, Method::BatchMeans);
        assert!((i.half_width - 10.0).abs() < 1e-9);
        assert_eq!(i.n, 10);
        // The interval is of throughput: not carried to a latency.
        assert_eq!(cell_interval(&[500.0], &[&rec], "ttft_ms.p99"), None);
        assert_eq!(
            cell_interval(&[500.0], &[], "throughput.output_tok_per_s"),
            None
        );
    }

    #[test]
    fn few_requests_flag_a_percentile() {
        let rec = json!({"ttft_ms": {"count": 40, "p99": 120.0}});
        let f = few_requests(&[&rec], "ttft_ms.p99").unwrap();
        assert_eq!(few_text(&f), "p99 of 40 requests");
        assert_eq!(f.need, 100);
        assert_eq!(few_requests(&[&rec], "ttft_ms.p50"), None);
        assert_eq!(few_requests(&[&rec], "ttft_ms.mean"), None);
        let big = json!({"ttft_ms": {"count": 100}});
        assert_eq!(few_requests(&[&big], "ttft_ms.p99"), None);
        // The fewest of the repeats counts.
        assert!(few_requests(&[&big, &rec], "ttft_ms.p99").is_some());
    }
}
