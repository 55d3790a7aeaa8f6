//! `sweep-plan restore`: svc-swap's words that put the origin record's
//! config back.

use sweepkit::exit::Exit;

use crate::grid::GridArgs;
use crate::origin;
use crate::out::Io;

/// svc-swap's words that put ORIGIN's original config back, one per
/// line; every swept key must be in it
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    #[arg(value_name = "ORIGIN")]
    file: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let rec = origin::read(&a.file)?;
    io.out
        .words(&origin::restore_words(&rec, &a.file, &a.grid.grid()?.keys)?)
}
