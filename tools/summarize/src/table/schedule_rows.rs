//! The table's schedule rows (one group per validated schedule, from
//! schedule/row.rs): its values beside the static ones, its change against
//! the best static value at each level, and against the single pick, each
//! with its verdict (beyond noise or not), plus one line per level saying
//! so in words. Every human format writes these same texts.

use crate::analysis::noise::{CellInterval, Method};
use crate::analysis::schedule_cells::{Against, Cell, Verdict};
use crate::analysis::Analysis;
use crate::table::cell::{pct, CellText};
use crate::wording::num;

/// One change against a static value at one level.
pub struct VsText {
    /// `-1.9%`, or `-` where either was not measured.
    pub change: String,
    /// The static config it is against.
    pub against: String,
    /// `None` where nothing was compared.
    pub verdict: Option<Verdict>,
}

impl VsText {
    /// The verdict a cell shows, in every format: none where the noise is
    /// unknown (one run each), so no cell repeats "noise unknown" (the text
    /// legend reads a blank as that; a one-run sweep's recommendation says
    /// it once, `NOISE_UNKNOWN`).
    pub fn shown_verdict(&self) -> Option<Verdict> {
        self.verdict.filter(|v| *v != Verdict::Unknown)
    }
}

/// One schedule's rows.
pub struct ScheduleRows {
    /// `schedule (vllm)`.
    pub label: String,
    /// Its cells as the static rows' (change against the baseline).
    pub values: Vec<CellText>,
    pub vs_best: Vec<VsText>,
    /// `vs weighted pick (speculative-num-steps=4)`.
    pub vs_pick_label: String,
    pub vs_pick: Vec<VsText>,
    /// Per level, the comparison in words.
    pub lines: Vec<String>,
    /// The schedule itself: its depth per batch range and where its
    /// config is (input/schedule_plan.rs); empty when its records do not say.
    pub plan: Vec<String>,
}

/// The schedule rows of `a`.
pub fn of(a: &Analysis) -> Vec<ScheduleRows> {
    a.schedule
        .iter()
        .map(|s| {
            let vs = |f: fn(&Cell) -> &Option<Against>| {
                s.cells.iter().map(|c| vs_text(f(c).as_ref())).collect()
            };
            let lines = s
                .cells
                .iter()
                .enumerate()
                .filter_map(|(c, cell)| level_line(a, &s.label, c, cell))
                .collect();
            ScheduleRows {
                label: s.label.clone(),
                values: (0..s.cells.len())
                    .map(|c| value(a, &s.cells[c], c))
                    .collect(),
                vs_best: vs(|c| &c.vs_best),
                vs_pick_label: format!(
                    "vs {} pick ({})",
                    s.objective,
                    s.pick.as_deref().unwrap_or("none")
                ),
                vs_pick: vs(|c| &c.vs_pick),
                lines,
                plan: s.plan.as_ref().map_or_else(Vec::new, |p| {
                    vec![
                        format!("depths: {}", p.ranges_text()),
                        format!("config: {}", p.where_text()),
                    ]
                }),
            }
        })
        .collect()
}

fn vs_text(v: Option<&Against>) -> VsText {
    match v {
        Some(v) => VsText {
            change: v.change_pct.map_or_else(|| "-".into(), pct),
            against: v.label.clone(),
            verdict: Some(v.verdict),
        },
        None => VsText {
            change: "-".into(),
            against: String::new(),
            verdict: None,
        },
    }
}

/// `± H` of an interval, as the static cells show it.
fn ci_text(ci: Option<CellInterval>) -> String {
    ci.map_or_else(String::new, |i| {
        let b = if i.method == Method::BatchMeans {
            "b"
        } else {
            ""
        };
        format!("± {}{b}", num(i.half_width))
    })
}

/// The schedule's cell at level `c`, as a static cell reads.
fn value(a: &Analysis, cell: &Cell, c: usize) -> CellText {
    let base = a.grid[a.baseline][c].as_ref();
    let change = match (&cell.stat, base) {
        (Some(s), Some(b)) => {
            sweepkit::stats::change_pct(s.median, b.median).map_or_else(String::new, pct)
        }
        _ => String::new(),
    };
    let measured = cell.stat.is_some();
    CellText {
        value: match &cell.stat {
            Some(s) => num(s.median),
            None if cell.failures.is_empty() => "-".into(),
            None => cell.failures.join("/"),
        },
        change,
        best: false,
        runs: cell.stat.as_ref().and_then(|s| (s.n > 1).then_some(s.n)),
        some_failed: measured && !cell.failures.is_empty(),
        measured,
        partial: false,
        aside: false,
        ci: ci_text(cell.ci),
        few: None,
        misses_slo: cell
            .stat
            .as_ref()
            .is_some_and(|s| !s.slo_ok && !a.opts.slo.is_empty()),
    }
}

/// `schedule (vllm) at c=16: 14959, +0.3% vs best static
/// speculative-num-steps=4 (14919), within noise (95% intervals); ...`.
fn level_line(a: &Analysis, label: &str, c: usize, cell: &Cell) -> Option<String> {
    let s = cell.stat.as_ref()?;
    let part = |what: &str, v: &Option<Against>| {
        v.as_ref().map(|v| {
            // Noise unknown is said once, in the recommendation, not here.
            let verdict = if v.verdict == Verdict::Unknown {
                String::new()
            } else {
                format!(", {} ({})", v.verdict.word(), v.how)
            };
            format!(
                "{} vs {what} {} ({}){verdict}",
                v.change_pct.map_or_else(|| "-".into(), pct),
                v.label,
                num(v.median),
            )
        })
    };
    let same = matches!((&cell.vs_best, &cell.vs_pick), (Some(b), Some(p)) if b.label == p.label);
    let mut parts: Vec<String> = part("best static", &cell.vs_best).into_iter().collect();
    if same {
        parts.push("the same config as the pick".into());
    } else {
        parts.extend(part("the pick", &cell.vs_pick));
    }
    parts.extend(cell.memory_note.clone());
    parts.extend(cell.cap_note.clone());
    Some(format!(
        "{label} at {}: {}; {}",
        a.model.levels[c].label(),
        num(s.median),
        parts.join("; ")
    ))
}
