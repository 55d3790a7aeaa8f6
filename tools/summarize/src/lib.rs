//! summarize: turn bench and failure records from any number of runs into
//! a comparison table (configs x load levels), the best config per level,
//! the best overall under an objective, the plateau along an ordered
//! parameter, a plot, and a `summary` record a script can apply.

pub mod adapt;
pub mod analysis;
pub mod aside;
pub mod capacity;
pub mod cost;
pub mod decide;
pub mod emit;
pub mod gpus;
pub mod group;
pub mod hosts;
pub mod input;
pub mod interval;
pub mod level;
pub mod metric;
pub mod next;
pub mod noise;
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
pub mod sweepq;
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

    /// For sweep(1): print each config's state (complete, failed,
    /// transport, incomplete), a TAB and KEY=VALUE per comma-separated KEY
    #[arg(long, value_name = "KEYS", help_heading = "Sweep bookkeeping")]
    pub config_states: Option<String>,

    /// For sweep(1): print the restore arguments of the input's origin
    /// record, one per line (nothing when it has none)
    #[arg(
        long,
        help_heading = "Sweep bookkeeping",
        conflicts_with = "config_states"
    )]
    pub origin: bool,

    /// For sweep(1): read a dry-run swap record, write an origin record
    #[arg(
        long,
        help_heading = "Sweep bookkeeping",
        conflicts_with_all = ["config_states", "origin"]
    )]
    pub new_origin: bool,

    /// For sweep(1): print how many records of TYPE the input holds (a
    /// type of sweepkit-records(5): bench, failure, ...)
    #[arg(
        long,
        value_name = "TYPE",
        help_heading = "Sweep bookkeeping",
        value_parser = sweepq::parse_record_type,
        conflicts_with_all = ["config_states", "origin", "new_origin"]
    )]
    pub count: Option<String>,

    /// With --count: only records of this config (each KEY's value in the
    /// record's config equal to V)
    #[arg(
        long,
        value_name = "KEY=V[,KEY=V]",
        help_heading = "Sweep bookkeeping",
        value_parser = sweepq::parse_config_filter,
        requires = "count"
    )]
    pub config: Option<sweepq::ConfigFilter>,

    /// For sweep --adaptive: print what to measure next along KEY's
    /// values (KEY=V1,V2,...), or that the search is done and why
    #[arg(
        long,
        value_name = "KEY=VALUES",
        help_heading = "Adaptive sweep",
        value_parser = next::parse_space,
        conflicts_with_all = ["config_states", "origin", "new_origin"]
    )]
    pub next: Option<next::Space>,

    /// With --next: stop after K further values past the best showed the
    /// plateau
    #[arg(
        long,
        value_name = "K",
        default_value_t = 2,
        help_heading = "Adaptive sweep"
    )]
    pub patience: usize,

    /// With --next: weighted-score gap that counts as a close call (and a
    /// drop that counts as a clear peak) until repeats measure the noise
    #[arg(
        long,
        value_name = "PCT",
        default_value = "5%",
        value_parser = spec::parse_pct,
        help_heading = "Adaptive sweep"
    )]
    pub noise_margin: f64,

    /// With --next: extra config starts allowed for re-measuring close calls
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        help_heading = "Adaptive sweep"
    )]
    pub repeat_budget: usize,

    /// With --next: write a skipped record for each untried value of a
    /// finished search (none twice), instead of the answer
    #[arg(long, requires = "next", help_heading = "Adaptive sweep")]
    pub emit_skipped: bool,

    /// Print the server's own per-load schedule (JSON) from a sweep of one
    /// speculative depth at two or more concurrency levels
    #[arg(
        long,
        value_name = "SERVER",
        value_enum,
        help_heading = "Per-load schedule",
        conflicts_with_all = ["config_states", "origin", "new_origin", "count", "next",
            "host_dropped", "per_host", "format", "plot"]
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

    /// For sweep(1) --hosts: write the record of a host dropped for
    /// REASON; the input is that host's origin record (may be empty)
    #[arg(
        long,
        value_name = "REASON",
        help_heading = "Sweep bookkeeping",
        conflicts_with_all = ["config_states", "origin", "new_origin", "count"]
    )]
    pub host_dropped: Option<String>,
}

/// What sweep(1) asks: `--config-states`, `--origin`, `--count` (of one
/// `--config`, or of all), `--host-dropped` (`--new-origin` when none).
type Count = (String, Vec<(String, String)>);
type Book = (Option<String>, bool, Option<Count>, Option<String>);

/// `--config-states`, `--origin`, `--new-origin`, `--count`,
/// `--host-dropped`: answer and return.
fn bookkeeping(
    (config_states, origin, count, host_dropped): Book,
    text: &str,
    stdout: &mut impl Write,
) -> Result<(), Exit> {
    let started = std::time::SystemTime::now();
    if let Some(reason) = host_dropped {
        let f = sweepq::host_dropped(text, &reason, started)
            .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("--host-dropped: {e}")))?;
        sweepkit::io::write_record(stdout, &Record::Failure(f))?;
    } else if let Some((tag, of)) = &count {
        writeln!(stdout, "{}", sweepq::count(text, tag, of))?;
    } else if let Some(keys) = &config_states {
        let keys: Vec<String> = keys
            .split(',')
            .map(|k| k.trim_start_matches('-').to_string())
            .collect();
        stdout.write_all(sweepq::config_states(text, &keys).as_bytes())?;
    } else if origin {
        stdout.write_all(sweepq::origin_args(text).as_bytes())?;
    } else {
        let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        let v: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("--new-origin: not JSON: {e}")))?;
        let o = sweepq::new_origin(&v, started)
            .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("--new-origin: {e}")))?;
        sweepkit::io::write_record(stdout, &Record::Origin(o))?;
    }
    stdout.flush()?;
    Ok(())
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
    if let Some(space) = args.next.clone() {
        return run_next(&args, space, opts, &sources, &mut stdout);
    }
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
    let book: Book = (
        args.config_states.clone(),
        args.origin,
        args.count
            .clone()
            .map(|t| (t, args.config.clone().map(|c| c.0).unwrap_or_default())),
        args.host_dropped.clone(),
    );
    if book.0.is_some() || args.origin || args.new_origin || book.2.is_some() || book.3.is_some() {
        return bookkeeping(book, &all_text(&sources), &mut stdout);
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
        .map(|(_, a)| next::table_notes(a, &all_text(&sources)))
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

/// `--next`: what the adaptive sweep measures next, decided on the
/// weighted objective along the --next parameter.
fn run_next(
    args: &Args,
    space: next::Space,
    opts: analysis::Options,
    sources: &[(String, String)],
    stdout: &mut impl Write,
) -> Result<(), Exit> {
    next::check_input(&space, sources)?;
    let space = space.ordered()?;
    let better = opts.metric.better;
    let opts = analysis::Options {
        objective: Objective::Weighted,
        baseline: None,
        param: Some(space.key.clone()),
        ..opts
    };
    let a = analyse_quietly(sources, opts)?;
    next::run(args, space, sources, a.as_ref(), better, stdout)
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

/// The analysis `--next` decides on (`None`: nothing measured yet); notes
/// about ignored input are not its business.
fn analyse_quietly(
    sources: &[(String, String)],
    opts: analysis::Options,
) -> Result<Option<analysis::Analysis>, Exit> {
    let mut inp = input::Input::default();
    for (name, text) in sources {
        input::read_source(name, text, &mut inp)
            .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!(e)))?;
    }
    input::drop_unplaceable(&mut inp);
    if inp.obs.is_empty() {
        return Ok(None);
    }
    partial::resolve(&mut inp);
    let mut notes = Vec::new();
    let model = group::build(&inp.obs, &opts.metric, &mut notes);
    analysis::analyse(model, &inp.obs, opts)
        .map(Some)
        .map_err(|e| Exit::new(exit::USAGE, anyhow!(e)))
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
