//! sweep-plan: the decisions of a sweep (sweep(1)), as a typed tool the
//! script asks: the grid's configs and which of them a results file
//! already answers (`--resume`), one config's words for each tool and the
//! verdict on a run, the origin record and what to restore, the adaptive
//! search's next step (`step`: the one loop's next config, either way),
//! and for a pool (`--hosts`) its hosts, each try's
//! step and record, the blame that drops a host, and how the pool ended.
//! Answers are JSON Lines, one object per config or decision; `--field
//! NAME` prints the named fields one per line instead, so bash reads them
//! with `mapfile` and parses nothing.

pub mod adapt;
pub mod cli;
pub mod cost;
pub mod dry_run_checks;
pub mod end;
pub mod fleet;
pub mod grid;
pub mod hosts;
pub mod next;
pub mod origin;
pub mod out;
pub mod progress;
mod read;
pub mod results;
pub mod schedule;
pub mod search;
pub mod slurm;
pub mod slurm_options;
pub mod stage_words;
pub mod statusline;
pub mod step;
pub mod sweep_checks;
pub mod sweep_options;
pub mod sweep_settings;
pub mod validate;
pub mod verdict;

use std::io::{BufRead, Write};

use anyhow::{anyhow, Context};
use serde::Serialize;
use sweepkit::exit;
use sweepkit::records::{OriginRecord, Record};
use sweepkit::report::{Exit, WithCode};

use read::read_text;

pub use cli::{parse_pct, Args, Command, GridArgs, NextArgs};

/// One config, as `configs` answers.
#[derive(Debug, Serialize)]
struct ConfigAnswer {
    #[serde(rename = "type")]
    tag: &'static str,
    index: usize,
    of: usize,
    label: String,
    config: sweepkit::records::Config,
    state: results::State,
    /// `run` or `skip`.
    action: &'static str,
}

pub(crate) fn grid_of(g: &GridArgs) -> Result<grid::Grid, Exit> {
    grid::expand(&g.params, &g.values).map_err(|e| Exit::new(exit::USAGE, anyhow!(e)))
}

fn point(g: &grid::Grid, index: usize) -> Result<&grid::Point, Exit> {
    g.points.get(index.wrapping_sub(1)).ok_or_else(|| {
        Exit::new(
            exit::USAGE,
            anyhow!(
                "--index {index}: the grid has configs 1 to {}",
                g.points.len()
            ),
        )
    })
}

/// Run sweep-plan.
pub fn run(args: Args, mut stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    let started = std::time::SystemTime::now();
    match &args.command {
        Command::Options {
            argv,
            pool,
            host,
            start,
        } => {
            let want = match (pool, host) {
                (true, _) => sweep_options::Want::Pool,
                (_, Some(id)) => sweep_options::Want::Host(id),
                _ if *start => sweep_options::Want::Start,
                _ => sweep_options::Want::All,
            };
            return options(sweep_options::parse_for(argv, want), stdout);
        }
        Command::DryRun { sweep } => {
            let t = stage_words::Tools {
                swap: &sweep.tools[0],
                ready: &sweep.tools[1],
                load: &sweep.tools[2],
            };
            return options(sweep_options::dry_run(&sweep.argv, &t), stdout);
        }
        Command::Slurm { sweep } => return run_slurm(sweep, stdout),
        // Records streamed through, each flushed: not one answer.
        Command::Validation {
            of,
            trace,
            slo,
            config,
        } => {
            let config = validate::config_arg(config.as_deref())?;
            let to = validate::Mark {
                of,
                file: trace,
                slo: slo.as_deref(),
                config,
            };
            validate::mark(&mut stdin, &mut stdout, &to)?;
            return Ok(());
        }
        _ => {}
    }
    let mut o = out::Out::new(&args.field, &mut stdout).shell(args.shell);
    match args.command {
        Command::Configs {
            grid,
            resume,
            results,
        } => {
            let g = grid_of(&grid)?;
            let text = match &results {
                Some(p) => read_text(p, true)?,
                None => String::new(),
            };
            let lines = results::read(&text);
            for p in &g.points {
                let state = results::state_of(&lines, |c| p.matches(c));
                let skip = resume && state.is_done();
                o.answer(&ConfigAnswer {
                    tag: "config",
                    index: p.index,
                    of: g.points.len(),
                    label: p.label(),
                    config: p.config(),
                    state,
                    action: if skip { "skip" } else { "run" },
                })?;
            }
        }
        Command::Args { grid, index, tool } => {
            let g = grid_of(&grid)?;
            o.words(&point(&g, index)?.args(tool))?;
        }
        Command::Verdict {
            grid,
            index,
            schedule,
            tally,
            since,
            exits,
            retries,
            attempt,
            say,
            results,
        } => {
            let text = read_text(&results, false)?;
            let lines: Vec<_> = results::read(&text)
                .into_iter()
                .filter(|l| l.line > since)
                .collect();
            let mut v = verdict::Verdict {
                tag: "verdict",
                ..verdict::Verdict::default()
            };
            if schedule.is_some() {
                let (state, bench) = schedule::since(&lines, since);
                (v.label, v.state, v.bench_records) = ("schedule".into(), Some(state), bench);
            } else {
                let g = grid_of(&grid)?;
                let i = index.unwrap_or_default();
                let p = point(&g, i)?;
                v.index = i;
                v.label = p.label();
                v.state = Some(results::state_of(&lines, |c| p.matches(c)));
                v.bench_records = results::count(&lines, "bench", |c| p.matches(c));
            }
            if let Some(&[swap, ready, load]) = exits.as_deref() {
                verdict::judge(&mut v, [swap, ready, load], retries, attempt);
                if schedule.is_some() {
                    verdict::judge_schedule(&mut v);
                }
                if let (Some(f), None) = (&tally, v.retry_in_s) {
                    let said = read_text(f, true)?;
                    v.preflight = verdict::new_notes(&lines, &said);
                    if let Some(prefix) = &say {
                        for n in &v.preflight {
                            eprintln!("{prefix}warning: pre-flight: {n}");
                        }
                    }
                    append_line(f, &v)?;
                }
            }
            o.answer(&v)?;
        }
        Command::Tally { from } => {
            let (m, f, s) = verdict::count(&match &from {
                Some(p) => read_text(p, true)?,
                None => String::new(),
            });
            o.answer(&verdict::tally(m, f, s))?
        }
        Command::Origin {
            append,
            copy,
            say,
            url,
            new,
            swept,
            probe,
            file,
        } => {
            let have = match &file {
                Some(f) => origin::find(&read_text(f, true)?).is_some(),
                None => false,
            };
            let mut s = String::new();
            stdin
                .read_to_string(&mut s)
                .context("<stdin>: not UTF-8 text")
                .code(exit::BAD_INPUT)?;
            let line = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            let v: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("<stdin>: not JSON: {e}")))?;
            if let Some(url) = &url {
                let probe = probe.as_deref();
                preflight(
                    &v,
                    &dry_run_checks::Checks {
                        url,
                        new: &new,
                        swept: &swept,
                        probe,
                    },
                )?;
            }
            let rec = Record::Origin(
                origin::new_origin(&v, started)
                    .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("<stdin>: {e}")))?,
            );
            match (have, &append) {
                (true, _) => {
                    if let (Some(prefix), None) = (&say, &copy) {
                        eprintln!(
                            "{prefix}restores will put back the original recorded in {}",
                            file.as_deref().unwrap_or_default()
                        );
                    }
                }
                (false, None) => o.record(&rec)?,
                (false, Some(results)) => {
                    append_line(results, &rec)?;
                    if let Some(c) = &copy {
                        let line = serde_json::to_string(&rec).map_err(anyhow::Error::from)?;
                        std::fs::write(c, format!("{line}\n"))
                            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{c}: {e}")))?;
                    }
                }
            }
        }
        Command::Restore { grid, file } => {
            o.words(&original_words(
                &origin_of(&file)?,
                &file,
                &grid_of(&grid)?.keys,
            )?)?;
        }
        Command::HostDropped { reason, file } => {
            let text = match &file {
                Some(f) => read_text(f, true)?,
                None => String::new(),
            };
            let f = origin::host_dropped(&text, &reason, started).map_err(|e| {
                Exit::new(
                    exit::BAD_INPUT,
                    anyhow!("{}: {e}", file.unwrap_or_default()),
                )
            })?;
            o.record(&Record::Failure(f))?;
        }
        Command::Progress {
            grid,
            index,
            show,
            plain,
            results,
        } => {
            let g = grid_of(&grid)?;
            point(&g, index)?;
            let text = match &results {
                Some(p) => read_text(p, true)?,
                None => String::new(),
            };
            let p = progress::progress(&g, &text, index);
            match show {
                Some(prefix) => {
                    let m = statusline::mode(plain);
                    statusline::emit(&statusline::draw(m, &format!("{prefix}{}", p.line)))?;
                }
                None => o.answer(&p)?,
            }
        }
        Command::ProgressEnd => statusline::emit(&statusline::end(statusline::mode(false)))?,
        Command::Outcome {
            grid,
            since,
            joblog,
            tries,
            interrupted,
            winner_refused,
            results,
        } => {
            let g = grid_of(&grid)?;
            let mut a = fleet::outcome(&g, &read_text(&results, true)?, since);
            if let Some(j) = &joblog {
                let log = read_text(j, true)?;
                if let Some(t) = &tries {
                    a.unstarted = fleet::unstarted(&log, &read_text(t, true)?);
                }
                a.usage = fleet::joblog_usage(&log);
                if a.usage {
                    a.exit = exit::USAGE;
                }
            }
            a.end(&fleet::End {
                interrupted,
                winner_refused,
                joblog: joblog.as_deref().unwrap_or_default(),
                results: &results,
            });
            o.answer(&a)?;
        }
        Command::Hosts { hosts, url } => {
            for h in &hosts::pool(&hosts, &url)? {
                o.answer(h)?;
            }
        }
        Command::FleetStep {
            grid,
            index,
            host,
            state,
            origin_failed,
            suspect,
            swap_exit,
        } => {
            let g = grid_of(&grid)?;
            let p = point(&g, index)?;
            let (state, (step, exit)) = match state {
                Some(st) if !origin_failed => (
                    serde_json::to_value(st).map_err(anyhow::Error::from)?,
                    fleet::step(st, suspect, swap_exit),
                ),
                _ => ("origin_failed".into(), ("blame-host", 1)),
            };
            o.answer(&fleet::Try {
                tag: "try".into(),
                index,
                label: p.label(),
                host,
                state: state.as_str().unwrap_or_default().into(),
                step: step.into(),
                exit,
            })?;
        }
        Command::FleetWatch {
            drop_after,
            hosts,
            slf,
            origins,
            tries,
            results,
        } => {
            let b = fleet::Blame::new(drop_after, hosts);
            let files = fleet::WatchFiles {
                slf: &slf,
                origins: &origins,
                results: &results,
                tries: tries.as_deref(),
            };
            fleet::watch(b, &files, &mut stdin)?;
        }
        Command::Schedule {
            server,
            resume,
            emit_record,
            words,
            results,
        } => {
            let lines = results::read(&read_text(&results, true)?);
            if emit_record {
                let rec = schedule::last_schedule(&lines, &server).ok_or_else(|| {
                    Exit::new(
                        exit::BAD_INPUT,
                        anyhow!("{results}: no schedule record for {server}"),
                    )
                })?;
                o.value(&rec.raw)?;
            } else {
                let st = schedule::step(&lines, &server, resume);
                match words.as_deref() {
                    Some("expect") => o.words(&st.expect)?,
                    Some(_) => o.words(&st.stage)?,
                    None => o.answer(&st)?,
                }
            }
        }
        Command::Step {
            grid,
            knobs,
            after,
            index,
            schedule,
            derived,
            scheduled,
            expect_config,
            retries,
            work,
            resume,
            all,
            adaptive,
            say,
            tally,
            results,
        } => {
            let g = grid_of(&grid)?;
            // The adaptive search needs the file (sweep makes it first).
            let text = read_text(&results, adaptive.is_none())?;
            let lines = results::read(&text);
            let mut st = step::Step {
                tag: "step",
                action: "done",
                ..step::Step::default()
            };
            if let Some(i) = index {
                point(&g, i)?;
            } else if derived.is_some() || scheduled {
                // The configs are done: only the schedule step is left.
            } else if let Some(summary) = &adaptive {
                step::transport_stop(&mut st, &g, &lines, after, retries);
                if st.action != "fail" {
                    let scores = scores_text(summary, &mut stdin)?;
                    let s =
                        search::search(&grid, &knobs, &scores, (&results, &text, &lines), true)?;
                    st = step::adaptive(&s.answer());
                    if st.action == "done" {
                        // The values a finished search never tried.
                        for rec in next::skipped_records(&s.space, &s.decision, s.all, started) {
                            append_line(&results, &rec)?;
                        }
                    }
                }
            } else {
                let walk = if all { step::all } else { step::grid };
                st = walk(&g, &lines, after, resume, &results);
            }
            if let Some(i) = index.or(st.index) {
                step::run_config(&mut st, &g, i, expect_config);
            } else if let (Some(server), "done", false, false) =
                (&schedule, st.action, all, scheduled)
            {
                step::schedule_step(&mut st, &lines, server, resume, derived, &results, &work)
                    .map_err(|e| Exit::new(exit::FAILURE, anyhow!(e)))?;
            }
            if let Some(prefix) = say {
                for n in &st.notes {
                    eprintln!("{prefix}{n}");
                }
            }
            if let Some(f) = &tally {
                append_line(f, &st)?;
            }
            o.answer(&st)?;
        }
        Command::End {
            grid,
            origin: origin_file,
            schedule,
            keep_winner,
            summarize,
            sum_arg,
            validate_on,
            slo,
            validate_load,
            after,
            attempt,
            exits,
            retries,
            work,
            interrupted,
            results,
        } => {
            let g = grid_of(&grid)?;
            let lines = results::read(&read_text(&results, true)?);
            let origin_rec = origin_of(&origin_file)?;
            let original = original_words(&origin_rec, &origin_file, &g.keys)?;
            let wanted = keep_winner || validate_on.is_some();
            let (summary, summarize_exit) = match summarize.filter(|_| wanted) {
                Some(tool) => {
                    let (f, rc) = validate::summary(&tool, &sum_arg, &results, &work)
                        .map_err(|e| Exit::new(exit::FAILURE, anyhow!(e)))?;
                    (Some(f), rc)
                }
                None => (None, exit::OK),
            };
            let winner = match &summary {
                // Nothing picked: summarize's exit says so; the file may be empty.
                Some(f) => Some((
                    f.as_str(),
                    serde_json::from_str(read_text(f, true)?.trim()).unwrap_or_default(),
                )),
                None => None,
            };
            let validate = validate_on.map(|file| end::Validate {
                file,
                slo,
                load: validate_load,
            });
            let inputs = end::Inputs {
                lines: &lines,
                original,
                schedule: schedule.as_deref(),
                winner,
                summarize_exit,
                retries,
                work: &work,
                keys: &g.keys,
                interrupted,
                keep_winner,
                validate,
            };
            let ex = exits.as_deref().unwrap_or(&[0, 0]);
            let mut e = validate::next(&inputs, after, attempt, [ex[0], ex[1]])
                .map_err(|e| Exit::new(exit::FAILURE, anyhow!(e)))?;
            let winner_stays = keep_winner && after.is_some_and(|a| a != end::Swap::Original);
            if winner_stays && e.action == "done" && e.exit == exit::OK {
                e.note = kept_original(&origin_rec).unwrap_or_default();
            }
            o.answer(&e)?;
        }
        Command::Options { .. }
        | Command::DryRun { .. }
        | Command::Slurm { .. }
        | Command::Validation { .. } => {
            unreachable!("answered above")
        }
        Command::Next {
            grid,
            knobs,
            summary,
            emit_skipped,
            results,
        } => run_next(
            &grid,
            &knobs,
            &summary,
            emit_skipped,
            &results,
            &mut stdin,
            &mut o,
            started,
        )?,
    }
    stdout.flush()?;
    Ok(())
}

/// svc-swap's words that put back the original recorded in FILE's origin
/// record; every swept key (`keys`) must be in it.
/// FILE's origin record.
fn origin_of(file: &str) -> Result<OriginRecord, Exit> {
    origin::find(&read_text(file, false)?)
        .ok_or_else(|| Exit::new(exit::ORIGIN_MISSING, anyhow!("{file}: no origin record")))
}

fn original_words(rec: &OriginRecord, file: &str, keys: &[String]) -> Result<Vec<String>, Exit> {
    origin::restore_args(rec, keys).map_err(|k| {
        Exit::new(
            exit::ORIGIN_MISSING,
            anyhow!("{file}: its origin record has no original value for {k} (a results file is for one set of --param); use a new --results FILE"),
        )
    })
}

/// What a kept winner leaves beside a `--container` target: the user's
/// own original container, stopped (svc-swap(1): it is the way back).
fn kept_original(rec: &OriginRecord) -> Option<String> {
    let t = &rec.target;
    let c = t.container.as_ref().filter(|c| c.compose_file.is_none())?;
    let (e, n) = (&c.engine, &c.name);
    Some(format!(
        "the original container is kept, stopped, as {n}.sweepkit-prev: 'svc-swap --container {n} --engine {e} --restore' puts it back, '{e} rm {n}.sweepkit-prev' drops it"
    ))
}

/// Append `answer` to FILE as one JSON line (a tally file: `tally --from`).
fn append_line(path: &str, answer: &impl Serialize) -> Result<(), Exit> {
    use std::io::Write as _;
    let line = serde_json::to_string(answer).map_err(anyhow::Error::from)?;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| writeln!(f, "{line}"))
        .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{path}: {e}")))
}

/// sweep's pre-flight on the dry-run swap record `v`: a refusal is
/// sweep's usage error, said in its name (sweep.sh exits with it).
fn preflight(v: &serde_json::Value, c: &dry_run_checks::Checks<'_>) -> Result<(), Exit> {
    let Ok(Record::Swap(rec)) = serde_json::from_value::<Record>(v.clone()) else {
        return Ok(()); // new_origin says what is wrong with it
    };
    dry_run_checks::check(&rec, c).map_err(|why| {
        sweepkit::report::error("sweep", &anyhow!(why));
        Exit::silent(exit::USAGE)
    })
}

/// `sweep --slurm` (and its --dry-run): errors are sweep's, as for
/// `options`.
fn run_slurm(sweep: &cli::SweepRun, mut stdout: impl Write) -> Result<(), Exit> {
    let mut plan = match slurm::plan::Plan::from_argv(&sweep.argv, &sweep.tools) {
        Ok(p) => p,
        Err(e) => return options(Err(e), stdout),
    };
    plan.summarize = sweep.summarize.clone();
    if plan.dry_run {
        return options(Ok(slurm::script::dry_run(&plan)), stdout);
    }
    match slurm::driver::sweep(&plan) {
        Ok(0) => Ok(()),
        Ok(code) => Err(Exit::silent(code)),
        Err(e) => {
            stdout.flush()?;
            options(Err(e), stdout)
        }
    }
}

/// `options` and `dry-run`: their text, or the usage error in sweep's name.
fn options(answer: Result<String, Exit>, mut stdout: impl Write) -> Result<(), Exit> {
    match answer {
        Ok(text) => {
            stdout.write_all(text.as_bytes())?;
            stdout.flush()?;
            Ok(())
        }
        Err(e) => {
            if let Some(err) = &e.error {
                sweepkit::report::error("sweep", err);
            }
            Err(Exit::silent(e.code))
        }
    }
}

/// summarize's scores for the search: the file `summary`, or stdin (-).
fn scores_text(summary: &str, stdin: &mut impl BufRead) -> Result<String, Exit> {
    if summary != "-" {
        return read_text(summary, false);
    }
    let mut s = String::new();
    stdin
        .read_to_string(&mut s)
        .context("<stdin>: not UTF-8 text")
        .code(exit::BAD_INPUT)?;
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn run_next(
    grid: &GridArgs,
    knobs: &NextArgs,
    summary: &str,
    emit_skipped: bool,
    results: &str,
    stdin: &mut impl BufRead,
    o: &mut out::Out<'_, impl Write>,
    started: std::time::SystemTime,
) -> Result<(), Exit> {
    let all = read_text(results, false)?;
    let lines = results::read(&all);
    let scores = scores_text(summary, stdin)?;
    let s = search::search(grid, knobs, &scores, (results, &all, &lines), true)?;
    if emit_skipped {
        for rec in next::skipped_records(&s.space, &s.decision, s.all, started) {
            o.record(&rec)?;
        }
    } else {
        o.answer(&s.answer())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    testkit::cli_tests!(super::Args);
}
