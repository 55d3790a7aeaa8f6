//! sweep-plan's subcommands, one file each (as xsv's `src/cmd/`): each
//! owns its arguments (`Args`, whose doc comment is its help) and its
//! `run`, the glue between the command line and the modules that decide.
//! lib.rs's table names them.

pub mod args;
pub mod configs;
pub mod dry_run;
pub mod end;
pub mod fleet_step;
pub mod fleet_watch;
pub mod host_dropped;
pub mod hosts;
pub mod next;
pub mod options;
pub mod origin;
pub mod outcome;
pub mod progress;
pub mod progress_end;
pub mod restore;
pub mod schedule;
pub mod slot_bench;
pub mod slurm;
pub mod step;
pub mod tally;
pub mod validation;
pub mod verdict;

use sweepkit::exit::Exit;

use crate::out::Io;

/// What `dry-run` and `slurm` take: the tools sweep found, and sweep's
/// own arguments after `--`.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepRun {
    /// svc-swap's, wait-ready's and loadgen's paths
    #[arg(long, value_names = ["SVC_SWAP", "WAIT_READY", "LOADGEN"], num_args = 3, required = true)]
    pub tools: Vec<String>,
    /// summarize's path: `slurm` scores the --adaptive search and
    /// derives the --schedule with it
    #[arg(long, value_name = "SUMMARIZE")]
    pub summarize: Option<String>,
    #[arg(
        value_name = "SWEEP_ARG",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub argv: Vec<String>,
}

/// `options`, `dry-run` and `slurm`: their text, or the error in sweep's
/// name (sweep.sh exits with its status).
fn as_sweep(answer: Result<String, Exit>, io: &mut Io<'_>) -> Result<(), Exit> {
    match answer {
        Ok(text) => io.out.text(&text),
        Err(e) => {
            io.out.flush()?;
            if let Some(err) = &e.error {
                sweepkit::diag::error("sweep", err);
            }
            Err(Exit::silent(e.code))
        }
    }
}
