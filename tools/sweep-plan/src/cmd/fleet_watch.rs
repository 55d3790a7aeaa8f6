//! `sweep-plan fleet-watch`: the pool's tries read as they come, each
//! host's blame kept and a failing host dropped (fleet.rs).

use sweepkit::exit::Exit;

use crate::fleet;
use crate::out::Io;

/// Read the pool's tries (fleet-step's records) on stdin till parallel
/// ends; keep each host's blame, and drop a host charged N times (a
/// warning, a host_dropped record appended to RESULTS, the sshlogin
/// file SLF rewritten without it: parallel re-reads it)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Failures charged to a host before it is dropped
    #[arg(long, value_name = "N", default_value_t = 2)]
    drop_after: usize,
    /// A host of the pool (repeatable, in --hosts order)
    #[arg(long = "host", value_name = "ID=NAME", value_parser = fleet::parse_host, required = true)]
    hosts: Vec<fleet::Host>,
    /// parallel's --slf file, written here
    #[arg(long, value_name = "FILE")]
    slf: String,
    /// The directory of the hosts' origin-ID.jsonl records
    #[arg(long, value_name = "DIR")]
    origins: String,
    /// Append each try's record here too (the pool's per-try log)
    #[arg(long, value_name = "FILE")]
    tries: Option<String>,
    #[arg(value_name = "RESULTS")]
    results: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let b = fleet::Blame::new(a.drop_after, a.hosts);
    let files = fleet::WatchFiles {
        slf: &a.slf,
        origins: &a.origins,
        results: &a.results,
        tries: a.tries.as_deref(),
    };
    fleet::watch(b, &files, &mut *io.stdin)
}
