//! `sweep-plan next`: the adaptive search's next step along the one
//! --param (search/), or a finished search's skipped records.

use sweepkit::exit::Exit;

use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::results;
use crate::search::knobs::SearchArgs;
use crate::search::{self, answer};

/// The adaptive search's next step along the one --param: measure a
/// value, or done (and why, what it cost)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    #[command(flatten)]
    knobs: SearchArgs,
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
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let all = read_text(&a.results, false)?;
    let lines = results::read(&all);
    let scores = search::scores_text(&a.summary, io.stdin)?;
    let s = search::search(&a.grid, &a.knobs, &scores, (&a.results, &all, &lines), true)?;
    if a.emit_skipped {
        for rec in answer::skipped_records(&s.space, &s.decision, s.all, io.started) {
            io.out.record(&rec)?;
        }
    } else {
        io.out.answer(&s.answer())?;
    }
    Ok(())
}
