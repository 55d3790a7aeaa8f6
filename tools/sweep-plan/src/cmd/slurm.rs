//! `sweep-plan slurm`: `sweep --slurm` run to its end, or its --dry-run's
//! batch script (slurm/), after the look at the spec every path takes
//! before its first stop (preflight/look.rs).

use sweepkit::diag;
use sweepkit::exit::Exit;

use super::{as_sweep, SweepRun};
use crate::out::Io;
use crate::preflight::look;
use crate::slurm;

/// Run `sweep --slurm`: each config a Slurm job (sweep(1), SLURM), the
/// table at its end; with --dry-run in ARGV print the batch script and
/// the sbatch line. Either refuses first what a sweep without Slurm
/// refuses before its first stop
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: SweepRun,
}

/// Errors are sweep's, as for `options`.
pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let s = a.sweep;
    let mut plan = match slurm::plan::Plan::from_argv(&s.argv, &s.tools) {
        Ok(p) => p,
        Err(e) => return as_sweep(Err(e), io),
    };
    plan.summarize = s.summarize;
    for note in plan.slurm.time_notes() {
        diag::warning("sweep", note);
    }
    if plan.dry_run {
        let looked = look::dry_look(&plan.tools[0], &plan.ask, &plan.results, &plan.grid.keys);
        let script = looked.map(|()| slurm::script::dry_run(&plan));
        return as_sweep(script, io);
    }
    let seen = match look::look(&plan.tools[0], &plan.ask) {
        Ok(seen) => seen,
        Err(stop) => return as_sweep(Err(stop.into_exit()), io),
    };
    match slurm::sweep(&plan, &seen, io.started) {
        Ok(0) => Ok(()),
        Ok(code) => Err(Exit::silent(code)),
        Err(e) => as_sweep(Err(e), io),
    }
}
