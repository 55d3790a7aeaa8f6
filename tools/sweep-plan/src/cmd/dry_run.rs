//! `sweep-plan dry-run`: `sweep --dry-run`'s plan (sweep/dry_run.rs), after
//! the look at the target the run takes before its first stop
//! (preflight/look.rs), which refuses what the run would refuse.

use sweepkit::exit::Exit;

use super::{as_sweep, SweepRun};
use crate::out::Io;
use crate::preflight::look;
use crate::sweep::checks::For;
use crate::sweep::dry_run::{self, Tools};
use crate::sweep::stage_words::Target;
use crate::sweep::{self, Read};

/// sweep(1) --dry-run: refuse what the run would refuse before its first
/// stop (reading the launch line as it would, changing nothing), then
/// print the plan for sweep's arguments (after --): with --hosts each
/// host and its URL, then each config's pipe as a command to copy, the
/// tools at the paths given
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
        .and_then(|s| {
            // The target the run looks at first: the pool's first host.
            let target = match s.args.hosts {
                Some(_) => s.pool()?.first().map(Target::of_host),
                None => None,
            };
            let ask = s.ask(&target.unwrap_or_else(|| s.target()), true);
            look::dry_look(tools.swap, &ask, &s.args.results, &s.grid.keys)?;
            dry_run::plan(&s, &tools)
        });
    as_sweep(plan, io)
}
