//! `summarize` command-line entry point: parse flags, run, map the result to an exit code.

use std::io::IsTerminal;

/// The one example `-h` shows.
const EXAMPLE: &str = "summarize results.jsonl --report report.html";

fn main() -> std::process::ExitCode {
    // The format never depends on whether stdout is a terminal: `summarize
    // FILE > out.txt` writes the same table a person saw (issue 33);
    // scripts ask for `--format json`.
    let args = sweepkit::short_help::parse::<summarize::Args>(EXAMPLE);
    if args.files.is_empty() && std::io::stdin().is_terminal() {
        sweepkit::diag::line("summarize: error: no input: give FILE, or pipe records into stdin");
        return std::process::ExitCode::from(sweepkit::exit::USAGE);
    }
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::exit::finish("summarize", summarize::run(args, stdin, stdout))
}
