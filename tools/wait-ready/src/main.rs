//! `wait-ready` command-line entry point: parse flags, run, map the result to an exit code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = wait_ready::Args::parse();
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::report::finish("wait-ready", wait_ready::run(args, stdin, stdout))
}
