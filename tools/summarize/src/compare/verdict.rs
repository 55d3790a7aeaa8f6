//! One row of a comparison: a config x level x metric's before, after,
//! change, 95% interval and verdict, with the method that gave the
//! interval and, when there is no verdict, why.

use serde_json::Value;
use sweepkit::records::histogram::codec::{self, Hist};

use super::load::{Cell, Side};
use super::stats::{self, Change};
use crate::input::histogram::{hist_of, latency_stat, Statistic};
use crate::input::Body;
use crate::metric::{self, Better};

/// What the comparison says of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Better,
    Worse,
    /// The interval holds zero.
    NoChange,
    /// One value a side and nothing that measures the noise.
    NoiseUnknown,
    NotComparable,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoChange => "no change beyond noise",
            Verdict::NoiseUnknown => "noise unknown",
            Verdict::NotComparable => "not comparable",
        }
    }

    /// The machine name (`--format json`).
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoChange => "no_change",
            Verdict::NoiseUnknown => "noise_unknown",
            Verdict::NotComparable => "not_comparable",
        }
    }
}

/// How the interval was had.
pub const BY_RUNS: &str = "runs";
pub const BY_REQUESTS: &str = "requests";
pub const BY_WINDOWS: &str = "until_stable";

/// One compared config x level x metric.
#[derive(Debug, Clone)]
pub struct Row {
    pub config: String,
    pub level: String,
    pub metric: String,
    pub before: Option<f64>,
    pub after: Option<f64>,
    pub change: Option<Change>,
    pub verdict: Verdict,
    /// Why there is no verdict (not comparable, noise unknown).
    pub why: Option<String>,
    /// `runs`, `requests` or `until_stable`; None without an interval.
    pub method: Option<&'static str>,
    /// Values came from merged histograms (else from the records' stats).
    pub pooled: bool,
    /// Runs (bench records) a side.
    pub runs: (usize, usize),
}

/// The fewest samples a statistic needs: a p99 of under 100 is the max.
fn needed(stat: Statistic) -> u64 {
    match stat {
        Statistic::Mean => 2,
        Statistic::Percentile(q) => ((100.0 / (100.0 - q).max(1e-9)).ceil() as u64).max(2),
    }
}

/// What a cell's records on one side hold for a metric.
struct Values {
    recs: Vec<Value>,
    /// Reasons the side failed there (failure records).
    failures: Vec<String>,
}

fn values(side: &Side, ix: &[usize]) -> Values {
    let mut v = Values {
        recs: Vec::new(),
        failures: Vec::new(),
    };
    for &i in ix {
        match &side.obs[i].body {
            Body::Bench(r) => v.recs.push(r.clone()),
            Body::Failure(f) => v.failures.push(crate::wording::failure_label(f)),
        }
    }
    v
}

/// What differs in what the two sides sent, if anything (the first
/// record of each side speaks for it: a side is one workload).
pub fn workload_difference(b: &Value, a: &Value) -> Option<String> {
    const FIELDS: [(&str, &str); 9] = [
        ("server.model", "model"),
        ("load.endpoint", "endpoint"),
        ("load.stream", "streaming"),
        ("load.input_tokens", "prompt lengths (input_tokens)"),
        ("load.max_tokens", "output lengths (max_tokens)"),
        ("load.ignore_eos", "ignore_eos"),
        ("load.prompts", "prompts"),
        ("load.workload.kind", "workload"),
        ("load.workload.sha256", "workload (prompts or trace file)"),
    ];
    FIELDS.iter().find_map(|(path, what)| {
        let (x, y) = (
            super::load::field_text(b, path),
            super::load::field_text(a, path),
        );
        (x != y).then(|| {
            let t = |v: Option<String>| v.unwrap_or_else(|| "unset".into());
            format!("different {what}: {} -> {}", t(x), t(y))
        })
    })
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Compare one metric at one cell.
pub fn row(before: &Side, after: &Side, cell: &Cell, path: &str) -> Row {
    let (b, a) = (values(before, &cell.before), values(after, &cell.after));
    let mut r = Row {
        config: cell.label.clone(),
        level: cell.level.label(),
        metric: path.to_string(),
        before: None,
        after: None,
        change: None,
        verdict: Verdict::NotComparable,
        why: None,
        method: None,
        pooled: false,
        runs: (b.recs.len(), a.recs.len()),
    };
    for (side, v) in [("before", &b), ("after", &a)] {
        if v.recs.is_empty() {
            let why = v.failures.first().cloned().unwrap_or_default();
            r.why = Some(format!("failed {side}: {why}"));
            return r;
        }
    }
    if let Some(why) = workload_difference(&b.recs[0], &a.recs[0]) {
        r.why = Some(why);
        return r;
    }
    match latency_stat(path) {
        Some((block, stat)) => latency(&mut r, &b, &a, block, stat, path),
        None => scalar(&mut r, &b, &a, path),
    }
    r
}

/// Fill `r`'s verdict from its change and the metric's direction.
fn judge(r: &mut Row, c: Change, method: &'static str) {
    r.change = Some(c);
    r.method = Some(method);
    let up_is_better = metric::direction(&r.metric) == Better::Higher;
    r.verdict = match c.direction() {
        None => Verdict::NoChange,
        Some(up) if up == up_is_better => Verdict::Better,
        Some(_) => Verdict::Worse,
    };
}

fn latency(r: &mut Row, b: &Values, a: &Values, block: &str, stat: Statistic, path: &str) {
    let hb: Option<Vec<Hist>> = b.recs.iter().map(|x| hist_of(x, block)).collect();
    let ha: Option<Vec<Hist>> = a.recs.iter().map(|x| hist_of(x, block)).collect();
    let (Some(hb), Some(ha)) = (hb, ha) else {
        return scalar(r, b, a, path);
    };
    let (mb, ma) = (codec::merge(&hb), codec::merge(&ha));
    let (bb, ba) = (codec::buckets_ms(&mb), codec::buckets_ms(&ma));
    r.pooled = true;
    r.before = stat.of(&bb);
    r.after = stat.of(&ba);
    let need = needed(stat);
    let few: Vec<String> = [("before", mb.len()), ("after", ma.len())]
        .iter()
        .filter(|(_, n)| *n < need)
        .map(|(s, n)| format!("{n} {s}"))
        .collect();
    if !few.is_empty() {
        r.why = Some(format!(
            "too few samples to tell: {} needs {need}, got {}",
            path.split('.').nth(1).unwrap_or(path),
            few.join(", ")
        ));
        return;
    }
    let (Some(x), Some(y)) = (r.before, r.after) else {
        return;
    };
    if !(x > 0.0 && y > 0.0) {
        r.why = Some("a side is zero: no ratio".into());
        return;
    }
    let per_run = |hs: &[Hist]| -> Vec<f64> {
        hs.iter()
            .filter_map(|h| stat.of(&codec::buckets_ms(h)))
            .collect()
    };
    let center = Some((y / x).ln());
    if hb.len() + ha.len() >= 3 {
        if let Some(c) = stats::runs_interval(&per_run(&hb), &per_run(&ha), center) {
            return judge(r, c, BY_RUNS);
        }
    }
    let seed = fnv(&format!("{}|{}|{}", r.config, r.level, path));
    match stats::bootstrap_interval(&bb, &ba, stat, seed) {
        Some(c) => judge(r, c, BY_REQUESTS),
        None => r.why = Some("no interval: a side is zero".into()),
    }
}

/// A metric read from each record as a number: throughput, counts, spec
/// figures, or a latency without histograms (older records).
fn scalar(r: &mut Row, b: &Values, a: &Values, path: &str) {
    let nums = |v: &Values| -> Vec<f64> {
        v.recs
            .iter()
            .filter_map(|x| metric::lookup(x, path))
            .collect()
    };
    let (xb, xa) = (nums(b), nums(a));
    if xb.is_empty() || xa.is_empty() {
        r.why = Some(format!("no {path} on one side"));
        return;
    }
    let (x, y) = (mean(&xb), mean(&xa));
    r.before = Some(x);
    r.after = Some(y);
    if !(x > 0.0 && y > 0.0) {
        r.change = stats_change_only(x, y);
        r.verdict = Verdict::NoiseUnknown;
        r.why = Some("a side is zero: no ratio".into());
        return;
    }
    if xb.len() + xa.len() >= 3 {
        if let Some(c) = stats::runs_interval(&xb, &xa, Some((y / x).ln())) {
            return judge(r, c, BY_RUNS);
        }
    }
    if let Some(c) = windows(&b.recs[0], &a.recs[0], path, (x, y)) {
        return judge(r, c, BY_WINDOWS);
    }
    r.change = stats_change_only(x, y);
    r.verdict = Verdict::NoiseUnknown;
    r.why = Some("noise unknown: one value a side; give --repeat or --until-stable".into());
}

fn stats_change_only(x: f64, y: f64) -> Option<Change> {
    sweepkit::stats::change_pct(y, x).map(|p| Change {
        pct: p,
        lo_pct: f64::NAN,
        hi_pct: f64::NAN,
    })
}

/// One `--until-stable` run a side: the output throughput's batch means
/// intervals.
fn windows(b: &Value, a: &Value, path: &str, (x, y): (f64, f64)) -> Option<Change> {
    if !path.ends_with(".output_tok_per_s") {
        return None;
    }
    let rel = |rec: &Value, v: f64| -> Option<(f64, f64, f64)> {
        let s = rec.get("stability")?;
        let hw = s.get("half_width_pct")?.as_f64()? / 100.0;
        let batches = s.get("batches")?.as_f64()?;
        (batches >= 2.0).then_some((v, hw, batches - 1.0))
    };
    stats::welch_interval(rel(b, x)?, rel(a, y)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_metrics_and_their_needs() {
        assert_eq!(
            latency_stat("ttft_ms.p99"),
            Some(("ttft_ms", Statistic::Percentile(99.0)))
        );
        assert_eq!(
            latency_stat("e2e_ms.mean"),
            Some(("e2e_ms", Statistic::Mean))
        );
        assert_eq!(latency_stat("queue_ms.p99"), None, "no histogram");
        assert_eq!(latency_stat("throughput.output_tok_per_s"), None);
        assert_eq!(needed(Statistic::Percentile(99.0)), 100);
        assert_eq!(needed(Statistic::Percentile(95.0)), 20);
        assert_eq!(needed(Statistic::Percentile(50.0)), 2);
    }

    #[test]
    fn workload_differences_are_named() {
        let b = serde_json::json!({"load": {"input_tokens": 128, "max_tokens": 64}});
        let a = serde_json::json!({"load": {"input_tokens": 256, "max_tokens": 64}});
        assert_eq!(
            workload_difference(&b, &a).unwrap(),
            "different prompt lengths (input_tokens): 128 -> 256"
        );
        assert_eq!(workload_difference(&b, &b), None);
    }
}
