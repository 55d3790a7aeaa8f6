//! `wait-ready` command-line entry point: parse flags, run, map the result to an exit code.

use std::io::{BufRead, IsTerminal};

/// The one example `-h` shows.
const EXAMPLE: &str = "wait-ready --server sglang http://127.0.0.1:30000 --timeout 15m";

fn main() -> std::process::ExitCode {
    let args = sweepkit::short_help::parse::<wait_ready::Args>(EXAMPLE);
    // An interactive terminal never carries an upstream record.
    let stdin: Box<dyn BufRead> = if std::io::stdin().is_terminal() {
        Box::new(std::io::empty())
    } else {
        Box::new(std::io::stdin().lock())
    };
    let stdout = std::io::stdout().lock();
    sweepkit::exit::finish("wait-ready", wait_ready::run(args, stdin, stdout))
}
