//! One cell's server figures (`server_metrics`, `gpu` in its bench
//! records): each the median over the cell's runs, absent where no run
//! has it, and how they read in a note.

use serde_json::Value;
use sweepkit::records::ServerMetrics;

use crate::analysis::Analysis;
use sweepkit::stats::median;

/// A cell's measured server figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Measured {
    /// KV cache in use, 0 to 1: the level's peak and mean.
    pub kv_peak: Option<f64>,
    pub kv_mean: Option<f64>,
    /// Requests waiting in the server's queue, on average.
    pub waiting_mean: Option<f64>,
    pub running_mean: Option<f64>,
    /// Requests preempted (SGLang: retracted) during the level.
    pub preemptions: Option<f64>,
}

/// The typed block of one record, if it has one.
pub fn server_metrics(rec: &Value) -> Option<ServerMetrics> {
    serde_json::from_value(rec.get("server_metrics")?.clone()).ok()
}

/// Cell (`r`, `c`)'s figures; None when no run recorded server metrics.
pub fn cell(a: &Analysis, r: usize, c: usize) -> Option<Measured> {
    let ms: Vec<ServerMetrics> = a.records[r][c].iter().filter_map(server_metrics).collect();
    if ms.is_empty() {
        return None;
    }
    let med = |f: &dyn Fn(&ServerMetrics) -> Option<f64>| -> Option<f64> {
        let xs: Vec<f64> = ms.iter().filter_map(f).collect();
        median(&xs)
    };
    Some(Measured {
        kv_peak: med(&|m| m.kv_cache_usage_ratio.as_ref().map(|g| g.peak)),
        kv_mean: med(&|m| m.kv_cache_usage_ratio.as_ref().map(|g| g.mean)),
        waiting_mean: med(&|m| m.waiting_requests.as_ref().map(|g| g.mean)),
        running_mean: med(&|m| m.running_requests.as_ref().map(|g| g.mean)),
        preemptions: med(&|m| m.preemptions.as_ref().map(|c| c.increase)),
    })
}

/// A count of requests as a note says it: whole, or to one decimal.
fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

/// KV cache in use at or above this share of its size counts as full.
pub const KV_FULL: f64 = 0.95;

impl Measured {
    /// Was the server out of KV cache here: full at its peak, with
    /// requests preempted or waiting (on average half a request or more)?
    /// None without a KV figure.
    pub fn kv_bound(&self) -> Option<bool> {
        let full = self.kv_peak? >= KV_FULL;
        let pushed_back = self.preemptions.is_some_and(|p| p > 0.0)
            || self.waiting_mean.is_some_and(|w| w >= 0.5);
        Some(full && pushed_back)
    }

    /// Do two cells' figures differ enough to tell a reader something: KV
    /// peaks 5 points apart with one at 80% or more (below, the cache was
    /// not what held either back), a preemption count apart, or half a
    /// request apart in the queue on average?
    pub fn differs(&self, o: &Measured) -> bool {
        let apart = |a: Option<f64>, b: Option<f64>, by: f64| {
            a.zip(b).is_some_and(|(a, b)| (a - b).abs() >= by)
        };
        let pressed = [self.kv_peak, o.kv_peak]
            .iter()
            .flatten()
            .any(|&p| p >= 0.8);
        (pressed && apart(self.kv_peak, o.kv_peak, 0.05))
            || apart(self.preemptions, o.preemptions, 1.0)
            || apart(self.waiting_mean, o.waiting_mean, 0.5)
    }

    /// The figures this cell has, in note order, as (long, short) words:
    /// `KV cache 99% peak` / `99%`.
    fn parts(&self, like: &Measured) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let pct = |x: f64| format!("{:.0}%", x * 100.0);
        let dash = || "-".to_string();
        if self.kv_peak.is_some() || like.kv_peak.is_some() {
            let long = self.kv_peak.map_or("KV cache not reported".into(), |x| {
                format!("KV cache {} peak", pct(x))
            });
            out.push((long, self.kv_peak.map_or_else(dash, pct)));
        }
        if self.preemptions.is_some() || like.preemptions.is_some() {
            let long = self
                .preemptions
                .map_or("preemptions not reported".into(), |x| {
                    format!("{} preemptions", num(x))
                });
            out.push((long, self.preemptions.map_or_else(dash, num)));
        }
        if self.waiting_mean.is_some() || like.waiting_mean.is_some() {
            let long = self.waiting_mean.map_or("queue not reported".into(), |x| {
                format!("{} waiting on average", num(x))
            });
            out.push((long, self.waiting_mean.map_or_else(dash, num)));
        }
        out
    }

    /// `KV cache 99% peak, 41 preemptions, 12 waiting on average` and the
    /// other cell's same figures, `78%, 0, 0`.
    pub fn against(&self, other: &Measured) -> (String, String) {
        let mine: Vec<String> = self.parts(other).into_iter().map(|p| p.0).collect();
        let theirs: Vec<String> = other.parts(self).into_iter().map(|p| p.1).collect();
        (mine.join(", "), theirs.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_campaigns_note_reads_as_the_issue_asks() {
        let deep = Measured {
            kv_peak: Some(0.99),
            waiting_mean: Some(12.0),
            preemptions: Some(41.0),
            ..Measured::default()
        };
        let shallow = Measured {
            kv_peak: Some(0.78),
            waiting_mean: Some(0.0),
            preemptions: Some(0.0),
            ..Measured::default()
        };
        assert_eq!(
            deep.against(&shallow),
            (
                "KV cache 99% peak, 41 preemptions, 12 waiting on average".to_string(),
                "78%, 0, 0".to_string()
            )
        );
        assert_eq!(deep.kv_bound(), Some(true));
        assert_eq!(shallow.kv_bound(), Some(false));
        assert!(deep.differs(&shallow));
        // 6% against 14%: neither was held back by its cache.
        let low = |p| Measured {
            kv_peak: Some(p),
            waiting_mean: Some(0.0),
            ..Measured::default()
        };
        assert!(!low(0.06).differs(&low(0.14)));
        assert!(low(0.78).differs(&low(0.86)));
        // SGLang publishes no preemption counter until one happened.
        let sg = Measured {
            preemptions: None,
            ..shallow.clone()
        };
        assert_eq!(sg.against(&deep).1, "99%, 41, 12");
        assert_eq!(
            sg.against(&deep).0,
            "KV cache 78% peak, preemptions not reported, 0 waiting on average"
        );
        assert_eq!(deep.against(&sg).1, "78%, -, 0");
        assert_eq!(Measured::default().kv_bound(), None);
    }
}
