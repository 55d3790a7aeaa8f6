//! `sweep-plan progress`: where the sweep stands before config N runs,
//! and its ETA (progress.rs), answered or shown on a terminal's bottom
//! row (statusline.rs).

use sweepkit::exit::Exit;

use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::{progress, statusline};

/// Where the sweep stands before config N runs, and its ETA: the mean
/// load and bench time of the config starts in RESULTS so far, times
/// the configs without a result, over the configs that run at once
/// (`--field line`: the human line)
#[derive(Debug, clap::Args)]
pub struct Args {
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
    /// Configs that run at once (a pool's hosts and GPU slots)
    #[arg(long, value_name = "N", default_value = "1")]
    lanes: usize,
    /// Of those, configs that may bench at once (a machine's slots take
    /// turns)
    #[arg(long, value_name = "K", default_value = "1")]
    bench_lanes: usize,
    /// Results file; absent or missing: nothing ran yet
    #[arg(value_name = "RESULTS")]
    results: Option<String>,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    g.point(a.index)?;
    let text = match &a.results {
        Some(p) => read_text(p, true)?,
        None => String::new(),
    };
    let lanes = progress::Lanes {
        runs: a.lanes,
        benches: a.bench_lanes,
    };
    let p = progress::progress_in(&g, &text, a.index, lanes);
    match a.show {
        Some(prefix) => {
            let m = statusline::mode(a.plain);
            statusline::emit(&statusline::draw(m, &format!("{prefix}{}", p.line)))?;
            Ok(())
        }
        None => io.out.answer(&p),
    }
}
