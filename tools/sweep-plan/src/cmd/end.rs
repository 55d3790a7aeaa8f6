//! `sweep-plan end`: how a sweep leaves its server, one swap at a time
//! (end/ decides).

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{OriginRecord, ScheduleServer};

use crate::end::{self, swaps};
use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::{origin, results, summarize};

/// The end of a sweep, one swap at a time: with --keep-winner the
/// schedule when it wins by the objective, else summarize's pick; else
/// (or when that fails) the original config, a transport failure
/// retried. Each answer: `swap` with svc-swap's and wait-ready's words
/// and the lines to say, or `done` with the error and exit status (42:
/// the last swap did not end with a ready server)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    /// The file holding the origin record
    #[arg(long, value_name = "FILE")]
    origin: String,
    /// The sweep ran the SERVER schedule step (its own flags are undone
    /// with the pick or the original)
    #[arg(long, value_name = "SERVER")]
    schedule: Option<ScheduleServer>,
    /// Apply the winner last (the schedule when it wins, else
    /// summarize's pick)
    #[arg(long)]
    keep_winner: bool,
    /// Run summarize (this path) once, into DIR/summary: its summary
    /// record of RESULTS (`--format json`) for --keep-winner and
    /// --validate-on
    #[arg(long, value_name = "PATH")]
    summarize: Option<String>,
    /// An argument for --summarize (repeatable)
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    sum_arg: Vec<String>,
    /// sweep --validate-on: replay trace FILE against the pick (and
    /// the schedule) before the rest of the end
    #[arg(long, value_name = "FILE")]
    validate_on: Option<String>,
    /// sweep --slo: loadgen --slo for the replay
    #[arg(long, value_name = "TERMS", requires = "validate_on")]
    slo: Option<String>,
    /// loadgen's words for the replay (repeatable)
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    validate_load: Vec<String>,
    /// The swap that ran last (none: the first is asked for)
    #[arg(long, value_enum)]
    after: Option<swaps::Swap>,
    /// Which try of the original that was, from 0
    #[arg(long, value_name = "N", default_value_t = 0)]
    attempt: usize,
    /// svc-swap's and wait-ready's exit statuses in it
    #[arg(long, value_name = "STATUS", num_args = 2, requires = "after")]
    exits: Option<Vec<u8>>,
    /// sweep's --retries (a transport failure restores again this often)
    #[arg(long, value_name = "N", default_value_t = 0)]
    retries: usize,
    /// Where the schedule record for svc-swap --apply-from is written
    #[arg(long, value_name = "DIR", default_value = ".")]
    work: String,
    /// 1: the sweep was interrupted, so the original's wait is bounded
    /// by the first time to ready RESULTS measured, plus a margin
    #[arg(long, value_name = "0|1", default_value = "0", action = clap::ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new())]
    interrupted: bool,
    #[arg(value_name = "RESULTS")]
    results: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    let lines = results::read(&read_text(&a.results, true)?);
    let origin_rec = origin::read(&a.origin)?;
    let original = origin::restore_words(&origin_rec, &a.origin, &g.keys)?;
    let wanted = a.keep_winner || a.validate_on.is_some();
    let (summary, summarize_exit) = match a.summarize.filter(|_| wanted) {
        Some(tool) => {
            let (f, rc) = summarize::summary(&tool, &a.sum_arg, &a.results, &a.work)?;
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
    let validate = a.validate_on.map(|file| swaps::Validate {
        file,
        slo: a.slo,
        load: a.validate_load,
    });
    let inputs = swaps::Inputs {
        lines: &lines,
        original,
        schedule: a.schedule.map(ScheduleServer::name),
        winner,
        summarize_exit,
        retries: a.retries,
        work: &a.work,
        keys: &g.keys,
        interrupted: a.interrupted,
        keep_winner: a.keep_winner,
        validate,
    };
    let ex = a.exits.as_deref().unwrap_or(&[0, 0]);
    let mut e = end::next(&inputs, a.after, a.attempt, [ex[0], ex[1]])
        .map_err(|e| Exit::new(exit::FAILURE, anyhow!(e)))?;
    let winner_stays = a.keep_winner && a.after.is_some_and(|s| s != swaps::Swap::Original);
    if winner_stays && e.action == "done" && e.exit == exit::OK {
        e.note = kept_original(&origin_rec).unwrap_or_default();
    }
    io.out.answer(&e)
}

/// What a kept winner leaves beside a `--container` target: the user's
/// own original container, stopped (svc-swap(1): it is the way back).
fn kept_original(rec: &OriginRecord) -> Option<String> {
    let t = &rec.target;
    let c = t.container.as_ref().filter(|c| c.compose_file.is_none())?;
    let (e, n, kept) = (&c.engine, &c.name, sweepkit::engine::KEPT_SUFFIX);
    Some(format!(
        "the original container is kept, stopped, as {n}{kept}: 'svc-swap --container {n} --engine {e} --restore' puts it back, '{e} rm {n}{kept}' drops it"
    ))
}
