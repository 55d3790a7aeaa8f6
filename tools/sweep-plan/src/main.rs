//! `sweep-plan` command-line entry point: parse flags, run, map the result to an exit code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = sweep_plan::Args::parse();
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::report::finish("sweep-plan", sweep_plan::run(args, stdin, stdout))
}
