//! `sweep-plan dry-run`: `sweep --dry-run`'s plan (sweep/dry_run.rs).

use sweepkit::exit::Exit;

use super::{as_sweep, SweepRun};
use crate::out::Io;
use crate::sweep::checks::For;
use crate::sweep::dry_run::{self, Tools};
use crate::sweep::{self, Read};

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
    let tools = Tools {
        swap: &t[0],
        ready: &t[1],
        load: &t[2],
    };
    let plan = sweep::read(&a.sweep.argv, For::Plan)
        .and_then(Read::to_plan)
        .and_then(|s| dry_run::plan(&s, &tools));
    as_sweep(plan, io)
}
