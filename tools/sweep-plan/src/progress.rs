//! Where a sweep stands and when it will finish (sweep(1)'s progress
//! line): from the results file, each config start's load time (its swap
//! started to its server ready, by the records' provenance stamps) and
//! bench time (ready to its last record), averaged over the starts that
//! benchmarked; the ETA is that mean times the configs of the grid that
//! have no result yet. Typed here rather than summed in bash over records.
//! A pool runs several configs at once (`Lanes`): N loads and benches at
//! a time, but K benches (a machine's GPU slots take turns to bench), so a
//! config takes the longer of (load + bench) / N and bench / K.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

use crate::grid::Grid;
use crate::results;

/// The `progress` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    #[serde(rename = "type")]
    pub tag: &'static str,
    /// The config about to run (1-based) and the grid's size.
    pub index: usize,
    pub of: usize,
    /// Configs of the grid with a result so far.
    pub done: usize,
    /// Configs without a result (the one about to run included).
    pub remaining: usize,
    /// Means over the config starts that benchmarked; absent: none yet.
    pub load_s: Option<f64>,
    pub bench_s: Option<f64>,
    pub eta_s: Option<f64>,
    /// The human line: `config 3/10, ETA 14 min (load 95 s, bench 70 s
    /// per config so far)`.
    pub line: String,
}

fn time(v: Option<&Value>) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(v?.as_str()?.trim_end_matches('Z')).ok()
}

/// One config start, by its swap.
#[derive(Default)]
struct Start {
    swapped: Option<SystemTime>,
    ready: Option<SystemTime>,
    last: Option<SystemTime>,
    benched: bool,
}

fn secs(a: Option<SystemTime>, b: Option<SystemTime>) -> Option<f64> {
    Some(b?.duration_since(a?).ok()?.as_secs_f64())
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// `95 s`, `14 min`, `2.5 h`.
pub fn human(s: f64) -> String {
    if s < 100.0 {
        format!("{} s", s.round())
    } else if s < 100.0 * 60.0 {
        format!("{} min", (s / 60.0).round())
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

/// How many configs run at once, and how many of them may bench at once.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lanes {
    pub runs: usize,
    pub benches: usize,
}

impl Default for Lanes {
    fn default() -> Self {
        Lanes {
            runs: 1,
            benches: 1,
        }
    }
}

impl Lanes {
    /// Seconds per config with load `l` and bench `b` seconds: the load
    /// of one overlaps the others' benches.
    fn per_config(self, l: f64, b: f64) -> f64 {
        let (n, k) = (self.runs.max(1) as f64, self.benches.max(1) as f64);
        ((l + b) / n).max(b / k)
    }

    fn note(self) -> String {
        match (self.runs, self.benches) {
            (0 | 1, _) => String::new(),
            (n, k) if k >= n => format!("; {n} at once"),
            (n, 1) => format!("; {n} at once, one bench at a time"),
            (n, k) => format!("; {n} at once, {k} benches at a time"),
        }
    }
}

/// Progress before config `index` of `g` runs, from the results `text`.
pub fn progress(g: &Grid, text: &str, index: usize) -> Progress {
    progress_in(g, text, index, Lanes::default())
}

/// [`progress`] for a pool running `lanes` at once.
pub fn progress_in(g: &Grid, text: &str, index: usize, lanes: Lanes) -> Progress {
    let lines = results::read(text);
    let of = g.points.len();
    let done = g
        .points
        .iter()
        .filter(|p| results::state_of(&lines, |c| p.matches(c)).is_done())
        .count();
    let mut starts: BTreeMap<String, Start> = BTreeMap::new();
    for l in &lines {
        let ours = l
            .config
            .as_ref()
            .is_some_and(|c| g.points.iter().any(|p| p.matches(c)));
        if !ours || !matches!(l.tag.as_str(), "bench" | "failure") {
            continue;
        }
        let Some(swap) = results::upstream_of(&l.raw, "swap") else {
            continue;
        };
        let started = swap.pointer("/provenance/started_at");
        let id = swap
            .get("swap_id")
            .or(started)
            .map_or_else(String::new, Value::to_string);
        let s = starts.entry(id).or_default();
        s.swapped = s.swapped.or(time(started));
        let ready = results::upstream_of(&l.raw, "ready")
            .and_then(|r| time(r.pointer("/provenance/finished_at")));
        s.ready = s.ready.or(ready);
        s.last = s.last.max(time(l.raw.pointer("/provenance/finished_at")));
        s.benched |= l.tag == "bench";
    }
    let timed: Vec<&Start> = starts.values().filter(|s| s.benched).collect();
    let loads: Vec<f64> = timed
        .iter()
        .filter_map(|s| secs(s.swapped, s.ready))
        .collect();
    let benches: Vec<f64> = timed.iter().filter_map(|s| secs(s.ready, s.last)).collect();
    let (load_s, bench_s) = (mean(&loads), mean(&benches));
    let remaining = of - done;
    let eta_s = match (load_s, bench_s) {
        (Some(l), Some(b)) => Some(lanes.per_config(l, b) * remaining as f64),
        _ => None,
    };
    let line = match (eta_s, load_s, bench_s) {
        (Some(e), Some(l), Some(b)) => format!(
            "config {index}/{of}, ETA {} (load {}, bench {} per config so far{})",
            human(e),
            human(l),
            human(b),
            lanes.note()
        ),
        _ => format!("config {index}/{of}, ETA unknown (no config timed yet)"),
    };
    Progress {
        tag: "progress",
        index,
        of,
        done,
        remaining,
        load_s,
        bench_s,
        eta_s,
        line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(v: &str, id: &str, t0: &str, ready: &str, end: &str) -> String {
        format!(
            r#"{{"type":"bench","config":{{"k":"{v}"}},"provenance":{{"finished_at":"{end}"}},"upstream":{{"type":"ready","provenance":{{"finished_at":"{ready}"}},"upstream":{{"type":"swap","swap_id":"{id}","provenance":{{"started_at":"{t0}"}}}}}}}}"#
        )
    }

    #[test]
    fn eta_is_the_mean_start_times_the_configs_left() {
        let g = crate::grid::expand(&["k".into()], &["1,2,3,4,5".into()]).unwrap();
        let t = |s: &str| format!("2026-01-01T00:{s}.000Z");
        let text = [
            // Config 1: load 90 s, bench 60 s over two levels.
            bench("1", "a", &t("00:00"), &t("01:30"), &t("02:00")),
            bench("1", "a", &t("00:00"), &t("01:30"), &t("02:30")),
            // Config 2: load 100 s, bench 80 s.
            bench("2", "b", &t("03:00"), &t("04:40"), &t("06:00")),
            // Config 3 failed at load: done, but no start to time.
            r#"{"type":"failure","config":{"k":"3"},"kind":"oom"}"#.into(),
            r#"{"type":"bench","config":{"other":"1"}}"#.into(),
        ]
        .join("\n");
        let p = progress(&g, &text, 4);
        assert_eq!((p.done, p.remaining, p.of), (3, 2, 5));
        assert_eq!(p.load_s, Some(95.0));
        assert_eq!(p.bench_s, Some(70.0));
        assert_eq!(p.eta_s, Some(330.0));
        assert_eq!(
            p.line,
            "config 4/5, ETA 6 min (load 95 s, bench 70 s per config so far)"
        );
    }

    #[test]
    fn a_pool_overlaps_loads_with_benches() {
        let g = crate::grid::expand(&["k".into()], &["1,2,3,4,5".into()]).unwrap();
        let t = |s: &str| format!("2026-01-01T00:{s}.000Z");
        // Load 8 s, bench 4 s.
        let text = bench("1", "a", &t("00:00"), &t("00:08"), &t("00:12"));
        let lanes = |runs, benches| Lanes { runs, benches };
        let eta = |l| progress_in(&g, &text, 2, l).eta_s.unwrap();
        assert_eq!(eta(lanes(1, 1)), 48.0);
        // Two slots, benches apart: (8 + 4) / 2 = 6 s a config.
        assert_eq!(eta(lanes(2, 1)), 24.0);
        // Four slots, benches apart: the benches are the bound, 4 s.
        assert_eq!(eta(lanes(4, 1)), 16.0);
        assert_eq!(eta(lanes(4, 4)), 12.0);
        let p = progress_in(&g, &text, 2, lanes(3, 1));
        assert!(
            p.line
                .ends_with("per config so far; 3 at once, one bench at a time)"),
            "{}",
            p.line
        );
        assert!(progress_in(&g, &text, 2, lanes(2, 2))
            .line
            .ends_with("; 2 at once)"));
    }

    #[test]
    fn nothing_timed_says_so() {
        let g = crate::grid::expand(&["k".into()], &["1,2".into()]).unwrap();
        let p = progress(&g, "", 1);
        assert_eq!(p.eta_s, None);
        assert_eq!(p.line, "config 1/2, ETA unknown (no config timed yet)");
        assert_eq!(human(30.4), "30 s");
        assert_eq!(human(840.0), "14 min");
        assert_eq!(human(9000.0), "2.5 h");
    }
}
