//! `loadgen` command-line entry point: parse flags, run, map the result to an exit code.

use std::io::IsTerminal;

/// The one example `-h` shows.
const EXAMPLE: &str =
    "loadgen http://127.0.0.1:30000 --concurrency 1,4,16 --max-tokens 256 \\\n    >> results.jsonl";

fn main() -> std::process::ExitCode {
    let args = sweepkit::short_help::parse::<loadgen::Args>(EXAMPLE);
    loadgen::install_interrupt_handler();
    let stdin = std::io::stdin();
    let input = (!stdin.is_terminal()).then(|| stdin.lock());
    let stdout = std::io::stdout().lock();
    sweepkit::exit::finish("loadgen", loadgen::run(args, input, stdout))
}
