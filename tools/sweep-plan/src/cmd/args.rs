//! `sweep-plan args`: one config's words for one tool, one per line.

use sweepkit::exit::Exit;

use crate::grid::{self, GridArgs};
use crate::out::Io;

/// One config's arguments for a tool, one word per line
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    /// The config's place in the grid (1-based, as `configs` numbers)
    #[arg(long, value_name = "N")]
    index: usize,
    /// Which tool's words
    #[arg(long = "for", value_name = "TOOL", value_enum)]
    tool: grid::Tool,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    io.out.words(&g.point(a.index)?.args(a.tool))
}
