//! loadgen (skeleton; being built).

use std::io::{BufRead, Write};

use clap::Parser;
use sweepkit::report::Exit;

/// loadgen
#[derive(Debug, Parser)]
#[command(name = "loadgen", version, about)]
pub struct Args {}

/// Run loadgen with the given streams.
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
