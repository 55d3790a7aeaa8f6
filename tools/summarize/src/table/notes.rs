//! The adaptive sweep's notes under summarize's text table: which values
//! sweep-plan's search skipped (its `skipped` records) and which configs
//! were measured more than once.

use sweepkit::records::Record;

use crate::analysis::Analysis;

/// Lines under summarize's text table: which values an adaptive sweep
/// skipped (and why) and which it measured more than once.
pub fn table_notes(a: &Analysis, all: &str) -> String {
    let mut out = String::new();
    for l in all.lines() {
        if let Ok(Record::Skipped(s)) = serde_json::from_str::<Record>(l) {
            let measured = a
                .model
                .rows
                .iter()
                .any(|r| s.config.iter().all(|(k, v)| r.config.get(k) == Some(v)));
            if !measured {
                let cfg: Vec<String> = s.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!(
                    "skipped: {} ({}: {})\n",
                    cfg.join(" "),
                    s.rule,
                    s.reason
                ));
            }
        }
    }
    for (r, row) in a.model.rows.iter().enumerate() {
        let runs = a.model.cells[r]
            .iter()
            .map(|c| c.values.len())
            .max()
            .unwrap_or(0);
        if runs > 1 {
            out.push_str(&format!("repeated: {} ({runs} runs)\n", row.label));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\n{out}")
}
