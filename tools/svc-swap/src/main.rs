//! `svc-swap` command-line entry point: parse flags, run, map the result to an exit code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let args = svc_swap::Args::parse();
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::report::finish("svc-swap", svc_swap::run(args, stdin, stdout))
}
