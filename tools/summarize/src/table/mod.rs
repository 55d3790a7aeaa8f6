//! The comparison table, built once from an analysis: the header lines,
//! configs as rows and levels as columns with every cell's parts (value,
//! change against the baseline, best mark, runs, failures, interval), the
//! legend's facts, the decisions, the failures, the figures that are not
//! per-level and the warnings. Each human format writes it with its own
//! small exporter (export/), as hyperfine's `src/export/` writes one
//! result set in every markup.

pub(crate) mod cell;
pub(crate) mod notes;
pub(crate) mod pooled;
pub(crate) mod recommend;
pub(crate) mod schedule_rows;

use sweepkit::stats;

use crate::analysis::group::Model;
use crate::analysis::Analysis;
use crate::input::level::trim_float;
use crate::input::FailureInfo;
use crate::table::cell::{pct, CellText};
use crate::wording::{failure_label, num};

/// The text of cell (row, col).
pub fn cell_text(a: &Analysis, r: usize, c: usize) -> CellText {
    let failures = a.model.failures_at(r, c);
    let mut labels: Vec<String> = failures.iter().map(|f| failure_label(f)).collect();
    labels.dedup();
    match &a.grid[r][c] {
        Some(s) => {
            let change = if r == a.baseline {
                "base".to_string()
            } else {
                a.grid[a.baseline][c]
                    .as_ref()
                    .and_then(|b| stats::change_pct(s.median, b.median))
                    .map_or_else(String::new, pct)
            };
            CellText {
                value: num(s.median),
                change,
                best: a.best_per_level[c] == Some(r),
                runs: (s.n > 1).then_some(s.n),
                some_failed: !failures.is_empty(),
                measured: true,
                partial: a.model.cells[r][c].partial,
                aside: false,
                ci: crate::analysis::noise::ci_text(&a.noise, r, c),
                few: a.noise.few[r][c]
                    .as_ref()
                    .map(crate::analysis::noise::few_text),
                misses_slo: !s.slo_ok && !a.opts.slo.is_empty(),
            }
        }
        None => CellText {
            value: if labels.is_empty() {
                "-".into()
            } else {
                labels.join("/")
            },
            change: String::new(),
            best: false,
            runs: None,
            some_failed: false,
            measured: false,
            partial: false,
            aside: !a.model.cells[r][c].asides.is_empty(),
            ci: String::new(),
            few: None,
            misses_slo: false,
        },
    }
}

/// One config's row: its label, the values of the label keys (the label
/// itself when no key varies), its cells, and the note that stands for
/// its cells when it failed the same way at every level.
pub struct Row {
    pub label: String,
    pub keys: Vec<String>,
    pub cells: Vec<CellText>,
    pub same_everywhere: Option<String>,
}

/// The words a format uses in the legend for its marks.
pub struct LegendWords<'a> {
    pub change: &'a str,
    pub partial: &'a str,
    /// A measured cell with a failed run beside its measured ones.
    pub failed: &'a str,
    pub aside: &'a str,
    pub few: &'a str,
    /// How the format says a change is beyond noise or not.
    pub verdicts: &'a str,
}

/// The whole table of one analysis.
pub struct Table<'a> {
    analysis: &'a Analysis,
    /// The simulated-server notice, when any record came from llm-sim.
    pub notice: Option<String>,
    /// (label, text) lines above the table.
    pub header: Vec<(&'static str, String)>,
    /// The label keys' names (`config` when no key varies).
    pub key_names: Vec<String>,
    pub levels: Vec<String>,
    pub rows: Vec<Row>,
    /// The baseline config's label.
    pub baseline: String,
    /// The overall pick with its within-noise note, if any.
    pub pick: Option<String>,
    /// (decision, what it is) lines.
    pub decisions: Vec<(String, String)>,
    pub failures: Vec<String>,
    /// Figures that are not the level's own, one line each (analysis/not_per_level.rs).
    pub not_per_level: Vec<String>,
    pub warnings: Vec<String>,
    /// The validated schedules' rows, beside the static ones (never picked
    /// among them; schedule/row.rs).
    pub schedule: Vec<crate::table::schedule_rows::ScheduleRows>,
    /// The one thing to do, and why (table/recommend.rs).
    pub recommendation: crate::table::recommend::Recommendation,
    /// What the server reported and measured (explain/).
    pub explained: crate::explain::Explained,
}

impl<'a> Table<'a> {
    /// Build the table of `a`.
    pub fn of(a: &'a Analysis) -> Table<'a> {
        let m = &a.model;
        let key_names: Vec<String> = if m.varying.is_empty() {
            vec!["config".into()]
        } else {
            m.label_keys.iter().map(|&i| m.varying[i].clone()).collect()
        };
        let rows = (0..m.rows.len()).map(|r| row(a, r)).collect();
        let pick = a.overall.as_ref().map(|o| {
            let noise = o
                .col
                .map_or_else(String::new, |c| pick_note(a, (o.row, c), false));
            format!("{}{noise}", o.text)
        });
        Table {
            analysis: a,
            notice: simulated_notice(m),
            header: header(a),
            key_names,
            levels: m.levels.iter().map(|l| l.label()).collect(),
            rows,
            baseline: m.rows[a.baseline].label.clone(),
            decisions: decisions(a, pick.as_deref()),
            pick,
            failures: failure_lines(a),
            not_per_level: crate::analysis::not_per_level::lines(m),
            warnings: a.warnings.clone(),
            schedule: crate::table::schedule_rows::of(a),
            recommendation: crate::table::recommend::of(a),
            explained: crate::explain::of(a),
        }
    }

    /// The analysis the table shows (for a format's own legend).
    pub fn analysis(&self) -> &Analysis {
        self.analysis
    }

    /// The legend in a format's words.
    pub fn legend(&self, words: &LegendWords) -> String {
        legend(self.analysis, words)
    }
}

/// Row `r`: label, key values, cells, and the note for a config that
/// failed the same way everywhere (one note across its row instead of the
/// same words in every column).
fn row(a: &Analysis, r: usize) -> Row {
    let m = &a.model;
    let cells: Vec<CellText> = (0..m.levels.len()).map(|c| cell_text(a, r, c)).collect();
    let same_everywhere = (!cells.is_empty()
        && cells
            .iter()
            .all(|t| !t.measured && t.value != "-" && t.value == cells[0].value))
    .then(|| format!("{} at every level", cells[0].value));
    let keys = if m.varying.is_empty() {
        vec![m.rows[r].label.clone()]
    } else {
        m.label_keys
            .iter()
            .map(|&i| Model::value_text(&m.rows[r].key[i]).to_string())
            .collect()
    };
    Row {
        label: m.rows[r].label.clone(),
        keys,
        cells,
        same_everywhere,
    }
}

/// The header lines both human formats share, as (label, text) pairs.
fn header(a: &Analysis) -> Vec<(&'static str, String)> {
    let m = &a.model;
    let mut out = vec![(
        "metric",
        format!("{} ({})", a.opts.metric.path, a.opts.metric.better.word()),
    )];
    out.push((
        "records",
        format!("{} bench, {} failure", m.bench_records, m.failure_records),
    ));
    if !m.context.is_empty() {
        let ctx: Vec<String> = m.context.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push(("context", ctx.join(" ")));
    }
    let others: Vec<String> = (0..m.varying.len())
        .filter(|i| !m.label_keys.contains(i))
        .map(|i| {
            let mut vals: Vec<&str> = m
                .rows
                .iter()
                .map(|r| Model::value_text(&r.key[i]))
                .collect();
            vals.dedup();
            format!("{} ({})", m.varying[i], vals.join(", "))
        })
        .collect();
    if !others.is_empty() {
        out.push((
            "varies",
            format!("{}, one value per config", others.join("; ")),
        ));
    }
    out.extend(pooled::header(a));
    if m.rows.len() > 1 {
        out.push((
            "baseline",
            format!("{} ({})", m.rows[a.baseline].label, a.baseline_why),
        ));
    }
    out
}

/// The simulated-server notice, when any record came from llm-sim.
pub fn simulated_notice(m: &Model) -> Option<String> {
    let n = m.simulated_records;
    (n > 0).then(|| {
        format!(
            "SIMULATED: {n} of {} records came from a simulated server (llm-sim); \
             these numbers are not measurements of a real model",
            m.bench_records + m.failure_records
        )
    })
}

fn decisions(a: &Analysis, pick: Option<&str>) -> Vec<(String, String)> {
    let m = &a.model;
    let mut out = Vec::new();
    let objective = match a.opts.objective {
        crate::cli::Objective::Slo => {
            let t: Vec<String> = a.opts.slo.iter().map(|t| t.to_string()).collect();
            format!("slo {}", t.join(","))
        }
        o => o.name().to_string(),
    };
    let best = pick.unwrap_or("none").to_string();
    out.push((format!("best overall ({objective})"), best));
    for s in &a.schedule {
        out.push((format!("{} vs the pick", s.label), s.decision.clone()));
    }
    if let Some(p) = &a.plateau {
        out.push(("plateau".into(), p.text.clone()));
    }
    for (c, w) in a.best_per_level.iter().enumerate() {
        let who = w.map_or_else(
            || "none".to_string(),
            |r| {
                let v = a.grid[r][c].as_ref().map_or(0.0, |s| s.median);
                let ci = crate::analysis::noise::ci_text(&a.noise, r, c);
                let ci = if ci.is_empty() { ci } else { format!(" {ci}") };
                let noise = pick_note(a, (r, c), true);
                format!("{} ({}{ci}){noise}", m.rows[r].label, num(v))
            },
        );
        out.push((format!("best at {}", m.levels[c].label()), who));
    }
    out
}

/// `; within noise of X at c=16 (95% intervals overlap)` for a pick, or
/// empty.
pub fn pick_note(a: &Analysis, win: (usize, usize), same_level: bool) -> String {
    let m = &a.model;
    let slo = !a.opts.slo.is_empty();
    let cands: Vec<(usize, usize)> = (0..m.rows.len())
        .flat_map(|r| (0..m.levels.len()).map(move |c| (r, c)))
        .filter(|&(_, c)| !same_level || c == win.1)
        .filter(|&(r, c)| a.grid[r][c].as_ref().is_some_and(|s| !slo || s.slo_ok))
        .collect();
    let close = crate::analysis::noise::within_noise_of(&a.noise, win, &cands);
    if close.is_empty() {
        return String::new();
    }
    let names: Vec<String> = close
        .iter()
        .map(|&(r, c)| {
            if same_level {
                m.rows[r].label.clone()
            } else {
                format!("{} at {}", m.rows[r].label, m.levels[c].label())
            }
        })
        .collect();
    format!(
        "; within noise of {} (95% intervals overlap)",
        names.join(", ")
    )
}

fn failure_lines(a: &Analysis) -> Vec<String> {
    let m = &a.model;
    let mut out = Vec::new();
    for r in 0..m.rows.len() {
        for f in &m.row_failures[r] {
            out.push(format!("{}: {}", m.rows[r].label, failure_detail(f)));
        }
        for c in 0..m.levels.len() {
            for f in &m.cells[r][c].failures {
                out.push(format!(
                    "{} at {}: {}",
                    m.rows[r].label,
                    m.levels[c].label(),
                    failure_detail(f)
                ));
            }
        }
    }
    out
}

fn failure_detail(f: &FailureInfo) -> String {
    let mut s = format!("{} (stage {}, kind {})", failure_label(f), f.stage, f.kind);
    if !f.reason.is_empty() {
        // Whole: the text format wraps it between words (issue 33 saw
        // "restored the o" where a cut at 160 characters fell).
        s += &format!(": {}", f.reason);
    }
    s
}

fn legend(a: &Analysis, w: &LegendWords) -> String {
    let mut s = format!(
        "* best at that level (within {}% the smaller value wins); {}: median vs baseline",
        trim_float(a.opts.tolerance * 100.0),
        w.change
    );
    if a.grid.iter().flatten().flatten().any(|c| c.n > 1) {
        s += "; n=K: median of K runs, picked on median - 1.4826 x MAD";
    }
    if a.grid.iter().flatten().flatten().any(|c| !c.slo_ok) && !a.opts.slo.is_empty() {
        s += "; x: misses the SLO";
    }
    if crate::analysis::not_per_level::any(&a.model) {
        s += &format!(
            "; {}: only a figure that is not the level's own, listed apart",
            w.aside
        );
    }
    let failed_beside = a.grid.iter().enumerate().any(|(r, row)| {
        row.iter()
            .enumerate()
            .any(|(c, cell)| cell.is_some() && !a.model.failures_at(r, c).is_empty())
    });
    if failed_beside {
        s += &format!(
            "; {}: a run of that cell failed beside the measured ones (see failures)",
            w.failed
        );
    }
    if a.model.cells.iter().flatten().any(|c| c.partial) {
        s += &format!(
            "; {}: from a level cut short (partial record, no complete one)",
            w.partial
        );
    }
    if !a.schedule.is_empty() {
        s += &format!(
            "; schedule rows: the validated schedule, not a static value (never the best mark); \
             vs best static / vs pick: its median's change against that value at that level, {}",
            w.verdicts
        );
    }
    s + &crate::analysis::noise::legend(&a.noise, w.few)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_read_well() {
        assert_eq!(pct(51.2), "+51%");
        assert_eq!(pct(-3.24), "-3.2%");
    }
}
