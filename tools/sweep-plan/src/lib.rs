//! sweep-plan: the decisions of a sweep (sweep(1)), as a typed tool the
//! script asks: the grid's configs and which of them a results file
//! already answers (`--resume`), one config's words for each tool and its
//! verdict after a run, the origin record and what to restore, the record
//! of a dropped host, and the adaptive search's next step. Answers are
//! JSON Lines, one object per config or decision; `--field NAME` prints
//! the named fields one per line instead, so bash reads them with
//! `mapfile` and parses nothing.

pub mod adapt;
pub mod cost;
pub mod grid;
pub mod next;
pub mod origin;
pub mod out;
pub mod progress;
pub mod results;
pub mod schedule;
pub mod statusline;
pub mod sweep_options;

use std::io::{BufRead, Write};

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use serde::Serialize;
use sweepkit::exit;
use sweepkit::records::Record;
use sweepkit::report::{Exit, WithCode};

/// Decide a sweep's campaign: what to run next, what to restore.
///
/// sweep(1) asks; each answer is a function of the grid (--param and
/// --values, as sweep takes them) and the results file, so a resumed sweep
/// asks and acts exactly the same.
#[derive(Debug, Parser)]
#[command(name = "sweep-plan", version, max_term_width = 79)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,

    /// Print these fields of each answer, one per line (arrays: the
    /// elements joined by spaces; absent: an empty line), not JSON
    #[arg(long, value_name = "NAME", global = true)]
    pub field: Vec<String>,
}

/// The grid, as sweep(1) takes it.
#[derive(Debug, Clone, clap::Args)]
pub struct GridArgs {
    /// Launch flag to vary (repeatable); A,B: flags that move together
    #[arg(
        long = "param",
        value_name = "NAME",
        required = true,
        allow_hyphen_values = true
    )]
    pub params: Vec<String>,

    /// Comma-separated values of the --param at the same place (with A,B:
    /// each value A:B)
    #[arg(
        long = "values",
        value_name = "LIST",
        required = true,
        allow_hyphen_values = true
    )]
    pub values: Vec<String>,
}

/// The adaptive search's knobs.
#[derive(Debug, Clone, clap::Args)]
pub struct NextArgs {
    /// Stop after K further values past the best showed the plateau
    #[arg(long, value_name = "K", default_value_t = 2)]
    pub patience: usize,

    /// Weighted-score gap that counts as a close call (and a drop that
    /// counts as a clear peak) until repeats measure the noise
    #[arg(long, value_name = "PCT", default_value = "5%", value_parser = parse_pct)]
    pub noise_margin: f64,

    /// Extra config starts allowed for re-measuring close calls
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub repeat_budget: usize,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Each config of the grid, in run order, with its state in RESULTS
    /// and whether to run it (--resume skips those with a result)
    Configs {
        #[command(flatten)]
        grid: GridArgs,
        /// Skip configs whose last record is a result (complete, or a
        /// failure of their own)
        #[arg(long)]
        resume: bool,
        /// Results file (JSON Lines); absent or missing: nothing ran yet
        #[arg(value_name = "RESULTS")]
        results: Option<String>,
    },
    /// One config's arguments for a tool, one word per line
    Args {
        #[command(flatten)]
        grid: GridArgs,
        /// The config's place in the grid (1-based, as `configs` numbers)
        #[arg(long, value_name = "N")]
        index: usize,
        /// Which tool's words
        #[arg(long = "for", value_name = "TOOL", value_enum)]
        tool: grid::Tool,
    },
    /// What one run of a config left in RESULTS: its state and how many
    /// bench records it wrote (other configs' records are not counted)
    Verdict {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(long, value_name = "N")]
        index: usize,
        /// Only the records after this many lines (the file's length
        /// before the run)
        #[arg(long, value_name = "LINES", default_value_t = 0)]
        since: usize,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// Read a dry-run swap record on stdin; print the origin record to
    /// append, unless ORIGIN already holds one (then print nothing)
    Origin {
        /// Where the origin is kept (the results file); missing: none yet
        #[arg(value_name = "ORIGIN")]
        file: Option<String>,
    },
    /// svc-swap's words that put ORIGIN's original config back, one per
    /// line; every swept key must be in it
    Restore {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(value_name = "ORIGIN")]
        file: String,
    },
    /// The record of a host the fleet dropped for REASON; ORIGIN is that
    /// host's origin record (may be missing)
    HostDropped {
        #[arg(long, value_name = "REASON")]
        reason: String,
        #[arg(value_name = "ORIGIN")]
        file: Option<String>,
    },
    /// The adaptive search's next step along the one --param: measure a
    /// value, or done (and why, what it cost)
    Next {
        #[command(flatten)]
        grid: GridArgs,
        #[command(flatten)]
        knobs: NextArgs,
        /// summarize's summary record of RESULTS (`summarize --format json
        /// --objective weighted --pool-hosts RESULTS`); - is stdin; empty:
        /// nothing measured yet
        #[arg(long, value_name = "FILE")]
        summary: String,
        /// Write a skipped record for each untried value of a finished
        /// search (none twice), instead of the answer
        #[arg(long)]
        emit_skipped: bool,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// How a pool's grid ended (sweep --hosts): configs measured, failed
    /// and left without a result, and the exit status sweep(1) documents
    Outcome {
        #[command(flatten)]
        grid: GridArgs,
        /// Hosts the pool dropped
        #[arg(long, value_name = "N", default_value_t = 0)]
        dropped: usize,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// A pool job's next step after one try of its config on one host,
    /// from that try's verdict state: measured, blame-host (a transport
    /// failure: another host), try-elsewhere (a first failure: another
    /// host before it counts), config-failed or interrupted
    FleetStep {
        /// The try's verdict (`verdict --field state`)
        #[arg(long, value_enum)]
        state: results::State,
        /// The config already failed on another host
        #[arg(long)]
        suspect: bool,
        /// svc-swap's exit status in the try
        #[arg(long, value_name = "N", default_value_t = 0)]
        swap_exit: u8,
    },
    /// `sweep --schedule`'s step after the grid: derive, run or done (its
    /// records in RESULTS after the last schedule record), the words for
    /// wait-ready, and with --emit-record that schedule record itself
    Schedule {
        /// The server the schedule is for
        #[arg(long, value_name = "SERVER", value_parser = ["vllm", "sglang"])]
        server: String,
        /// Keep a schedule RESULTS holds (without: always derive anew)
        #[arg(long)]
        resume: bool,
        /// run_state and run_bench_records: only the records after this
        /// many lines (the file's length before one run)
        #[arg(long, value_name = "LINES", default_value_t = 0)]
        since: usize,
        /// Print the last schedule record (as svc-swap --apply-from reads
        /// it) instead of the answer; none: exit 3
        #[arg(long)]
        emit_record: bool,
        /// Print one tool's words one per line instead: expect (wait-ready
        /// --expect-config), stage (--pipeline-config) or restore (svc-swap:
        /// undo the schedule's flags outside the swept --key)
        #[arg(long, value_name = "WHICH", value_parser = ["expect", "stage", "restore"])]
        words: Option<String>,
        /// With --words restore: a swept key (repeatable; the origin
        /// record restores those)
        #[arg(long, value_name = "KEY")]
        key: Vec<String>,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// Where the sweep stands before config N runs, and its ETA: the mean
    /// load and bench time of the config starts in RESULTS so far, times
    /// the configs without a result (`--field line`: the human line)
    Progress {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(long, value_name = "N")]
        index: usize,
        /// Show the line on stderr, after PREFIX, instead of answering on
        /// stdout: kept on the bottom row of a terminal, else a plain line
        #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
        show: Option<String>,
        /// With --show: a plain line even on a terminal
        #[arg(long, requires = "show")]
        plain: bool,
        /// Results file; absent or missing: nothing ran yet
        #[arg(value_name = "RESULTS")]
        results: Option<String>,
    },
    /// Give a terminal's bottom row back after `progress --show` (the
    /// whole screen scrolls again, the row is cleared); off a terminal,
    /// nothing. sweep(1) runs it at exit, signals included
    ProgressEnd,
    /// Parse sweep(1)'s own arguments (after --) with its one option
    /// definition; print its settings as bash assignments, every value
    /// single-quoted (sweep.sh evals them); a bad one: `sweep: error:`, 2
    Options {
        #[arg(
            value_name = "SWEEP_ARG",
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        argv: Vec<String>,
    },
}

/// clap's parser for a percentage (`5%` or `5`), as a fraction.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    let x: f64 = t
        .parse()
        .map_err(|_| format!("\"{s}\": expected a percentage like 5%"))?;
    if !(0.0..=100.0).contains(&x) {
        return Err(format!("\"{s}\": must be between 0% and 100%"));
    }
    Ok(x / 100.0)
}

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

/// A pool's end, as `outcome` answers.
#[derive(Debug, Serialize)]
struct Outcome {
    #[serde(rename = "type")]
    tag: &'static str,
    measured: usize,
    failed: usize,
    /// Configs with no result (pending, transport only, cut short).
    missing: usize,
    dropped: usize,
    /// 43 configs left unrun, 41 all failed, 40 some failed, 45 a host
    /// dropped, else 0.
    exit: u8,
}

fn outcome(g: &grid::Grid, text: &str, dropped: usize) -> Outcome {
    let lines = results::read(text);
    let (mut measured, mut failed, mut missing) = (0, 0, 0);
    for p in &g.points {
        match results::state_of(&lines, |c| p.matches(c)) {
            results::State::Complete => measured += 1,
            results::State::Failed | results::State::Transport => failed += 1,
            _ => missing += 1,
        }
    }
    let exit = if missing > 0 {
        exit::NO_HOST_LEFT
    } else if failed > 0 && measured == 0 {
        exit::ALL_CONFIGS_FAILED
    } else if failed > 0 {
        exit::SOME_CONFIGS_FAILED
    } else if dropped > 0 {
        exit::HOST_DROPPED
    } else {
        exit::OK
    };
    Outcome {
        tag: "outcome",
        measured,
        failed,
        missing,
        dropped,
        exit,
    }
}

/// A pool job's step, as `fleet-step` answers.
#[derive(Debug, Serialize)]
struct FleetStep {
    #[serde(rename = "type")]
    tag: &'static str,
    step: &'static str,
    /// The job's exit status, for the steps that end it.
    #[serde(skip_serializing_if = "Option::is_none")]
    exit: Option<u8>,
}

/// A config that fails on one host runs once more on another before it
/// counts as its own failure (a GPU fault or a leftover process on one
/// host looks exactly like an OOM at load), unless pre-flight refused the
/// config itself; a transport failure blames its host.
fn fleet_step(state: results::State, suspect: bool, swap_exit: u8) -> FleetStep {
    use results::State as S;
    let (step, exit) = match state {
        S::Complete => ("measured", Some(exit::OK)),
        S::Transport => ("blame-host", None),
        S::Failed if suspect || swap_exit == exit::PREFLIGHT_REJECTED => {
            ("config-failed", Some(exit::SOME_CONFIGS_FAILED))
        }
        S::Failed => ("try-elsewhere", None),
        S::Pending | S::Incomplete => ("interrupted", Some(exit::INTERRUPTED)),
    };
    FleetStep {
        tag: "fleet_step",
        step,
        exit,
    }
}

/// A run's verdict.
#[derive(Debug, Serialize)]
struct Verdict {
    #[serde(rename = "type")]
    tag: &'static str,
    index: usize,
    label: String,
    /// The state of its last record; `pending`: it wrote none.
    state: results::State,
    bench_records: usize,
}

fn grid_of(g: &GridArgs) -> Result<grid::Grid, Exit> {
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

/// Read FILE as text; `missing_ok`: a file not there reads as empty.
fn read_text(path: &str, missing_ok: bool) -> Result<String, Exit> {
    match std::fs::read(path) {
        Ok(b) => String::from_utf8(b)
            .map_err(|_| anyhow!("{path}: not UTF-8 text"))
            .code(exit::BAD_INPUT),
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Exit::new(exit::BAD_INPUT, anyhow!("{path}: {e}"))),
    }
}

/// Run sweep-plan.
pub fn run(args: Args, mut stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    let started = std::time::SystemTime::now();
    if let Command::Options { argv } = &args.command {
        return options(argv, stdout);
    }
    let mut o = out::Out::new(&args.field, &mut stdout);
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
            since,
            results,
        } => {
            let g = grid_of(&grid)?;
            let p = point(&g, index)?;
            let text = read_text(&results, false)?;
            let lines: Vec<_> = results::read(&text)
                .into_iter()
                .filter(|l| l.line > since)
                .collect();
            o.answer(&Verdict {
                tag: "verdict",
                index,
                label: p.label(),
                state: results::state_of(&lines, |c| p.matches(c)),
                bench_records: results::count(&lines, "bench", |c| p.matches(c)),
            })?;
        }
        Command::Origin { file } => {
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
            let rec = origin::new_origin(&v, started)
                .map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!("<stdin>: {e}")))?;
            if !have {
                o.record(&Record::Origin(rec))?;
            }
        }
        Command::Restore { grid, file } => {
            let g = grid_of(&grid)?;
            let text = read_text(&file, false)?;
            let rec = origin::find(&text).ok_or_else(|| {
                Exit::new(exit::ORIGIN_MISSING, anyhow!("{file}: no origin record"))
            })?;
            let words = origin::restore_args(&rec, &g.keys).map_err(|k| {
                Exit::new(
                    exit::ORIGIN_MISSING,
                    anyhow!("{file}: its origin record has no original value for {k} (a results file is for one set of --param); use a new --results FILE"),
                )
            })?;
            o.words(&words)?;
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
            dropped,
            results,
        } => {
            let g = grid_of(&grid)?;
            o.answer(&outcome(&g, &read_text(&results, true)?, dropped))?;
        }
        Command::FleetStep {
            state,
            suspect,
            swap_exit,
        } => o.answer(&fleet_step(state, suspect, swap_exit))?,
        Command::Schedule {
            server,
            resume,
            since,
            emit_record,
            words,
            key,
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
                let st = schedule::step(&lines, &server, resume, since);
                match words.as_deref() {
                    Some("expect") => o.words(&st.expect)?,
                    Some("restore") => o.words(&schedule::restore_words(&lines, &server, &key))?,
                    Some(_) => o.words(&st.stage)?,
                    None => o.answer(&st)?,
                }
            }
        }
        Command::Options { .. } => unreachable!("answered above"),
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

/// `options`: sweep's settings, or its usage error in sweep's name.
fn options(argv: &[String], mut stdout: impl Write) -> Result<(), Exit> {
    match sweep_options::parse(argv) {
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
    if grid.params.len() != 1 || grid.params[0].contains(',') {
        return Err(Exit::new(
            exit::USAGE,
            anyhow!("next walks one parameter: give one --param NAME (no grid, no A,B)"),
        ));
    }
    let g = grid_of(grid)?;
    let values: Vec<String> = g.points.iter().map(|p| p.words[0].1.clone()).collect();
    let space = next::Space::ordered(&grid.params[0], &values)?;
    let all = read_text(results, false)?;
    let lines = results::read(&all);
    next::check_input(&space, results, &lines)?;
    let scores_text = if summary == "-" {
        let mut s = String::new();
        stdin
            .read_to_string(&mut s)
            .context("<stdin>: not UTF-8 text")
            .code(exit::BAD_INPUT)?;
        s
    } else {
        read_text(summary, false)?
    };
    let scores = next::read_scores(&scores_text)?;
    let (d, rows) = next::decide(&space, &lines, &scores, knobs);
    if emit_skipped {
        for rec in next::skipped_records(&space, &d, &all, started) {
            o.record(&rec)?;
        }
    } else {
        let mut a = next::answer(&space, &d, &all, &rows);
        a.index = g
            .points
            .iter()
            .find(|p| Some(&p.words[0].1) == a.value.as_ref())
            .map(|p| p.index);
        o.answer(&a)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use results::State as S;

    testkit::cli_tests!(super::Args);

    #[test]
    fn a_first_failure_moves_on_and_a_second_one_stands() {
        let step = |st, sus, rc| fleet_step(st, sus, rc).step;
        assert_eq!(step(S::Complete, true, 0), "measured");
        assert_eq!(step(S::Transport, false, 21), "blame-host");
        assert_eq!(step(S::Failed, false, 24), "try-elsewhere");
        assert_eq!(step(S::Failed, true, 24), "config-failed");
        assert_eq!(
            step(S::Failed, false, exit::PREFLIGHT_REJECTED),
            "config-failed"
        );
        assert_eq!(step(S::Incomplete, false, 130), "interrupted");
        assert_eq!(
            fleet_step(S::Failed, true, 0).exit,
            Some(exit::SOME_CONFIGS_FAILED)
        );
    }
}
