//! `svc-swap` command-line entry point: parse flags, run, map the result to an exit code.

/// The one example `-h` shows.
const EXAMPLE: &str = "svc-swap --unit sglang --ssh root@gpu1 --set speculative-num-steps=4 --gpu \\\n    | wait-ready --server sglang http://gpu1:30000 --timeout 15m";

fn main() -> std::process::ExitCode {
    let args = sweepkit::short_help::parse::<svc_swap::Args>(EXAMPLE);
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::exit::finish("svc-swap", svc_swap::run(args, stdin, stdout))
}
