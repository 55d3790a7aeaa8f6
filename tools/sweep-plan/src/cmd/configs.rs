//! `sweep-plan configs`: the grid's configs in run order, each with its
//! state in the results file and whether `--resume` runs it.

use serde::Serialize;
use sweepkit::exit::Exit;
use sweepkit::records::Config;

use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::results::{self, State};

/// Each config of the grid, in run order, with its state in RESULTS
/// and whether to run it (--resume skips those with a result)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    /// Skip configs whose last record is a result (complete, or a
    /// failure of their own)
    #[arg(long)]
    resume: bool,
    /// Results file (JSON Lines); absent or missing: nothing ran yet
    #[arg(value_name = "RESULTS")]
    results: Option<String>,
}

/// One config, as `configs` answers.
#[derive(Debug, Serialize)]
struct ConfigAnswer {
    #[serde(rename = "type")]
    tag: &'static str,
    index: usize,
    of: usize,
    label: String,
    config: Config,
    state: State,
    /// `run` or `skip`.
    action: &'static str,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    let text = match &a.results {
        Some(p) => read_text(p, true)?,
        None => String::new(),
    };
    let lines = results::read(&text);
    for p in &g.points {
        let state = results::state_of(&lines, |c| p.matches(c));
        let skip = a.resume && state.is_done();
        io.out.answer(&ConfigAnswer {
            tag: "config",
            index: p.index,
            of: g.points.len(),
            label: p.label(),
            config: p.config(),
            state,
            action: if skip { "skip" } else { "run" },
        })?;
    }
    Ok(())
}
