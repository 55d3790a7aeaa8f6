//! A comparison written out: an aligned text table, a Markdown table for a
//! pull-request comment or a CI step summary, or one JSON object for
//! scripts.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::header::Header;
use super::stats::Change;
use super::verdict::{Row, Verdict, BY_REQUESTS, BY_RUNS, BY_WINDOWS};

/// A number as people read it: three significant figures or so.
pub fn num(x: f64) -> String {
    let a = x.abs();
    if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "-".into(), num)
}

fn change(c: Option<Change>) -> String {
    c.map_or_else(|| "-".into(), |c| format!("{:+.1}%", c.pct))
}

fn interval(c: Option<Change>) -> String {
    match c {
        Some(c) if c.lo_pct.is_finite() => format!("{:+.1}% .. {:+.1}%", c.lo_pct, c.hi_pct),
        _ => "-".into(),
    }
}

fn verdict(r: &Row) -> String {
    match (&r.why, r.verdict) {
        (Some(why), Verdict::NotComparable) => format!("not comparable: {why}"),
        (Some(why), _) => why.clone(),
        (None, v) => v.word().to_string(),
    }
}

/// What the intervals mean, for the methods used.
pub fn method_notes(rows: &[Row]) -> Vec<String> {
    let used: BTreeSet<&str> = rows.iter().filter_map(|r| r.method).collect();
    let mut out = Vec::new();
    if rows.iter().any(|r| r.pooled) {
        out.push(
            "latency percentiles: from the runs' merged histograms (pooled, not a median \
             of percentiles)"
                .to_string(),
        );
    }
    if rows.iter().any(|r| !r.pooled && r.metric.contains("_ms.")) {
        out.push(
            "latency without histograms (older records): the mean of the runs' own figures"
                .to_string(),
        );
    }
    if used.contains(BY_RUNS) {
        out.push(
            "95% intervals by runs: Welch's t on the per-run values (log scale; Student's \
             with pooled variance when a side has one run): run-to-run noise included"
                .to_string(),
        );
    }
    if used.contains(BY_REQUESTS) {
        out.push(
            "95% intervals by requests: bootstrap of one run a side's histogram: noise within \
             the run only (give --repeat for run-to-run noise)"
                .to_string(),
        );
    }
    if used.contains(BY_WINDOWS) {
        out.push("95% intervals by until_stable: the runs' batch-means intervals".to_string());
    }
    out
}

const HEAD: [&str; 8] = [
    "config",
    "level",
    "metric",
    "before",
    "after",
    "change",
    "95% interval",
    "verdict",
];

pub fn cells(r: &Row) -> [String; 8] {
    [
        r.config.clone(),
        r.level.clone(),
        r.metric.clone(),
        opt(r.before),
        opt(r.after),
        change(r.change),
        interval(r.change),
        verdict(r),
    ]
}

/// The aligned text form.
pub fn text(h: &Header, rows: &[Row], regressions: &[String]) -> String {
    let mut out = String::new();
    for l in &h.lines {
        out.push_str(l);
        out.push('\n');
    }
    out.push('\n');
    let body: Vec<[String; 8]> = rows.iter().map(cells).collect();
    let mut w = HEAD.map(str::len);
    for c in &body {
        for (i, x) in c.iter().enumerate() {
            w[i] = w[i].max(x.chars().count());
        }
    }
    let line = |c: &[String]| -> String {
        let mut s = String::new();
        for (i, x) in c.iter().enumerate() {
            let pad = w[i].saturating_sub(x.chars().count());
            // Numbers right-aligned, words left.
            if (3..=6).contains(&i) {
                s.push_str(&" ".repeat(pad));
                s.push_str(x);
            } else {
                s.push_str(x);
                if i + 1 < c.len() {
                    s.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < c.len() {
                s.push_str("  ");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    out.push_str(&line(&HEAD.map(String::from)));
    for c in &body {
        out.push_str(&line(c));
    }
    out.push('\n');
    for n in method_notes(rows) {
        out.push_str(&format!("note: {n}\n"));
    }
    out.push_str(&tally(rows));
    for r in regressions {
        out.push_str(r);
        out.push('\n');
    }
    out
}

/// `3 worse, 1 better, 8 no change beyond noise`.
fn tally(rows: &[Row]) -> String {
    let order = [
        Verdict::Worse,
        Verdict::Better,
        Verdict::NoChange,
        Verdict::NoiseUnknown,
        Verdict::NotComparable,
    ];
    let parts: Vec<String> = order
        .iter()
        .filter_map(|v| {
            let n = rows.iter().filter(|r| r.verdict == *v).count();
            (n > 0).then(|| format!("{n} {}", v.word()))
        })
        .collect();
    format!("verdicts: {}\n", parts.join(", "))
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// The Markdown form (a PR comment, `$GITHUB_STEP_SUMMARY`).
pub fn markdown(h: &Header, rows: &[Row], regressions: &[String]) -> String {
    let mut out = String::from("## Benchmark comparison\n\n");
    for l in &h.lines {
        out.push_str(&format!("- {}\n", md_escape(l)));
    }
    out.push('\n');
    out.push_str(&format!("| {} |\n", HEAD.join(" | ")));
    out.push_str("|---|---|---|---:|---:|---:|---:|---|\n");
    for r in rows {
        let mut c = cells(r).map(|x| md_escape(&x));
        c[2] = format!("`{}`", c[2]);
        if matches!(r.verdict, Verdict::Worse) {
            c[7] = format!("**{}**", c[7]);
        }
        out.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    out.push('\n');
    for n in method_notes(rows) {
        out.push_str(&format!("> {}\n", md_escape(&n)));
    }
    out.push_str(&format!("\n{}", tally(rows)));
    if !regressions.is_empty() {
        out.push_str("\n### Regressions\n\n");
        for r in regressions {
            out.push_str(&format!("- {}\n", md_escape(r)));
        }
    }
    out
}

fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 1000.0).round() / 1000.0)
    } else {
        Value::Null
    }
}

/// One row as JSON (the trend adds its values per run).
pub fn row_json(r: &Row) -> Value {
    json!({
        "config": r.config,
        "level": r.level,
        "metric": r.metric,
        "before": r.before.map(finite),
        "after": r.after.map(finite),
        "change_pct": r.change.map(|c| finite(c.pct)),
        "interval_pct": r.change.filter(|c| c.lo_pct.is_finite())
            .map(|c| [finite(c.lo_pct), finite(c.hi_pct)]),
        "verdict": r.verdict.key(),
        "why": r.why,
        "method": r.method,
        "pooled": r.pooled,
        "runs": [r.runs.0, r.runs.1],
    })
}

/// The JSON form: one object.
pub fn json(h: &Header, rows: &[Row], regressions: &[String]) -> Value {
    let notes = method_notes(rows);
    let rows: Vec<Value> = rows.iter().map(row_json).collect();
    json!({
        "type": "comparison",
        "header": h.json,
        "level_of_confidence": super::stats::LEVEL,
        "notes": notes,
        "rows": rows,
        "regressions": regressions,
    })
}
