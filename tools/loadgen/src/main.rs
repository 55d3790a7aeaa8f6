//! `loadgen` command-line entry point: parse flags, run, map the result to an exit code.

use std::io::IsTerminal;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = loadgen::Args::parse();
    loadgen::install_interrupt_handler();
    let stdin = std::io::stdin();
    let input = (!stdin.is_terminal()).then(|| stdin.lock());
    let stdout = std::io::stdout().lock();
    sweepkit::report::finish("loadgen", loadgen::run(args, input, stdout))
}
