//! `sweep-plan dry-run`: `sweep --dry-run`'s plan (sweep_options.rs).

use sweepkit::report::Exit;

use super::{as_sweep, SweepRun};
use crate::out::Io;
use crate::{stage_words, sweep_options};

/// sweep(1) --dry-run: print the plan for sweep's arguments (after
/// --): with --hosts each host and its URL, then each config's pipe as
/// a command to copy, the tools at the paths given
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: SweepRun,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let t = &a.sweep.tools;
    let tools = stage_words::Tools {
        swap: &t[0],
        ready: &t[1],
        load: &t[2],
    };
    as_sweep(sweep_options::dry_run(&a.sweep.argv, &tools), io)
}
