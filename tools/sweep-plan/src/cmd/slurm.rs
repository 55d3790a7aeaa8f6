//! `sweep-plan slurm`: `sweep --slurm` run to its end, or its --dry-run's
//! batch script (slurm/).

use sweepkit::exit::Exit;

use super::{as_sweep, SweepRun};
use crate::out::Io;
use crate::slurm;

/// Run `sweep --slurm`: each config a Slurm job (sweep(1), SLURM);
/// with --dry-run in ARGV print the batch script and the sbatch line
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
    if plan.dry_run {
        return as_sweep(Ok(slurm::script::dry_run(&plan)), io);
    }
    match slurm::driver::sweep(&plan) {
        Ok(0) => Ok(()),
        Ok(code) => Err(Exit::silent(code)),
        Err(e) => as_sweep(Err(e), io),
    }
}
