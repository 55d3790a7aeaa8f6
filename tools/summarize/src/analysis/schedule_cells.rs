//! The schedule row's parts: per level its cell (value, interval, its
//! change against the best static value and against the pick, each with
//! a noise verdict) and the row's decision. Data only, so the analysis
//! can hold the rows that schedule/row.rs builds from it.

use crate::analysis::decide::CellStat;
use crate::analysis::noise::CellInterval;

/// A change beyond noise or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Better beyond noise.
    Better,
    /// Worse beyond noise.
    Worse,
    /// Within noise (the rule in `how`).
    Within,
    /// One run each, no interval: noise unknown.
    Unknown,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better beyond noise",
            Verdict::Worse => "worse beyond noise",
            Verdict::Within => "within noise",
            Verdict::Unknown => "noise unknown",
        }
    }

    /// The one-character mark of the text table.
    pub fn mark(self) -> &'static str {
        match self {
            Verdict::Better => "+",
            Verdict::Worse => "-",
            Verdict::Within => "=",
            Verdict::Unknown => "?",
        }
    }

    pub fn json(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Within => "within_noise",
            Verdict::Unknown => "unknown",
        }
    }
}

/// The schedule's cell against one static cell at the same level.
#[derive(Debug, Clone)]
pub struct Against {
    /// The static config's label.
    pub label: String,
    pub median: f64,
    /// Schedule vs that config, median against median, in percent.
    pub change_pct: Option<f64>,
    pub verdict: Verdict,
    /// Which rule decided: `95% intervals`, `repeats' spread`, or empty.
    pub how: &'static str,
}

/// One level of the schedule's row.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub stat: Option<CellStat>,
    pub ci: Option<CellInterval>,
    /// What its failures were (`crashed_at_load`, ...), when it failed.
    pub failures: Vec<String>,
    pub vs_best: Option<Against>,
    pub vs_pick: Option<Against>,
    /// Why it lost to a shallower static value (schedule/memory.rs).
    pub memory_note: Option<String>,
    /// The level is above the server's max batch (schedule/memory.rs).
    pub cap_note: Option<String>,
    /// Its bench records at this level, for the views that read more than
    /// the metric (the report's charts and frontier).
    pub records: Vec<serde_json::Value>,
}

/// The schedule's row and its decision.
#[derive(Debug, Clone)]
pub struct Row {
    pub server: String,
    /// `schedule (vllm)`.
    pub label: String,
    /// One per level of the static table.
    pub cells: Vec<Cell>,
    /// The objective's name (`weighted`, `max`, `slo`).
    pub objective: &'static str,
    /// The schedule's and the static pick's scores by that objective
    /// (weighted: over the static pick's levels with the schedule counted).
    pub score: Option<f64>,
    pub pick_score: Option<f64>,
    /// The static pick's label.
    pub pick: Option<String>,
    /// It wins by the objective that picks a static value.
    pub wins: bool,
    /// One line saying so.
    pub decision: String,
    /// The server's latest schedule in the input (what a resumed sweep
    /// and `--keep-winner` apply).
    pub current: bool,
    /// Its batch ranges, flags and config file (input/schedule_plan.rs), when
    /// its records carry the schedule record upstream.
    pub plan: Option<crate::input::schedule_plan::Plan>,
}
