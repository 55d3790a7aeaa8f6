//! `summarize --compare BEFORE AFTER` (or `--compare-by FIELD FILE`): did
//! the change make it worse? Per config x level x metric: before, after,
//! the change in %, its 95% interval and a verdict; `--fail-on` turns the
//! regressions into an exit code for CI.
//!
//! load.rs reads and matches the two runs, stats.rs holds the statistics,
//! verdict.rs judges each row, gate.rs the `--fail-on` terms, header.rs
//! what each side is, render.rs the text, Markdown and JSON forms.

pub mod gate;
pub mod header;
pub mod load;
pub mod render;
pub mod report;
pub mod stats;
pub mod trend;
pub mod verdict;

use std::io::Write;

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::redact;

use crate::cli::{Args, Format};
use crate::metric;

/// The metrics compared when `--metrics` is not given: what a serving
/// engineer reads first (output throughput, TTFT median and tail, TPOT,
/// the ITL tail, E2E).
pub const DEFAULT_METRICS: [&str; 6] = [
    "throughput.output_tok_per_s",
    "ttft_ms.p50",
    "ttft_ms.p99",
    "tpot_ms.p50",
    "itl_ms.p99",
    "e2e_ms.p50",
];

/// The files a comparison reads, when one was asked for: BEFORE and AFTER,
/// or the one file `--compare-by` splits (stdin without one).
pub fn files(args: &Args) -> Option<Vec<String>> {
    if let Some(two) = &args.compare {
        return Some(two.clone());
    }
    if !args.trend {
        args.compare_by.as_ref()?;
    }
    Some(if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    })
}

/// The metrics to compare: `--metrics` (or the defaults), then each
/// `--fail-on` metric not among them.
fn metrics(args: &Args, terms: &[gate::Term]) -> Result<Vec<String>, Exit> {
    let mut out = match &args.metrics {
        Some(list) => list
            .split(',')
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(metric::resolve)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Exit::new(exit::USAGE, anyhow!("--metrics: {e}")))?,
        None => DEFAULT_METRICS.iter().map(|m| m.to_string()).collect(),
    };
    for t in terms {
        if !out.contains(&t.path) {
            out.push(t.path.clone());
        }
    }
    Ok(out)
}

/// Refuse a metric that one side's records never carry.
fn check_metrics(sides: [&load::Side; 2], metrics: &[String]) -> Result<(), Exit> {
    for m in metrics {
        let has = |s: &load::Side| s.benches().any(|r| metric::lookup(r, m).is_some());
        let missing: Vec<&str> = sides
            .iter()
            .filter(|s| !has(s))
            .map(|s| s.name.as_str())
            .collect();
        if missing.is_empty() {
            continue;
        }
        let other = if missing.len() == 1 {
            " (the other side has it)"
        } else {
            ""
        };
        return Err(Exit::new(
            exit::COMPARE_REFUSED,
            anyhow!(
                "{}: no bench record has {m}{other}: compare metrics both runs measured \
                 (--metrics)",
                missing.join(" and ")
            ),
        ));
    }
    Ok(())
}

/// Run the comparison over the sources read (`(name, text)`).
pub fn run(
    args: &Args,
    sources: Vec<(String, String)>,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> Result<(), Exit> {
    let terms = match &args.fail_on {
        Some(s) => gate::parse(s).map_err(|e| Exit::new(exit::USAGE, anyhow!("--fail-on: {e}")))?,
        None => Vec::new(),
    };
    let metrics = metrics(args, &terms)?;
    if args.trend {
        return run_trend(args, sources, &metrics, stdout);
    }
    let (before, after) = match &args.compare_by {
        Some(field) => {
            let (name, text) = sources.into_iter().next().unwrap_or_default();
            load::split(load::side(&name, &text)?, field)?
        }
        None => {
            let mut it = sources.into_iter();
            let (bn, bt) = it.next().unwrap_or_default();
            let (an, at) = it.next().unwrap_or_default();
            (load::side(&bn, &bt)?, load::side(&an, &at)?)
        }
    };
    load::check(&before)?;
    load::check(&after)?;
    check_metrics([&before, &after], &metrics)?;
    let matched = load::matched(&before, &after)?;
    let header = header::of(&before, &after, &matched);
    let rows: Vec<verdict::Row> = matched
        .cells
        .iter()
        .flat_map(|c| metrics.iter().map(|m| verdict::row(&before, &after, c, m)))
        .collect();
    let regressions = gate::regressions(&rows, &terms);
    if let Some(path) = &args.report {
        let charts = report::compare_charts(&rows, &before.name, &after.name);
        let page = report::html("sweepkit comparison", &header.lines, &rows, &charts);
        write_report(path, &page)?;
    }
    let out = match args.format.unwrap_or(Format::Text) {
        Format::Text => render::text(&header, &rows, &regressions),
        Format::Markdown => render::markdown(&header, &rows, &regressions),
        Format::Json => render::json(&header, &rows, &regressions).to_string() + "\n",
        Format::Csv => {
            return Err(Exit::new(
                exit::USAGE,
                anyhow!("--compare writes text, markdown or json, not csv"),
            ))
        }
    };
    stdout.write_all(redact::text(&out).as_bytes())?;
    stdout.flush()?;
    if regressions.is_empty() {
        return Ok(());
    }
    for r in &regressions {
        let _ = writeln!(stderr, "summarize: {}", redact::text(r));
    }
    Err(Exit::silent(exit::REGRESSION))
}

fn write_report(path: &std::path::Path, page: &str) -> Result<(), Exit> {
    use sweepkit::exit::WithCode;
    std::fs::write(path, redact::text(page))
        .map_err(anyhow::Error::from)
        .map_err(|e| e.context(format!("--report {}", path.display())))
        .code(exit::FAILURE)
}

/// `--trend`: several runs in the order they ran.
fn run_trend(
    args: &Args,
    sources: Vec<(String, String)>,
    metrics: &[String],
    stdout: &mut impl Write,
) -> Result<(), Exit> {
    if sources.len() < 2 {
        return Err(Exit::new(
            exit::USAGE,
            anyhow!("--trend needs two or more results files, one per run"),
        ));
    }
    let mut sides = Vec::new();
    for (name, text) in &sources {
        let side = load::side(name, text)?;
        load::check(&side)?;
        sides.push(side);
    }
    let sides = trend::order(sides);
    check_metrics([&sides[0], &sides[sides.len() - 1]], metrics)?;
    let t = trend::of(&sides, metrics)?;
    if let Some(path) = &args.report {
        let lines: Vec<String> = sides
            .iter()
            .zip(&t.ticks)
            .map(|(s, k)| format!("{k}: {}", s.name))
            .collect();
        let page = report::html("sweepkit trend", &lines, &t.rows, &trend::charts(&t));
        write_report(path, &page)?;
    }
    let out = match args.format.unwrap_or(Format::Text) {
        Format::Json => trend::json(&t).to_string() + "\n",
        _ => trend::text(&t),
    };
    stdout.write_all(redact::text(&out).as_bytes())?;
    stdout.flush()?;
    Ok(())
}
