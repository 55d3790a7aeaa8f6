//! `sweep-plan outcome`: how a pool's grid ended (fleet.rs counts).

use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::fleet;
use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::summarize;

/// How a pool's grid ended (sweep --hosts): configs measured, failed
/// and left without a result, hosts dropped, whether a job's tool
/// rejected its arguments (usage), the exit status sweep(1) documents,
/// and what sweep says at the end (error, warning, done, refusal),
/// whether the restores apply the winner (keep_winner)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    /// Count the host_dropped records after this many lines (the
    /// file's length when the pool started)
    #[arg(long, value_name = "LINES", default_value_t = 0)]
    since: usize,
    /// GNU parallel's --joblog of the pool: a job that exited 2 (a
    /// usage error) is one (missing: none ran)
    #[arg(long, value_name = "FILE")]
    joblog: Option<String>,
    /// fleet-watch's --tries file: with --joblog, the jobs that
    /// ended well without a try record (unstarted: none of sweep's
    /// job ran)
    #[arg(long, value_name = "FILE", requires = "joblog")]
    tries: Option<String>,
    /// The pool was interrupted: exit 130 (a usage error stays 2)
    #[arg(long)]
    interrupted: bool,
    /// sweep --keep-winner: refused when summarize (--summarize) finds
    /// hosts of different hardware or server version (one pick would
    /// compare the hosts): exit 42, the refusal to say, and no winner
    /// applied
    #[arg(long, requires = "summarize")]
    keep_winner: bool,
    /// summarize's path, for --keep-winner
    #[arg(long, value_name = "PATH")]
    summarize: Option<String>,
    /// An argument for --summarize (repeatable)
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    sum_arg: Vec<String>,
    #[arg(value_name = "RESULTS")]
    results: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    let mut o = fleet::outcome(&g, &read_text(&a.results, true)?, a.since);
    if let Some(j) = &a.joblog {
        let log = read_text(j, true)?;
        if let Some(t) = &a.tries {
            o.unstarted = fleet::unstarted(&log, &read_text(t, true)?);
        }
        o.usage = fleet::joblog_usage(&log);
        if o.usage {
            o.exit = exit::USAGE;
        }
    }
    o.end(&fleet::End {
        interrupted: a.interrupted,
        keep_winner: a.keep_winner,
        winner_refused: match (&a.summarize, a.keep_winner) {
            (Some(prog), true) => summarize::mixed_hardware(prog, &a.sum_arg, &a.results),
            _ => false,
        },
        joblog: a.joblog.as_deref().unwrap_or_default(),
        results: &a.results,
    });
    io.out.answer(&o)
}
