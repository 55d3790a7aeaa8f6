//! `llm-sim` command-line entry point: parse flags, run, map the result to an exit code.

use clap::Parser;

fn main() -> std::process::ExitCode {
    // vLLM's dotted JSON flags, as its FlexibleArgumentParser reads them.
    let argv = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let args = llm_sim::Args::parse_from(llm_sim::flexible::vllm_argv(argv.collect()));
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::report::finish("llm-sim", llm_sim::run(args, stdin, stdout))
}
