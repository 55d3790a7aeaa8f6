//! What each slot of a machine is doing: a small log per machine
//! (`RESULTS.fleet/activity-MACHINE.jsonl`), one line per change, appended
//! in one write by the slot's bench stage (`sweep-plan slot-bench`): it
//! marks `loading` as its pipe starts, `idle` once the server is ready (or
//! its stage gave up), `benchmarking` while loadgen measures, `idle`
//! again after. A mark holds till that slot's next one, so what the other
//! slots did during a level is read back for its record's window.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sweepkit::exit::Exit;
use sweepkit::records::{SlotActivity, SlotBeside};

use crate::results;

/// One change of one slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Mark {
    /// Seconds since the Unix epoch.
    pub t: f64,
    pub slot: String,
    pub gpus: Option<String>,
    pub activity: SlotActivity,
}

/// Seconds since the Unix epoch of `t`.
pub fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A slot's own marks go to the log at `path`.
#[derive(Debug, Clone)]
pub struct Log {
    pub path: String,
    pub slot: String,
    pub gpus: Option<String>,
}

impl Log {
    /// Mark this slot as doing `a` from now.
    pub fn mark(&self, a: SlotActivity) -> Result<(), Exit> {
        let m = Mark {
            t: unix(SystemTime::now()),
            slot: self.slot.clone(),
            gpus: self.gpus.clone(),
            activity: a,
        };
        results::append_records(&self.path, &[m]).map(|_| ())
    }

    /// Every mark in the log (a torn or foreign line is skipped).
    pub fn read(&self) -> Vec<Mark> {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// What each slot but `me` did between `t0` and `t1` (seconds): every
/// activity whose mark holds at some time in the window, each once, in
/// order; slots in the order they first marked.
pub fn beside(marks: &[Mark], me: &str, t0: f64, t1: f64) -> Vec<SlotBeside> {
    let mut out: Vec<SlotBeside> = Vec::new();
    for (i, m) in marks.iter().enumerate() {
        if m.slot == me || m.t > t1 {
            continue;
        }
        let until = marks[i + 1..]
            .iter()
            .find(|n| n.slot == m.slot)
            .map_or(f64::INFINITY, |n| n.t);
        if until <= t0 {
            continue;
        }
        let b = match out.iter_mut().position(|b| b.slot == m.slot) {
            Some(k) => &mut out[k],
            None => {
                out.push(SlotBeside {
                    slot: m.slot.clone(),
                    gpus: m.gpus.clone(),
                    activity: Vec::new(),
                });
                out.last_mut().expect("just pushed")
            }
        };
        if !b.activity.contains(&m.activity) {
            b.activity.push(m.activity.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use SlotActivity as A;

    fn m(t: f64, slot: &str, a: A) -> Mark {
        Mark {
            t,
            slot: slot.into(),
            gpus: Some(format!("g{slot}")),
            activity: a,
        }
    }

    #[test]
    fn the_other_slots_activity_in_a_window() {
        let marks = [
            m(0.0, "0", A::Loading),
            m(1.0, "1", A::Loading),
            m(8.0, "0", A::Idle),
            m(8.1, "0", A::Benchmarking),
            m(9.0, "1", A::Idle),
            m(12.0, "0", A::Idle),
            m(12.1, "1", A::Benchmarking),
            m(12.2, "0", A::Loading),
            m(16.0, "1", A::Idle),
        ];
        // Slot 0's bench, 8.1..12: slot 1 was loading, then idle (ready).
        let b = beside(&marks, "0", 8.1, 12.0);
        assert_eq!(b.len(), 1);
        assert_eq!(
            (b[0].slot.as_str(), b[0].gpus.as_deref()),
            ("1", Some("g1"))
        );
        assert_eq!(b[0].activity, [A::Loading, A::Idle]);
        // Slot 1's bench, 12.1..16: slot 0 idle a moment, then loading.
        let b = beside(&marks, "1", 12.1, 16.0);
        assert_eq!(b[0].activity, [A::Idle, A::Loading]);
        // Before any other slot marked: nothing beside.
        assert!(beside(&marks, "1", -5.0, -1.0).is_empty());
        // A mark that still holds counts (no later one).
        let b = beside(&marks, "0", 20.0, 21.0);
        assert_eq!(b[0].activity, [A::Idle]);
    }

    #[test]
    fn marks_append_and_read_back() {
        let dir = testkit::temp_dir("activity");
        let log = Log {
            path: dir.join("a.jsonl").to_string_lossy().into_owned(),
            slot: "0".into(),
            gpus: None,
        };
        log.mark(A::Loading).unwrap();
        crate::results::append(&log.path, "{\"torn\n").unwrap();
        log.mark(A::Benchmarking).unwrap();
        let got: Vec<A> = log.read().into_iter().map(|m| m.activity).collect();
        assert_eq!(got, [A::Loading, A::Benchmarking]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
