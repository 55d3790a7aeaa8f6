//! The schedule rows (schedule/row.rs) in the machine formats: JSON's
//! `details.schedule` (what `sweep --keep-winner` reads through sweep-plan)
//! and CSV rows after the static ones.

use serde_json::Value;

use crate::analysis::schedule_cells::Against;
use crate::analysis::Analysis;
use crate::input::schedule_tag::KEY;

/// `details.schedule` of the summary record: per schedule its cells and
/// comparisons, and whether it wins (`sweep --keep-winner` reads `wins`).
pub fn json(a: &Analysis) -> Value {
    let vs = |v: &Option<Against>| {
        v.as_ref().map(|v| {
            serde_json::json!({
                "label": v.label,
                "median": v.median,
                "change_pct": v.change_pct.map(|x| (x * 100.0).round() / 100.0),
                "verdict": v.verdict.json(),
                "rule": (!v.how.is_empty()).then_some(v.how),
            })
        })
    };
    let rows: Vec<Value> = a
        .schedule
        .iter()
        .map(|s| {
            let levels: Vec<Value> = s
                .cells
                .iter()
                .enumerate()
                .map(|(c, cell)| {
                    serde_json::json!({
                        "level": a.model.levels[c].label(),
                        "median": cell.stat.as_ref().map(|x| x.median),
                        "runs": cell.stat.as_ref().map_or(0, |x| x.n),
                        "half_width": cell.ci.map(|i| i.half_width),
                        "failure": cell.failures.join("/"),
                        "vs_best_static": vs(&cell.vs_best),
                        "vs_pick": vs(&cell.vs_pick),
                        "memory_note": cell.memory_note,
                        "cap_note": cell.cap_note,
                    })
                })
                .collect();
            serde_json::json!({
                "server": s.server,
                "label": s.label,
                "objective": s.objective,
                "score": s.score,
                "pick": s.pick,
                "pick_score": s.pick_score,
                "wins": s.wins,
                "current": s.current,
                "decision": s.decision,
                "levels": levels,
            })
        })
        .collect();
    Value::Array(rows)
}

/// The schedules' cells as CSV rows after the static ones: config
/// `schedule=SERVER`, never `best`, the change against the baseline as a
/// static cell's.
pub fn csv_rows(a: &Analysis) -> Vec<sweepkit::lines::SummaryRow> {
    let mut out = Vec::new();
    for s in &a.schedule {
        for (c, cell) in s.cells.iter().enumerate() {
            let base = a.grid[a.baseline][c].as_ref();
            let measured = cell.stat.as_ref().map(|x| sweepkit::lines::SummaryCell {
                median: x.median,
                score: x.score,
                spread: x.spread,
                change_pct: base
                    .and_then(|b| sweepkit::stats::change_pct(x.median, b.median))
                    .map(|p| (p * 100.0).round() / 100.0),
                best: false,
                partial: false,
                slo_ok: (!a.opts.slo.is_empty()).then_some(x.slo_ok),
            });
            out.push(sweepkit::lines::SummaryRow {
                config: [(KEY.to_string(), Some(s.server.clone()))].into(),
                label: s.label.clone(),
                level: a.model.levels[c].label(),
                metric: a.opts.metric.path.clone(),
                runs: cell.stat.as_ref().map_or(0, |x| x.n as u64),
                measured,
                failure: cell.failures.join("/"),
                aside: None,
                simulated: None,
                host: None,
            });
        }
    }
    out
}
