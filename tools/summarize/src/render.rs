//! The human formats: aligned text for a terminal and Markdown for pull
//! requests. Both show the same table (configs as rows, levels as columns,
//! change against the baseline, best per level marked, failures in place)
//! and the same decisions.

use std::fmt::Write as _;

use crate::analysis::Analysis;
use crate::group::Model;
use crate::input::FailureInfo;
use crate::level::trim_float;
use crate::stats;
use crate::words::{failure_label, num};

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
    /// apart, see `aside`).
    pub aside: bool,
    /// `± H`, the half-width of the cell's 95% interval, or empty.
    pub ci: String,
    /// `p99 of 40 requests` when the percentile rests on too few.
    pub few: Option<String>,
}

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
                ci: crate::noise::ci_text(&a.noise, r, c),
                few: a.noise.few[r][c].as_ref().map(crate::noise::few_text),
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
        },
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

fn decisions(a: &Analysis) -> Vec<(String, String)> {
    let m = &a.model;
    let mut out = Vec::new();
    let objective = match a.opts.objective {
        crate::cli::Objective::Max => "max".to_string(),
        crate::cli::Objective::Slo => {
            let t: Vec<String> = a.opts.slo.iter().map(|t| t.to_string()).collect();
            format!("slo {}", t.join(","))
        }
        crate::cli::Objective::Weighted => "weighted".to_string(),
    };
    let best = a.overall.as_ref().map_or_else(
        || "none".to_string(),
        |o| {
            let noise = o
                .col
                .map_or_else(String::new, |c| pick_note(a, (o.row, c), false));
            format!("{}{noise}", o.text)
        },
    );
    out.push((format!("best overall ({objective})"), best));
    if let Some(p) = &a.plateau {
        out.push(("plateau".into(), p.text.clone()));
    }
    for (c, w) in a.best_per_level.iter().enumerate() {
        let who = w.map_or_else(
            || "none".to_string(),
            |r| {
                let v = a.grid[r][c].as_ref().map_or(0.0, |s| s.median);
                let ci = crate::noise::ci_text(&a.noise, r, c);
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
    let close = crate::noise::within_noise_of(&a.noise, win, &cands);
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
        let reason: String = f.reason.chars().take(160).collect();
        s += &format!(": {reason}");
    }
    s
}

fn legend(a: &Analysis, change: &str, partial: &str, aside: &str, few: &str) -> String {
    let mut s = format!(
        "* best at that level (within {}% the smaller value wins); {change}: median vs baseline",
        trim_float(a.opts.tolerance * 100.0)
    );
    if a.grid.iter().flatten().flatten().any(|c| c.n > 1) {
        s += "; n=K: median of K runs, picked on median - 1.4826 x MAD";
    }
    if a.grid.iter().flatten().flatten().any(|c| !c.slo_ok) && !a.opts.slo.is_empty() {
        s += "; x: misses the SLO";
    }
    if crate::aside::any(&a.model) {
        s += &format!("; {aside}: only a figure that is not the level's own, listed apart");
    }
    if a.model.cells.iter().flatten().any(|c| c.partial) {
        s += &format!("; {partial}: from a level cut short (partial record, no complete one)");
    }
    s + &crate::noise::legend(&a.noise, few)
}

/// Aligned text for a terminal.
pub fn text(a: &Analysis) -> String {
    let m = &a.model;
    let mut out = String::new();
    if let Some(n) = simulated_notice(m) {
        let _ = writeln!(out, "{n}");
    }
    for (k, v) in header(a) {
        let _ = writeln!(out, "{:<10}{v}", format!("{k}:"));
    }
    out.push('\n');
    // Columns: one per varying key, then value/chg/mark per level.
    let keys: Vec<String> = if m.varying.is_empty() {
        vec!["config".into()]
    } else {
        m.label_keys.iter().map(|&i| m.varying[i].clone()).collect()
    };
    let mut grid: Vec<Vec<String>> = Vec::new();
    let mut head: Vec<String> = keys.clone();
    for l in &m.levels {
        head.extend([l.label(), "chg".into(), String::new()]);
    }
    grid.push(head);
    // A config that failed the same way everywhere gets one note across its
    // row instead of the same words in every column (which would also
    // stretch every column to the note's width).
    let mut spans: Vec<Option<String>> = vec![None];
    for r in 0..m.rows.len() {
        let texts: Vec<CellText> = (0..m.levels.len()).map(|c| cell_text(a, r, c)).collect();
        let span = (!texts.is_empty()
            && texts
                .iter()
                .all(|t| !t.measured && t.value != "-" && t.value == texts[0].value))
        .then(|| format!("{} at every level", texts[0].value));
        spans.push(span);
        let mut line: Vec<String> = if m.varying.is_empty() {
            vec![m.rows[r].label.clone()]
        } else {
            m.label_keys
                .iter()
                .map(|&i| Model::value_text(&m.rows[r].key[i]).to_string())
                .collect()
        };
        for c in 0..m.levels.len() {
            let t = cell_text(a, r, c);
            let mut mark = String::from(if t.best { "*" } else { "" });
            if a.grid[r][c].as_ref().is_some_and(|s| !s.slo_ok) && !a.opts.slo.is_empty() {
                mark.push('x');
            }
            if t.some_failed {
                mark.push('!');
            }
            if t.partial {
                mark.push('~');
            }
            if t.aside {
                mark.push('#');
            }
            if t.few.is_some() {
                mark.push('^');
            }
            if let Some(n) = t.runs {
                mark += &format!(" n={n}");
            }
            if spans[r + 1].is_some() {
                line.extend([String::new(), String::new(), String::new()]);
            } else {
                let value = if t.ci.is_empty() {
                    t.value
                } else {
                    format!("{} {}", t.value, t.ci)
                };
                line.extend([value, t.change, mark]);
            }
        }
        grid.push(line);
    }
    let nk = keys.len();
    let widths: Vec<usize> = (0..grid[0].len())
        .map(|i| grid.iter().map(|row| row[i].len()).max().unwrap_or(0))
        .collect();
    for (row, span) in grid.iter().zip(&spans) {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if let (Some(note), true) = (span, i == nk) {
                line += "   ";
                line += note;
                break;
            }
            let w = widths[i];
            let sep = if i == 0 {
                ""
            } else if i < nk || (i - nk).is_multiple_of(3) {
                "   "
            } else {
                " "
            };
            line += sep;
            // Parameter values and marks left-aligned; numbers right-aligned.
            if i < nk || (i - nk) % 3 == 2 {
                line += &format!("{cell:<w$}");
            } else {
                line += &format!("{cell:>w$}");
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(out, "\n{}\n", legend(a, "chg", "~", "#", "^"));
    for (k, v) in decisions(a) {
        let _ = writeln!(out, "{k}: {v}");
    }
    let fails = failure_lines(a);
    if !fails.is_empty() {
        let _ = writeln!(out, "\nfailures:");
        for f in fails {
            let _ = writeln!(out, "  {f}");
        }
    }
    out += &crate::aside::text_section(&a.model);
    if !a.warnings.is_empty() {
        let _ = writeln!(out, "\nwarnings:");
        for w in &a.warnings {
            let _ = writeln!(out, "  {w}");
        }
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown for a pull request.
pub fn markdown(a: &Analysis) -> String {
    let m = &a.model;
    let mut out = String::new();
    if let Some(n) = simulated_notice(m) {
        let _ = writeln!(out, "> **{n}**\n");
    }
    for (k, v) in header(a) {
        let _ = writeln!(out, "- **{k}**: `{}`", v.replace('`', "'"));
    }
    out.push('\n');
    let first = if m.varying.is_empty() {
        "config".to_string()
    } else {
        let k: Vec<&str> = m
            .label_keys
            .iter()
            .map(|&i| m.varying[i].as_str())
            .collect();
        k.join(" ")
    };
    let mut head = format!("| {} |", md_escape(&first));
    let mut rule = String::from("|:---|");
    for l in &m.levels {
        head += &format!(" {} |", l.label());
        rule += "---:|";
    }
    let _ = writeln!(out, "{head}\n{rule}");
    for r in 0..m.rows.len() {
        let name = if m.varying.is_empty() {
            m.rows[r].label.clone()
        } else {
            let v: Vec<&str> = m
                .label_keys
                .iter()
                .map(|&i| Model::value_text(&m.rows[r].key[i]))
                .collect();
            v.join(" ")
        };
        let mut line = format!("| {} |", md_escape(&name));
        for c in 0..m.levels.len() {
            let t = cell_text(a, r, c);
            let mut notes: Vec<String> = Vec::new();
            if !t.change.is_empty() {
                notes.push(t.change.clone());
            }
            if let Some(n) = t.runs {
                notes.push(format!("n={n}"));
            }
            if t.some_failed {
                notes.push("some runs failed".into());
            }
            if t.partial {
                notes.push("partial".into());
            }
            if t.aside {
                notes.push("not per-level, see below".into());
            }
            if let Some(f) = &t.few {
                notes.push(f.clone());
            }
            if a.grid[r][c].as_ref().is_some_and(|s| !s.slo_ok) && !a.opts.slo.is_empty() {
                notes.push("misses SLO".into());
            }
            let shown = if t.ci.is_empty() {
                t.value.clone()
            } else {
                format!("{} {}", t.value, t.ci)
            };
            let value = match (t.best, t.measured) {
                (true, _) => format!("**{shown}** \\*"),
                (false, true) => shown,
                (false, false) if t.value == "-" => "-".into(),
                (false, false) => format!("_{}_", t.value),
            };
            let notes = if notes.is_empty() {
                String::new()
            } else {
                format!(" ({})", notes.join(", "))
            };
            line += &format!(" {}{} |", md_escape(&value), md_escape(&notes));
        }
        let _ = writeln!(out, "{line}");
    }
    let legend =
        legend(a, "(+N%)", "partial", "not per-level", "pN of K requests").replace('*', "\\*");
    let _ = writeln!(out, "\n{legend}\n");
    for (k, v) in decisions(a) {
        let _ = writeln!(out, "- **{k}**: {}", v.replace('*', "\\*"));
    }
    let fails = failure_lines(a);
    if !fails.is_empty() {
        let _ = writeln!(out, "\n**Failures**\n");
        for f in fails {
            let _ = writeln!(out, "- {}", f.replace('*', "\\*"));
        }
    }
    out += &crate::aside::markdown_section(&a.model, md_escape);
    if !a.warnings.is_empty() {
        let _ = writeln!(out, "\n**Warnings**\n");
        for w in &a.warnings {
            let _ = writeln!(out, "- {}", w.replace('*', "\\*"));
        }
    }
    out
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
