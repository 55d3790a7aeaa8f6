//! One table cell's parts and the change-in-percent wording, the leaf that
//! the table and the schedule's rows both build cells with.

/// A change in percent: `+56%`, `-3.2%`.
pub fn pct(x: f64) -> String {
    if x.abs() >= 10.0 {
        format!("{x:+.0}%")
    } else {
        format!("{x:+.1}%")
    }
}

/// One table cell, split into its parts.
pub struct CellText {
    /// The median, or what the failure was, or `-`.
    pub value: String,
    /// Change against the baseline: `+56%`, `base`, or empty.
    pub change: String,
    pub best: bool,
    /// Number of runs when more than one.
    pub runs: Option<usize>,
    /// Some runs of this cell failed.
    pub some_failed: bool,
    pub measured: bool,
    /// The value comes from a level cut short (a partial record).
    pub partial: bool,
    /// The cell has only figures that are not the level's own (listed
    /// apart, see analysis/not_per_level.rs).
    pub aside: bool,
    /// `± H`, the half-width of the cell's 95% interval, or empty.
    pub ci: String,
    /// `p99 of 40 requests` when the percentile rests on too few.
    pub few: Option<String>,
    /// Measured, but misses an `--slo` term.
    pub misses_slo: bool,
}
