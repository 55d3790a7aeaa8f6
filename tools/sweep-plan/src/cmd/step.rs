//! `sweep-plan step`: which step sweep's loop runs next, with each tool's
//! words (step.rs decides; the adaptive search in search/).

use anyhow::Context;
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::records::ScheduleServer;

use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::results::{self, Line};
use crate::search::knobs::SearchArgs;
use crate::search::{self, answer};
use crate::step::{self, Step};
use crate::summarize;

/// Which step sweep's loop runs next, with each tool's words for it:
/// the grid's next config after the one it ran last (resumed: one
/// whose last record is not a result), or the adaptive search's next
/// value (as `next`; a finished search's untried values get skipped
/// records in RESULTS), then the schedule step; `done` when none is
/// left, with how many were skipped, or `fail` with the error and the
/// exit status
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    #[command(flatten)]
    knobs: SearchArgs,
    /// The config the loop ran last (0: none yet)
    #[arg(long, value_name = "N", default_value_t = 0)]
    after: usize,
    /// Config N itself (a pool job's), with its words
    #[arg(long, value_name = "N", conflicts_with_all = ["all", "adaptive"])]
    index: Option<usize>,
    /// After the configs, the schedule step for SERVER (sweep
    /// --schedule): derive it (summarize --schedule), run it, or done
    #[arg(long, value_name = "SERVER")]
    schedule: Option<ScheduleServer>,
    /// The derive ran (summarize --schedule, its record appended to
    /// RESULTS) and exited RC: run the schedule (0), keep the static
    /// pick (56, refused), or fail
    #[arg(long, value_name = "RC", requires = "schedule")]
    derived: Option<u8>,
    /// The schedule step ran: done
    #[arg(long, requires = "schedule", conflicts_with = "derived")]
    scheduled: bool,
    /// A config's wait-ready words check the live server runs it
    /// (--expect-config per swept flag)
    #[arg(long)]
    expect_config: bool,
    /// sweep's --retries (for the adaptive search's transport stop)
    #[arg(long, value_name = "N", default_value_t = 0)]
    retries: usize,
    /// Where the schedule record for svc-swap --apply-from is written
    #[arg(long, value_name = "DIR", default_value = ".")]
    work: String,
    /// Skip configs whose last record is a result
    #[arg(long)]
    resume: bool,
    /// Every config left to run at once (`pending`), for a pool
    #[arg(long, conflicts_with = "adaptive")]
    all: bool,
    /// The adaptive search, from summarize's summary record of RESULTS
    /// (as `next --summary`)
    #[arg(long, value_name = "SUMMARY")]
    adaptive: Option<String>,
    /// Run summarize (this path) where the step needs it: with --adaptive
    /// for the scores (its summary record of RESULTS, kept in SUMMARY; an
    /// exit other than 0, 1 or 3 fails the step), with --schedule to
    /// derive the schedule (its record appended to RESULTS) rather than
    /// answer `derive`
    #[arg(long, value_name = "PATH")]
    summarize: Option<String>,
    /// An argument for --summarize (repeatable)
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    sum_arg: Vec<String>,
    /// With --summarize: derive the schedule from depths up to K only
    /// (summarize --max-depth K)
    #[arg(long, value_name = "K", requires = "schedule")]
    schedule_max_depth: Option<u32>,
    /// Say the answer's notes (the configs skipped, the search's
    /// reasons, its end and cost) on stderr, each after PREFIX
    #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
    say: Option<String>,
    /// Append the answer (its skipped count) to FILE, for `tally
    /// --from FILE`; a loop that asked to run more steps than 4 per
    /// config plus 40 there is stuck: `fail`
    #[arg(long, value_name = "FILE")]
    tally: Option<String>,
    /// Results file; missing: nothing ran yet
    #[arg(value_name = "RESULTS")]
    results: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    // The adaptive search needs the file (sweep makes it first).
    let text = read_text(&a.results, a.adaptive.is_none())?;
    let lines = results::read(&text);
    let mut st = Step::new();
    if let Some(i) = a.index {
        g.point(i)?;
    } else if a.derived.is_some() || a.scheduled {
        // The configs are done: only the schedule step is left.
    } else if let Some(summary) = &a.adaptive {
        step::transport_stop(&mut st, &g, &lines, a.after, a.retries);
        if st.action != "fail" {
            st = search_step(&a, summary, (&text, &lines), io)?;
        }
    } else {
        let walk = if a.all { step::all } else { step::grid };
        st = walk(&g, &lines, a.after, a.resume, &a.results);
    }
    if let Some(i) = a.index.or(st.index) {
        step::run_config(&mut st, &g, i, a.expect_config);
    } else if let (Some(server), "done", false, false) = (a.schedule, st.action, a.all, a.scheduled)
    {
        schedule_step(&a, &mut st, server.name(), &lines)?;
    }
    if let (Some(f), "run") = (&a.tally, st.action) {
        step::stuck(&mut st, step::runs(&read_text(f, true)?), g.points.len());
    }
    say(&a, &st.notes);
    if let Some(f) = &a.tally {
        results::append_records(f, &[&st])?;
    }
    io.out.answer(&st)
}

/// The adaptive search's step, from RESULTS (`text`, its `lines`) and
/// summarize's scores of it (`summary`, or summarize run now).
fn search_step(
    a: &Args,
    summary: &str,
    (text, lines): (&str, &[Line]),
    io: &mut Io<'_>,
) -> Result<Step, Exit> {
    let scores = match &a.summarize {
        Some(prog) => match summarize::scores(prog, &a.sum_arg, &a.results) {
            Ok(scores) => {
                std::fs::write(summary, &scores)
                    .context(summary.to_string())
                    .code(exit::FAILURE)?;
                scores
            }
            Err(e) => return Ok(Step::failed(e)),
        },
        None => search::scores_text(summary, io.stdin)?,
    };
    let s = search::search(&a.grid, &a.knobs, &scores, (&a.results, text, lines), true)?;
    let st = step::of_search(&s.answer());
    if st.action == "done" {
        // The values a finished search never tried.
        let skipped = answer::skipped_records(&s.space, &s.decision, s.all, io.started);
        results::append_records(&a.results, &skipped)?;
    }
    Ok(st)
}

/// The schedule step for `server` once the configs are done; with
/// --summarize a derivation it asks for runs here, its record appended
/// to RESULTS, and the step goes on from there.
fn schedule_step(a: &Args, st: &mut Step, server: &str, lines: &[Line]) -> Result<(), Exit> {
    let (resume, results, work) = (a.resume, a.results.as_str(), a.work.as_str());
    let (mut derived, mut lines) = (a.derived, lines.to_vec());
    if let (Some(prog), None) = (&a.summarize, derived) {
        let mut first = Step::new();
        step::schedule_step(&mut first, &lines, server, resume, None, results, work)?;
        if first.action == "derive" {
            say(a, &first.notes); // before summarize's reasons
            let depth: Vec<String> = a
                .schedule_max_depth
                .iter()
                .flat_map(|k| ["--max-depth".to_string(), k.to_string()])
                .collect();
            let (rc, records) = summarize::derive(prog, server, &depth, &a.sum_arg, results)?;
            crate::results::append(results, &records)?;
            (derived, lines) = (Some(rc), crate::results::read(&read_text(results, true)?));
        }
    }
    step::schedule_step(st, &lines, server, resume, derived, results, work)
}

/// Say `notes` on stderr after --say's prefix.
fn say(a: &Args, notes: &[String]) {
    if let Some(prefix) = &a.say {
        for n in notes {
            sweepkit::diag::line(format!("{prefix}{n}"));
        }
    }
}
