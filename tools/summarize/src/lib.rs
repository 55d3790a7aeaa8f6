//! summarize: turn bench and failure records from any number of runs into
//! a comparison table (configs x load levels), the best config per level,
//! the best overall under an objective, the plateau along an ordered
//! parameter, a plot, and a `summary` record a script can apply.

pub mod analysis;
pub mod capacity;
pub mod cli;
pub mod decide;
pub mod error;
pub mod explain;
pub mod export;
pub mod flag_values;
pub mod gpus;
pub mod group;
pub mod host_id;
pub mod hosts;
pub mod input;
pub mod interval;
pub mod level;
pub mod metric;
pub mod metric_name;
pub mod noise;
pub mod not_per_level;
pub mod notes;
pub mod pareto;
pub mod pareto_plot;
pub mod partial;
pub mod plot;
pub mod recommend;
pub mod record_view;
pub mod report;
pub mod report_data;
pub mod report_svg;
pub mod report_verdict;
pub mod schedule;
pub mod schedule_cap;
pub mod schedule_cells;
pub mod schedule_emit;
pub mod schedule_memory;
pub mod schedule_out;
pub mod schedule_plan;
pub mod schedule_row;
pub mod schedule_tag;
pub mod startup;
pub mod stats;
pub mod svg_chart;
pub mod svg_labels;
pub mod table;
pub mod table_cell;
pub mod table_schedule;
pub mod validation;
pub mod views;
pub mod wording;
pub mod workload;

use std::io::{BufRead, Write};

use anyhow::{anyhow, Context};
use sweepkit::exit;
use sweepkit::records::Record;
use sweepkit::redact;
use sweepkit::report::{Exit, WithCode};

pub use cli::{Args, BetterArg, Format, Objective, Slo, Weights};
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
            max_depth: args.max_depth,
            adaptive_config_file: &args.adaptive_config_file,
            pool_hosts: args.pool_hosts,
        };
        return schedule_out::run(&req, opts, inp, &mut stdout, &mut stderr);
    }
    let mut inp = observations(&files, &sources, &mut stderr)?;
    partial::resolve(&mut inp);
    let notes = std::mem::take(&mut inp.notes);
    let validations = std::mem::take(&mut inp.validations);
    let format = args.format.unwrap_or(Format::Text);
    let machine = matches!(format, Format::Csv | Format::Json);
    let (analyses, workloads) =
        analyse_workloads(&args, inp.obs, &opts, format, notes, &mut stderr)?;
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
        let html = report::html(&analyses, &views, &texts, started, &validations);
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
    let shown_to = Shown {
        views: &shown,
        table_notes: &notes,
        workloads: &workloads,
        validations: &validation::json(&validations),
    };
    emit_all(&analyses, &shown_to, format, started, &mut stdout)?;
    if format == Format::Text && args.by == Some(cli::By::Workload) {
        let parts: Vec<(String, &analysis::Analysis)> = workloads
            .iter()
            .zip(&analyses)
            .filter_map(|(w, (_, a))| Some((w.clone()?, a)))
            .collect();
        stdout.write_all(redact::text(&workload::best_table(&parts)).as_bytes())?;
    }
    if matches!(format, Format::Text | Format::Markdown) && !validations.is_empty() {
        let lines = validation::text(&validations);
        stdout.write_all(redact::text(&format!("\n{lines}")).as_bytes())?;
    }
    stdout.flush()?;
    finish(&analyses, machine, &mut stderr)
}

/// The warnings on stderr where the format carries no prose; exit 1 when
/// some table picked no config.
fn finish(
    analyses: &[(Option<host_id::HostId>, analysis::Analysis)],
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

/// Each host group's analysis, split first by workload (never pooled):
/// several workloads are one table each, with `--by workload` or for a
/// person's formats; json and csv refuse them otherwise (exit 57), and
/// csv always (it has no workload column). Returns each analysis's
/// workload (`None` when the input has one).
#[allow(clippy::type_complexity)]
fn analyse_workloads(
    args: &Args,
    obs: Vec<input::Obs>,
    opts: &analysis::Options,
    format: Format,
    mut notes: Vec<String>,
    stderr: &mut impl Write,
) -> Result<
    (
        Vec<(Option<host_id::HostId>, analysis::Analysis)>,
        Vec<Option<String>>,
    ),
    Exit,
> {
    let machine = matches!(format, Format::Csv | Format::Json);
    let parts = workload::partition(obs);
    if parts.len() > 1 {
        let list: Vec<&str> = parts.iter().filter_map(|(w, _)| w.as_deref()).collect();
        let list = list.join("; ");
        let by = args.by.is_some();
        if format == Format::Csv || (machine && !by) {
            print_notes(stderr, &notes);
            let fix = if by {
                "csv has no workload column: give one workload's records, or --format json"
            } else {
                "give --by workload (one pick per workload) or one workload's records"
            };
            return Err(Exit::new(
                exit::MIXED_WORKLOADS,
                anyhow!(
                    "the records come from {} workloads ({list}); one pick would pool \
                     them: {fix}",
                    parts.len()
                ),
            ));
        }
        if !by {
            notes.push(format!(
                "the records come from {} workloads ({list}): one table each \
                 (--by workload also shows the best config per workload and level)",
                parts.len()
            ));
        }
    }
    let mut analyses = Vec::new();
    let mut workloads = Vec::new();
    for (w, obs) in parts {
        let mut n = std::mem::take(&mut notes);
        let groups = match hosts::plan(obs, args.pool_hosts, args.per_host, machine, &mut n) {
            Ok(g) => g,
            Err(e) => {
                print_notes(stderr, &n);
                return Err(Exit::new(e.exit_code(), anyhow!(e)));
            }
        };
        let these = analyse_groups(groups, opts, n, stderr)?;
        workloads.extend(std::iter::repeat_n(w, these.len()));
        analyses.extend(these);
    }
    Ok((analyses, workloads))
}

/// Build and analyse each group's table; the notes (input, grouping) are
/// printed once every table is built, before any decision.
fn analyse_groups(
    groups: Vec<hosts::Group>,
    opts: &analysis::Options,
    mut notes: Vec<String>,
    stderr: &mut impl Write,
) -> Result<Vec<(Option<host_id::HostId>, analysis::Analysis)>, Exit> {
    let mut models = Vec::new();
    for (host, obs) in groups {
        // A validated schedule is its own row, never a static value.
        let (obs, sched) = schedule_row::split(obs);
        let model = group::build(&obs, &opts.metric, &mut notes);
        if model.levels.iter().any(|l| l.is_open()) && model.levels.iter().any(|l| !l.is_open()) {
            notes.push(
                "input mixes closed-loop (c=N) and open-loop (rate=R) levels; \
                 they are separate columns"
                    .into(),
            );
        }
        models.push((host, model, obs, sched));
    }
    notes.dedup();
    print_notes(stderr, &notes);
    let mut analyses = Vec::new();
    for (host, model, obs, sched) in models {
        let mut a = analysis::analyse(model, &obs, opts.clone())
            .map_err(|e| Exit::new(e.exit_code(), anyhow!(e)))?;
        a.schedule = schedule_row::rows(&a, &obs, &sched);
        analyses.push((host, a));
    }
    Ok(analyses)
}

/// Write every analysis in `format`: per host, each table under a line
/// naming the host, each summary record with its `host`, each CSV row
/// with a `host` column (one header for all).
/// What the output shows beside the analyses.
struct Shown<'a> {
    views: &'a [views::Views],
    /// The adaptive sweep's notes (skipped, repeated cells), once, last.
    table_notes: &'a str,
    workloads: &'a [Option<String>],
    /// `validation::json` of the --validate-on records, for JSON.
    validations: &'a [serde_json::Value],
}

fn emit_all(
    analyses: &[(Option<host_id::HostId>, analysis::Analysis)],
    shown: &Shown<'_>,
    format: Format,
    started: std::time::SystemTime,
    stdout: &mut impl Write,
) -> Result<(), Exit> {
    let (views, table_notes, workloads) = (shown.views, shown.table_notes, shown.workloads);
    let title = |h: &host_id::HostId| format!("{} ({})", h.label, h.key);
    let mut csv_rows = Vec::new();
    for (i, (host, a)) in analyses.iter().enumerate() {
        let workload = workloads.get(i).cloned().flatten();
        let new_workload =
            workload.is_some() && (i == 0 || workloads.get(i - 1) != workloads.get(i));
        // Tables quote config values: no secret in them (`sweepkit::redact`).
        match format {
            Format::Text => {
                if let (true, Some(w)) = (new_workload, &workload) {
                    let gap = if i > 0 { "\n" } else { "" };
                    writeln!(stdout, "{gap}== workload {} ==", redact::text(w))?;
                }
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
                let text =
                    export::text::write(&table::Table::of(a)) + &views::text(a, &views[i]) + notes;
                stdout.write_all(redact::text(&text).as_bytes())?;
            }
            Format::Markdown => {
                if let (true, Some(w)) = (new_workload, &workload) {
                    writeln!(stdout, "\n## workload `{}`\n", redact::text(w))?;
                }
                if let Some(h) = host {
                    let gap = if i > 0 { "\n" } else { "" };
                    writeln!(stdout, "{gap}### host `{}`\n", redact::text(&title(h)))?;
                }
                let md =
                    export::markdown::write(&table::Table::of(a)) + &views::markdown(a, &views[i]);
                stdout.write_all(redact::text(&md).as_bytes())?;
            }
            Format::Csv => {
                let label = host.as_ref().map(|h| h.label.as_str());
                csv_rows.extend(export::summary::csv_rows(a, label)?);
            }
            Format::Json => {
                let mut rec = export::summary::summary(a, started);
                rec.host = host.as_ref().map(title);
                rec.workload = workload;
                rec.validations = shown.validations.to_vec();
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
