//! `sweep-plan` command-line entry point: parse flags, run, map the result to an exit code.

/// The one example `-h` shows.
const EXAMPLE: &str =
    "sweep-plan next --param speculative-num-steps --values 1,2,3,4 results.jsonl";

fn main() -> std::process::ExitCode {
    let args = sweepkit::short_help::parse::<sweep_plan::Args>(EXAMPLE);
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::exit::finish("sweep-plan", sweep_plan::run(args, stdin, stdout))
}
