//! Load levels: `c=N` for a closed loop at concurrency N, `rate=R` for an
//! open loop at R requests per second. Closed levels sort before open ones,
//! each by number.

use std::cmp::Ordering;

use serde_json::Value;

/// One load level.
#[derive(Debug, Clone, Copy)]
pub enum Level {
    Concurrency(u64),
    Rate(f64),
}

impl Level {
    /// `c=16` or `rate=2.5`.
    pub fn label(&self) -> String {
        match self {
            Level::Concurrency(c) => format!("c={c}"),
            Level::Rate(r) => format!("rate={}", trim_float(*r)),
        }
    }

    /// Parse a label as written by [`Level::label`] (for `--weights`).
    pub fn parse(s: &str) -> Option<Level> {
        let (k, v) = s.trim().split_once('=')?;
        match k.trim() {
            "c" | "concurrency" => v.trim().parse().ok().map(Level::Concurrency),
            "rate" | "r" => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite() && *r > 0.0)
                .map(Level::Rate),
            _ => None,
        }
    }

    /// The level of a bench record: `load.rate_rps` for an open loop
    /// (`load.mode` = `open`), else `load.concurrency`, else whichever exists.
    pub fn of_record(rec: &Value) -> Option<Level> {
        let load = crate::input::record_view::Head::of(rec).load.0?;
        let conc = load.concurrency.0.map(Level::Concurrency);
        let rate = load
            .rate_rps
            .0
            .filter(|r| r.is_finite() && *r > 0.0)
            .map(Level::Rate);
        let open = load.mode.0 == Some(sweepkit::records::LoadMode::Open);
        if open {
            rate.or(conc)
        } else {
            conc.or(rate)
        }
    }

    /// The numeric value (concurrency or rate), for plotting.
    pub fn value(&self) -> f64 {
        match self {
            Level::Concurrency(c) => *c as f64,
            Level::Rate(r) => *r,
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self, Level::Rate(_))
    }
}

/// `4` rather than `4.0`; other values as Rust prints them.
pub fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

impl PartialEq for Level {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Level {}

impl PartialOrd for Level {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Level {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Level::Concurrency(a), Level::Concurrency(b)) => a.cmp(b),
            (Level::Rate(a), Level::Rate(b)) => a.total_cmp(b),
            (Level::Concurrency(_), Level::Rate(_)) => Ordering::Less,
            (Level::Rate(_), Level::Concurrency(_)) => Ordering::Greater,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_parse_back_and_sort() {
        for l in [Level::Concurrency(16), Level::Rate(2.5), Level::Rate(4.0)] {
            assert_eq!(Level::parse(&l.label()), Some(l));
        }
        assert_eq!(Level::Rate(4.0).label(), "rate=4");
        let mut v = vec![
            Level::Rate(1.0),
            Level::Concurrency(64),
            Level::Concurrency(4),
        ];
        v.sort();
        assert_eq!(
            v,
            vec![
                Level::Concurrency(4),
                Level::Concurrency(64),
                Level::Rate(1.0)
            ]
        );
    }

    #[test]
    fn level_of_record_prefers_mode() {
        let closed = json!({"load": {"mode": "closed", "concurrency": 8}});
        assert_eq!(Level::of_record(&closed), Some(Level::Concurrency(8)));
        let open = json!({"load": {"mode": "open", "concurrency": 8, "rate_rps": 2.0}});
        assert_eq!(Level::of_record(&open), Some(Level::Rate(2.0)));
        assert_eq!(Level::of_record(&json!({"load": {}})), None);
        // Numbers as text (CSV input) count; other types, a float
        // concurrency and a rate of 0 do not.
        let text = json!({"load": {"mode": "open", "concurrency": "8", "rate_rps": " 2.5"}});
        assert_eq!(Level::of_record(&text), Some(Level::Rate(2.5)));
        let closed_text = json!({"load": {"concurrency": "16"}});
        assert_eq!(Level::of_record(&closed_text), Some(Level::Concurrency(16)));
        let odd = json!({"load": {"concurrency": 8.5, "rate_rps": 0, "mode": 3}});
        assert_eq!(Level::of_record(&odd), None);
        assert_eq!(Level::of_record(&json!({"load": "c=8"})), None);
    }
}
