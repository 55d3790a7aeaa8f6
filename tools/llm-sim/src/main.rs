//! `llm-sim` command-line entry point: parse flags, run, map the result to an exit code.

/// The one example `-h` shows.
const EXAMPLE: &str = "llm-sim --port 30000 --speculative-algorithm EAGLE \\\n    --speculative-eagle-topk 1 --speculative-num-steps 3 --load-time 5s";

fn main() -> std::process::ExitCode {
    // vLLM's dotted JSON flags, as its FlexibleArgumentParser reads them.
    let argv = std::env::args_os().map(|a| a.to_string_lossy().into_owned());
    let args = sweepkit::short_help::parse_from::<llm_sim::Args>(
        llm_sim::flexible::vllm_argv(argv.collect())
            .into_iter()
            .map(Into::into)
            .collect(),
        EXAMPLE,
    );
    let stdin = std::io::stdin().lock();
    let stdout = std::io::stdout().lock();
    sweepkit::exit::finish("llm-sim", llm_sim::run(args, stdin, stdout))
}
