//! summarize: turn bench and failure records from any number of runs into
//! a comparison table (configs x load levels), the best config per level,
//! the best overall under an objective, the plateau along an ordered
//! parameter, a plot, and a `summary` record a script can apply.
//!
//! The way through, each room importing only those listed after it:
//! - `report/` the HTML page, `export/` every format on stdout,
//!   `validation.rs` the `--validate-on` replays' lines, `plot/` the SVG
//!   charts.
//! - `parts.rs`: the results split by workload and host, one `Part` each
//!   (its analysis and views), which every output reads.
//! - `views/` (frontier, capacity, start-up cost) and `table/` (the
//!   comparison table and its recommendation): what a person reads.
//! - `schedule/`: `--schedule SERVER` (the derivation, its depth cap, its
//!   record) and the validated schedule's own row beside the static ones.
//! - `analysis/`: one table's model (`group`) and its decisions.
//! - `wording.rs`, `cli.rs`, `flag_values.rs`: numbers in words, the
//!   flags and their little languages.
//! - `input/`: the records read into observations, and what places them
//!   (level, host, workload, partial records, the schedule measured).
//! - `error.rs`, `metric.rs`, `metric_name.rs`: the errors, metric paths
//!   and their names.

pub(crate) mod analysis;
pub(crate) mod cli;
pub(crate) mod compare;
pub(crate) mod error;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod flag_values;
pub(crate) mod input;
pub mod metric;
pub(crate) mod metric_name;
pub(crate) mod parts;
pub(crate) mod plot;
pub(crate) mod report;
pub(crate) mod schedule;
pub(crate) mod table;
pub(crate) mod validation;
pub(crate) mod views;
pub(crate) mod wording;

use std::io::{BufRead, Write};

use anyhow::{anyhow, Context};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::redact;

pub use cli::Args;
use cli::{BetterArg, Format, Objective};
use input::print_notes;

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
    if let Some(files) = compare::files(&args) {
        let sources = read_all(&files, &mut stdin)?;
        return compare::run(&args, sources, &mut stdout, &mut stderr);
    }
    let opts = options(&args)?;
    let files = if args.files.is_empty() {
        vec!["-".to_string()]
    } else {
        args.files.clone()
    };
    let sources = read_all(&files, &mut stdin)?;
    if let Some(server) = args.schedule {
        let inp = observations(&files, &sources, &mut stderr)?;
        let req = schedule::command::Request {
            server,
            max_batch: args.max_batch,
            max_depth: args.max_depth,
            adaptive_config_file: &args.adaptive_config_file,
            pool_hosts: args.pool_hosts,
        };
        return schedule::command::run(&req, opts, inp, &mut stdout, &mut stderr);
    }
    let mut inp = observations(&files, &sources, &mut stderr)?;
    input::partial::resolve(&mut inp);
    let notes = std::mem::take(&mut inp.notes);
    let validations = std::mem::take(&mut inp.validations);
    let format = args.format.unwrap_or(Format::Text);
    let machine = matches!(format, Format::Csv | Format::Json);
    let texts: Vec<&str> = sources.iter().map(|(_, t)| t.as_str()).collect();
    let parts = parts::analyse(&args, inp.obs, &opts, notes, &texts, &mut stderr)?;
    if let Some(path) = &args.plot {
        // One plot: of the first host's table when split per host.
        let front = parts[0].views.pareto.as_ref().filter(|_| args.pareto);
        std::fs::write(path, plot::svg(&parts[0].analysis, front))
            .with_context(|| format!("--plot {}", path.display()))
            .code(exit::FAILURE)?;
    }
    let notes = parts
        .last()
        .map(|p| table::notes::table_notes(&p.analysis, &texts.join("\n")))
        .unwrap_or_default();
    if let Some(path) = &args.report {
        let html = report::html(&parts, &texts, started, &validations);
        std::fs::write(path, html)
            .with_context(|| format!("--report {}", path.display()))
            .code(exit::FAILURE)?;
    }
    let shown = export::Shown {
        pareto: args.pareto,
        by_workload: args.by == Some(cli::By::Workload),
        table_notes: &notes,
        validations: &validations,
    };
    export::write(&parts, &shown, format, started, &mut stdout)?;
    stdout.flush()?;
    finish(&parts, machine, &mut stderr)
}

/// The warnings on stderr where the format carries no prose; exit 1 when
/// some table picked no config.
fn finish(parts: &[parts::Part], machine: bool, stderr: &mut impl Write) -> Result<(), Exit> {
    if machine {
        for p in parts {
            for w in &p.analysis.warnings {
                let _ = sweepkit::diag::write_line(
                    stderr,
                    &format!("summarize: warning: {}", redact::text(w)),
                );
            }
        }
    }
    if parts.iter().any(|p| p.analysis.overall.is_none()) {
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
