//! `sweep-plan hosts`: the pool of `sweep --hosts`, one answer a host.

use sweepkit::exit::Exit;

use crate::hosts;
use crate::out::Io;

/// The pool of `sweep --hosts`, one answer per host: its place (n),
/// dest, exec prefix, URL (from the --url template), id and name; a
/// bad line: a usage error naming it
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pool file, or a comma list of hosts
    #[arg(long, value_name = "FILE|LIST")]
    hosts: String,
    /// sweep's --url template ({host}, {n}, {NAME} of the line)
    #[arg(long, value_name = "URL")]
    url: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    for h in &hosts::pool(&a.hosts, &a.url)? {
        io.out.answer(h)?;
    }
    Ok(())
}
