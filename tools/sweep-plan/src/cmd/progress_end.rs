//! `sweep-plan progress-end`: a terminal's bottom row given back.

use sweepkit::exit::Exit;

use crate::out::Io;
use crate::statusline;

/// Give a terminal's bottom row back after `progress --show` (the
/// whole screen scrolls again, the row is cleared); off a terminal,
/// nothing. sweep(1) runs it at exit, signals included
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_: Args, _: &mut Io<'_>) -> Result<(), Exit> {
    statusline::emit(&statusline::end(statusline::mode(false)))?;
    Ok(())
}
