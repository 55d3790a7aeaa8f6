//! summarize (skeleton; being built).

use std::io::{BufRead, Write};

use clap::Parser;
use sweepkit::report::Exit;

/// summarize
#[derive(Debug, Parser)]
#[command(name = "summarize", version, about)]
pub struct Args {}

/// Run summarize with the given streams.
pub fn run(_args: Args, _stdin: impl BufRead, _stdout: impl Write) -> Result<(), Exit> {
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn verify_cli() {
        use clap::CommandFactory;
        super::Args::command().debug_assert();
    }
}
