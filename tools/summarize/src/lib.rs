//! summarize: turn bench and failure records from any number of runs into
//! a comparison table (configs x load levels), the best config per level,
//! the best overall under an objective, the plateau along an ordered
//! parameter, a plot, and a `summary` record a script can apply.

pub mod analysis;
pub mod aside;
pub mod capacity;
pub mod decide;
pub mod emit;
pub mod gpus;
pub mod group;
pub mod hosts;
pub mod input;
pub mod interval;
pub mod level;
pub mod metric;
pub mod noise;
pub mod notes;
pub mod pareto;
pub mod pareto_plot;
pub mod partial;
pub mod plot;
pub mod render;
pub mod report;
pub mod report_data;
pub mod report_svg;
pub mod schedule;
pub mod schedule_out;
pub mod spec;
pub mod startup;
pub mod stats;
pub mod views;
pub mod words;

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use clap::{Parser, ValueEnum};
use sweepkit::exit;
use sweepkit::records::Record;
use sweepkit::redact;
use sweepkit::report::{Exit, WithCode};

/// How the overall winner is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Objective {
    /// The best single (config, level) cell.
    Max,
    /// The best cell among those meeting every --slo term.
    Slo,
    /// The best config over a weighted mix of levels (--weights).
    Weighted,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned table and decisions (default on a terminal).
    Text,
    /// Markdown table and decisions, for pull requests.
    Markdown,
    /// One row per config and level.
    Csv,
    /// One summary record (default when stdout is not a terminal).
    Json,
}

/// Which way the metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BetterArg {
    Higher,
    Lower,
}

/// `--slo` terms (a newtype so clap takes the list as one value).
#[derive(Debug, Clone)]
pub struct Slo(pub Vec<spec::SloTerm>);

/// `--weights` (a newtype so clap takes the list as one value).
#[derive(Debug, Clone)]
pub struct Weights(pub Vec<(level::Level, f64)>);

/// Compare configs from sweepkit results: table, picks, plateau, plot.
///
/// Reads bench and failure records, shows configs x load levels with the
/// change against a baseline, picks the best config per level and overall,
/// finds where gains level off, and writes a summary record that
/// `svc-swap --apply-from -` applies.
#[derive(Debug, Parser)]
#[command(name = "summarize", version, max_term_width = 79)]
pub struct Args {
    /// Results: JSON Lines records or loadgen CSV; - is stdin [default: -]
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,

    /// Metric to compare: dotted path (ttft_ms.p99) or alias (p99_ttft_ms)
    #[arg(
        short,
        long,
        value_name = "METRIC",
        default_value = "throughput.output_tok_per_s"
    )]
    pub metric: String,

    /// Which way the metric improves [default: from its unit: _ms/_s lower]
    #[arg(long, value_name = "WAY", value_enum)]
    pub better: Option<BetterArg>,

    /// Config the change in % is against [default: speculation off, if
    /// present, else the first config]
    #[arg(short, long, value_name = "KEY=VALUE", value_parser = spec::parse_baseline)]
    pub baseline: Option<(String, String)>,

    /// How to pick the overall winner [default: slo with --slo, else
    /// weighted (every level counts, equal weights unless --weights)]
    #[arg(long, value_name = "HOW", value_enum)]
    pub objective: Option<Objective>,

    /// Service levels every pick must meet, and each config's capacity
    /// (highest concurrency meeting them), e.g. 'p99_ttft_ms<=500'
    #[arg(long, value_name = "TERMS", value_parser = |s: &str| spec::parse_slo(s).map(Slo))]
    pub slo: Option<Slo>,

    /// Level weights for --objective weighted, e.g. 'c=1:0.5,c=16:0.5'
    /// [default: all levels equal]
    #[arg(long, value_name = "WEIGHTS", value_parser = |s: &str| spec::parse_weights(s).map(Weights))]
    pub weights: Option<Weights>,

    /// Ordered parameter for the plateau [default: the one varying
    /// numeric parameter]
    #[arg(long, value_name = "KEY")]
    pub param: Option<String>,

    /// Gain below which further steps of the parameter count as a plateau
    #[arg(long, value_name = "PCT", default_value = "2%", value_parser = spec::parse_pct)]
    pub plateau_threshold: f64,

    /// Scores within this of the best count as a tie; the smaller
    /// parameter value wins
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = spec::parse_pct)]
    pub tolerance: f64,

    /// Output format [default: text on a terminal, else json]
    #[arg(short, long, value_name = "FORMAT", value_enum)]
    pub format: Option<Format>,

    /// Rank results from hosts of different hardware together (without
    /// it: one table per host, and json/csv refuse, exit 55)
    #[arg(long, conflicts_with = "per_host")]
    pub pool_hosts: bool,

    /// One table (json: one summary record) per host, even when the
    /// hosts' hardware is identical
    #[arg(long)]
    pub per_host: bool,

    /// Also draw the metric by level and by parameter into this SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Also find the Pareto frontier of interactivity (1000 / TPOT p50,
    /// tok/s per user) against output tok/s per GPU; --plot draws it
    #[arg(long, help_heading = "Decision views")]
    pub pareto: bool,

    /// Also write one self-contained HTML report (verdict, table,
    /// frontier, capacity, timelines, failures, provenance) to FILE
    #[arg(long, value_name = "FILE.html", help_heading = "Decision views")]
    pub report: Option<PathBuf>,

    /// Print the server's own per-load schedule (JSON) from a sweep of one
    /// speculative depth at two or more concurrency levels
    #[arg(
        long,
        value_name = "SERVER",
        value_enum,
        help_heading = "Per-load schedule",
        conflicts_with_all = ["per_host", "format", "plot"]
    )]
    pub schedule: Option<schedule::Server>,

    /// With --schedule: the server's max batch, where the last range ends
    /// [default: from the records, else vLLM 256, SGLang 48]
    #[arg(
        long,
        value_name = "N",
        requires = "schedule",
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "Per-load schedule"
    )]
    pub max_batch: Option<u64>,

    /// With --schedule sglang: the path the flags name for the adaptive
    /// config (write the record's adaptive_config there)
    #[arg(
        long,
        value_name = "PATH",
        default_value = "speculative-adaptive.json",
        help_heading = "Per-load schedule"
    )]
    pub adaptive_config_file: String,
}

/// Read every FILE (`-`: stdin, once) as text.
fn read_all(files: &[String], stdin: &mut impl BufRead) -> Result<Vec<(String, String)>, Exit> {
    let mut out = Vec::new();
    let mut stdin_used = false;
    for f in files {
        if f == "-" {
            let mut s = String::new();
            if !std::mem::replace(&mut stdin_used, true) {
                stdin
                    .read_to_string(&mut s)
                    .context("<stdin>: not UTF-8 text")
                    .code(exit::BAD_INPUT)?;
            }
            out.push(("<stdin>".to_string(), s));
        } else {
            let bytes = std::fs::read(f)
                .with_context(|| f.clone())
                .code(exit::BAD_INPUT)?;
            let text = String::from_utf8(bytes)
                .map_err(|_| anyhow!("{f}: not UTF-8 text"))
                .code(exit::BAD_INPUT)?;
            out.push((f.clone(), text));
        }
    }
    Ok(out)
}

/// Run summarize; messages about ignored input go to the process's stderr.
pub fn run(args: Args, stdin: impl BufRead, stdout: impl Write) -> Result<(), Exit> {
    run_with(args, stdin, stdout, std::io::stderr())
}

/// Run summarize with every stream given (tests pass buffers).
pub fn run_with(
    args: Args,
    mut stdin: impl BufRead,
    mut stdout: impl Write,
    mut stderr: impl Write,
) -> Result<(), Exit> {
    let started = std::time::SystemTime::now();
    let opts = options(&args)?;
    let files = if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    };
    let sources = read_all(&files, &mut stdin)?;
    if let Some(server) = args.schedule {
        let inp = observations(&files, &sources, &mut stderr)?;
        let req = schedule_out::Request {
            server,
            max_batch: args.max_batch,
            adaptive_config_file: &args.adaptive_config_file,
            pool_hosts: args.pool_hosts,
        };
        return schedule_out::run(&req, opts, inp, &mut stdout, &mut stderr);
    }
    let mut inp = observations(&files, &sources, &mut stderr)?;
    partial::resolve(&mut inp);
    let mut notes = std::mem::take(&mut inp.notes);
    let format = args.format.unwrap_or(Format::Json);
    let machine = matches!(format, Format::Csv | Format::Json);
    let groups = match hosts::plan(inp.obs, args.pool_hosts, args.per_host, machine, &mut notes) {
        Ok(g) => g,
        Err(e) => {
            print_notes(&mut stderr, &notes);
            return Err(Exit::new(exit::MIXED_HARDWARE, anyhow!(e)));
        }
    };
    let analyses = analyse_groups(groups, &opts, notes, &mut stderr)?;
    let texts: Vec<&str> = sources.iter().map(|(_, t)| t.as_str()).collect();
    let views: Vec<views::Views> = analyses
        .iter()
        .map(|(_, a)| views::of(a, args.pareto || args.report.is_some(), &texts))
        .collect();
    if let Some(path) = &args.plot {
        // One plot: of the first host's table when split per host.
        let front = views[0].pareto.as_ref().filter(|_| args.pareto);
        std::fs::write(path, plot::svg_with(&analyses[0].1, front))
            .with_context(|| format!("--plot {}", path.display()))
            .code(exit::FAILURE)?;
    }
    let notes = analyses
        .last()
        .map(|(_, a)| notes::table_notes(a, &all_text(&sources)))
        .unwrap_or_default();
    if let Some(path) = &args.report {
        let html = report::html(&analyses, &views, &texts, started);
        std::fs::write(path, html)
            .with_context(|| format!("--report {}", path.display()))
            .code(exit::FAILURE)?;
    }
    let shown: Vec<views::Views> = views
        .iter()
        .cloned()
        .map(|mut v| {
            // The report computes the frontier for itself; the other
            // formats show it only when asked.
            if !args.pareto {
                v.pareto = None;
            }
            v
        })
        .collect();
    emit_all(&analyses, &shown, format, started, &notes, &mut stdout)?;
    stdout.flush()?;
    finish(&analyses, machine, &mut stderr)
}

/// The warnings on stderr where the format carries no prose; exit 1 when
/// some table picked no config.
fn finish(
    analyses: &[(Option<hosts::HostId>, analysis::Analysis)],
    machine: bool,
    stderr: &mut impl Write,
) -> Result<(), Exit> {
    if machine {
        for (_, a) in analyses {
            for w in &a.warnings {
                let _ = writeln!(stderr, "summarize: warning: {}", redact::text(w));
            }
        }
    }
    if analyses.iter().any(|(_, a)| a.overall.is_none()) {
        return Err(Exit::new(
            exit::FAILURE,
            anyhow!("no config was picked; see the warnings"),
        ));
    }
    Ok(())
}

/// The analysis options from the flags; bad combinations are usage errors.
fn options(args: &Args) -> Result<analysis::Options, Exit> {
    let better = args.better.map(|b| match b {
        BetterArg::Higher => metric::Better::Higher,
        BetterArg::Lower => metric::Better::Lower,
    });
    let metric = metric::metric(&args.metric, better)
        .map_err(|e| Exit::new(exit::USAGE, anyhow!("--metric: {e}")))?;
    let slo = args.slo.clone().map(|s| s.0).unwrap_or_default();
    let objective = match (args.objective, slo.is_empty()) {
        (Some(Objective::Slo), true) => {
            return Err(Exit::new(
                exit::USAGE,
                anyhow!("--objective slo needs --slo"),
            ))
        }
        (Some(o), _) => o,
        (None, false) => Objective::Slo,
        (None, true) => Objective::Weighted,
    };
    Ok(analysis::Options {
        metric,
        objective,
        slo,
        weights: args.weights.clone().map(|w| w.0).unwrap_or_default(),
        baseline: args.baseline.clone(),
        param: args.param.clone(),
        tolerance: args.tolerance,
        plateau_threshold: args.plateau_threshold,
    })
}

/// Every source's bench and failure records; none at all is bad input.
fn observations(
    files: &[String],
    sources: &[(String, String)],
    stderr: &mut impl Write,
) -> Result<input::Input, Exit> {
    let mut inp = input::Input::default();
    for (name, text) in sources {
        input::read_source(name, text, &mut inp).code(exit::BAD_INPUT)?;
    }
    input::drop_unplaceable(&mut inp);
    if !inp.obs.is_empty() {
        return Ok(inp);
    }
    print_notes(stderr, &inp.notes);
    let names: Vec<&str> = files
        .iter()
        .map(|f| if f == "-" { "<stdin>" } else { f.as_str() })
        .collect();
    Err(Exit::new(
        exit::BAD_INPUT,
        anyhow!(
            "{}: no bench or failure records to summarize",
            names.join(", ")
        ),
    ))
}

fn all_text(sources: &[(String, String)]) -> String {
    let texts: Vec<&str> = sources.iter().map(|(_, t)| t.as_str()).collect();
    texts.join("\n")
}

/// Build and analyse each group's table; the notes (input, grouping) are
/// printed once every table is built, before any decision.
fn analyse_groups(
    groups: Vec<hosts::Group>,
    opts: &analysis::Options,
    mut notes: Vec<String>,
    stderr: &mut impl Write,
) -> Result<Vec<(Option<hosts::HostId>, analysis::Analysis)>, Exit> {
    let mut models = Vec::new();
    for (host, obs) in groups {
        let model = group::build(&obs, &opts.metric, &mut notes);
        if model.levels.iter().any(|l| l.is_open()) && model.levels.iter().any(|l| !l.is_open()) {
            notes.push(
                "input mixes closed-loop (c=N) and open-loop (rate=R) levels; \
                 they are separate columns"
                    .into(),
            );
        }
        models.push((host, model, obs));
    }
    notes.dedup();
    print_notes(stderr, &notes);
    let mut analyses = Vec::new();
    for (host, model, obs) in models {
        let a = analysis::analyse(model, &obs, opts.clone())
            .map_err(|e| Exit::new(exit::USAGE, anyhow!(e)))?;
        analyses.push((host, a));
    }
    Ok(analyses)
}

/// Write every analysis in `format`: per host, each table under a line
/// naming the host, each summary record with its `host`, each CSV row
/// with a `host` column (one header for all).
fn emit_all(
    analyses: &[(Option<hosts::HostId>, analysis::Analysis)],
    views: &[views::Views],
    format: Format,
    started: std::time::SystemTime,
    table_notes: &str,
    stdout: &mut impl Write,
) -> Result<(), Exit> {
    let title = |h: &hosts::HostId| format!("{} ({})", h.label, h.key);
    let mut csv_rows = Vec::new();
    for (i, (host, a)) in analyses.iter().enumerate() {
        // Tables quote config values: no secret in them (`sweepkit::redact`).
        match format {
            Format::Text => {
                if let Some(h) = host {
                    let gap = if i > 0 { "\n" } else { "" };
                    writeln!(stdout, "{gap}== host {} ==", redact::text(&title(h)))?;
                }
                // The adaptive sweep's notes (skipped, repeated cells) once, last.
                let notes = if i + 1 == analyses.len() {
                    table_notes
                } else {
                    ""
                };
                let text = render::text(a) + &views::text(a, &views[i]) + notes;
                stdout.write_all(redact::text(&text).as_bytes())?;
            }
            Format::Markdown => {
                if let Some(h) = host {
                    let gap = if i > 0 { "\n" } else { "" };
                    writeln!(stdout, "{gap}### host `{}`\n", redact::text(&title(h)))?;
                }
                let md = render::markdown(a) + &views::markdown(a, &views[i]);
                stdout.write_all(redact::text(&md).as_bytes())?;
            }
            Format::Csv => {
                let label = host.as_ref().map(|h| h.label.as_str());
                csv_rows.extend(emit::csv_rows(a, label)?);
            }
            Format::Json => {
                let mut rec = emit::summary(a, started);
                rec.host = host.as_ref().map(title);
                if let Some(d) = rec.details.as_mut() {
                    views::json_into(d, a, &views[i]);
                }
                sweepkit::io::write_record(stdout, &Record::Summary(rec))?;
            }
        }
    }
    if format == Format::Csv {
        sweepkit::flat::write_csv(&mut *stdout, &csv_rows).context("writing stdout")?;
    }
    Ok(())
}

/// Notes about ignored input, capped so a huge file cannot flood stderr.
pub(crate) fn print_notes(stderr: &mut impl Write, notes: &[String]) {
    const CAP: usize = 20;
    for n in notes.iter().take(CAP) {
        let _ = writeln!(stderr, "summarize: warning: {}", redact::text(n));
    }
    if notes.len() > CAP {
        let _ = writeln!(
            stderr,
            "summarize: warning: ... and {} more like these",
            notes.len() - CAP
        );
    }
}

#[cfg(test)]
mod tests {
    testkit::cli_tests!(super::Args);
}
