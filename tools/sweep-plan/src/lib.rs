//! sweep-plan: the decisions of a sweep (sweep(1)), as a typed tool the
//! script asks: the grid's configs and which of them a results file
//! already answers (`--resume`), one config's words for each tool and the
//! verdict on a run, the origin record and what to restore, the adaptive
//! search's next step (`step`: the one loop's next config, either way),
//! and for a pool (`--hosts`) its hosts, each try's
//! step and record, the blame that drops a host, and how the pool ended;
//! for GPU slots on one machine, each config's bench under its lock.
//! Answers are JSON Lines, one object per config or decision; `--field
//! NAME` prints the named fields one per line instead, so bash reads them
//! with `mapfile` and parses nothing.
//!
//! This file is the table of subcommands: each is a module of `cmd/`
//! that owns its arguments and its `run`.

pub mod cmd;
pub mod end;
pub mod fleet;
pub mod grid;
pub mod host;
pub mod hosts;
pub mod load_args;
pub mod origin;
pub mod out;
pub mod preflight;
pub mod progress;
pub mod quote;
mod read;
pub mod results;
pub mod schedule;
pub mod search;
pub mod slots;
pub mod slurm;
pub mod statusline;
pub mod step;
pub mod summarize;
pub mod sweep;
pub mod verdict;

use std::io::{BufRead, Write};

use clap::Parser;
use sweepkit::exit::Exit;

use out::{Io, Out};

/// Decide a sweep's campaign: what to run next, what to restore.
///
/// sweep(1) asks; each answer is a function of the grid (--param and
/// --values, as sweep takes them) and the results file, so a resumed sweep
/// asks and acts exactly the same.
#[derive(Debug, Parser)]
#[command(name = "sweep-plan", version, max_term_width = 79)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,

    /// Print these fields of each answer, one per line (arrays: the
    /// elements joined by spaces; absent: an empty line), not JSON
    #[arg(long, value_name = "NAME", global = true)]
    pub field: Vec<String>,

    /// Print each answer as bash assignments instead, one field a line
    /// (NAME='text', arrays NAME=('a' 'b')), every value single-quoted so
    /// sweep(1) can eval them; with --field only those fields
    #[arg(long, global = true)]
    pub shell: bool,
}

/// The table: each subcommand's variant (its name, kebab-cased) and the
/// module of `cmd/` that owns its `Args` and `run`, in `--help` order.
macro_rules! subcommands {
    ($($variant:ident => $module:ident,)*) => {
        // (No doc comment: clap would make it sweep-plan's about.)
        #[derive(Debug, clap::Subcommand)]
        pub enum Command {
            $($variant(cmd::$module::Args),)*
        }

        impl Command {
            fn run(self, io: &mut Io<'_>) -> Result<(), Exit> {
                match self {
                    $(Command::$variant(a) => cmd::$module::run(a, io),)*
                }
            }
        }
    };
}

subcommands! {
    Configs => configs,
    Args => args,
    Verdict => verdict,
    Tally => tally,
    Origin => origin,
    End => end,
    Validation => validation,
    Restore => restore,
    HostDropped => host_dropped,
    Next => next,
    Step => step,
    Outcome => outcome,
    Hosts => hosts,
    FleetStep => fleet_step,
    FleetWatch => fleet_watch,
    SlotBench => slot_bench,
    Schedule => schedule,
    Progress => progress,
    ProgressEnd => progress_end,
    Options => options,
    DryRun => dry_run,
    Slurm => slurm,
}

/// Run sweep-plan.
pub fn run(args: Args, mut stdin: impl BufRead, mut stdout: impl Write) -> Result<(), Exit> {
    let Args {
        command,
        field,
        shell,
    } = args;
    let mut io = Io {
        stdin: &mut stdin,
        out: Out::new(&field, &mut stdout).shell(shell),
        started: std::time::SystemTime::now(),
    };
    command.run(&mut io)?;
    io.out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    testkit::cli_tests!(super::Args);
}
