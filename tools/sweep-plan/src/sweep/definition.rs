//! sweep(1)'s options, defined once: `sweep --help`, the OPTIONS section of
//! man/sweep.1 and sweep's completions are generated from [`SweepArgs`],
//! and [`parse`] reads sweep's argv with it (the first step of
//! [`super::read`]).
//!
//! Adding a sweep option that a tool takes as it is (a pass-through such as
//! `--container NAME` for svc-swap or `--report FILE` for summarize): add
//! a field under `FAR_SIDE` or the matching heading (`Option<String>`,
//! `Vec<String>` or `bool`), and a row in [`PASS_THROUGH`] naming its long
//! flag and the tools that get it. sweep.sh needs no change: the words land
//! in the arrays it already hands each tool. An option sweep itself acts on
//! is a field plus an entry in [`super::settings::Settings`] and
//! [`super::shell`].

use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::ScheduleServer;

use super::slurm_args::SlurmArgs;

const FAR_SIDE: &str = "Far side (given once, to every tool that takes it)";

/// Swap, wait, benchmark every value of a server launch parameter, then pick.
///
/// For each value of a launch parameter (several --param make a grid),
/// swap the server's config, wait until it is ready, benchmark it, and
/// append the records to a results file; go on past configs that fail; at
/// the end put the original config back (or apply the winner) and print
/// summarize's table. Configs svc-swap's pre-flight refuses (SGLang steps
/// without topk, ...) are recorded as failures untouched; --swap-arg
/// --no-preflight lets them through.
#[derive(Debug, Parser)]
#[command(
    name = "sweep",
    version,
    max_term_width = 79,
    // As sweep's own parser did: an option given twice takes the last value.
    args_override_self = true,
    after_help = EXIT_HELP,
    group(clap::ArgGroup::new("target").required(true)
        .args(["unit", "spec", "container", "compose"])),
    override_usage = "sweep [OPTIONS] --param NAME --values LIST [--param NAME --values LIST]\n       (--unit NAME | --spec FILE | --container NAME\n        | --compose FILE --service NAME) --url URL --results FILE"
)]
pub struct SweepArgs {
    /// Launch flag to vary (speculative-num-steps or
    /// --speculative-num-steps); repeatable; A,B: flags that move together,
    /// each value of --values then A:B (--values 1:2,2:3)
    #[arg(
        long = "param",
        value_name = "NAME",
        required_unless_present = "params_new",
        allow_hyphen_values = true,
        help_heading = "Sweep"
    )]
    pub params: Vec<String>,

    /// Like --param, for a flag the launch line lacks: sweep adds it (a
    /// --param the line lacks is refused as a likely typo)
    #[arg(
        long = "param-new",
        value_name = "NAME",
        allow_hyphen_values = true,
        help_heading = "Sweep"
    )]
    pub params_new: Vec<String>,

    /// Comma-separated values for the --param before it (spaces around
    /// each value are dropped); START..END[:STEP] is an inclusive range
    /// (1..10, 2..16:2)
    #[arg(
        long = "values",
        value_name = "LIST",
        required = true,
        allow_hyphen_values = true,
        help_heading = "Sweep"
    )]
    pub values: Vec<String>,

    /// JSON Lines results, appended as records arrive
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          help_heading = "Sweep")]
    pub results: String,

    /// Skip configs that already have records in FILE (a config whose last
    /// record is a transport failure or an interruption is run again)
    #[arg(long, help_heading = "Sweep")]
    pub resume: bool,

    /// Add this run's records to a FILE that holds another sweep already
    /// (without it, or --resume, such a FILE is refused: the two runs
    /// would merge into one config's medians)
    #[arg(long, conflicts_with = "resume", help_heading = "Sweep")]
    pub append: bool,

    /// Run a config again after a transport failure (SSH lost, host
    /// unreachable) up to N times, backing off 2s, 4s, 8s...
    #[arg(long, value_name = "N", default_value = "3", help_heading = "Sweep")]
    pub retries: String,

    /// Apply summarize's pick at the end (default: restore the original
    /// config)
    #[arg(long, conflicts_with = "no_restore", help_heading = "Sweep")]
    pub keep_winner: bool,

    /// Leave the last config running (the original is the one recorded when
    /// FILE was first started: its origin record, kept across --resume)
    #[arg(long, help_heading = "Sweep")]
    pub no_restore: bool,

    /// Print the configs and the commands; run nothing
    #[arg(long, help_heading = "Sweep")]
    pub dry_run: bool,

    /// Measure the values of one numeric --param in order and stop at the
    /// plateau or a clear peak; re-measure close calls; untried values get
    /// skipped records (continues what FILE holds: --resume is implied)
    #[arg(long, conflicts_with = "hosts", help_heading = "Adaptive")]
    pub adaptive: bool,

    /// Values past the best that must show the plateau [default: 2]
    #[arg(
        long,
        value_name = "K",
        requires = "adaptive",
        help_heading = "Adaptive"
    )]
    pub patience: Option<String>,

    /// Weighted-score gap that counts as a close call until repeats measure
    /// the noise [default: 5%]
    #[arg(
        long,
        value_name = "PCT",
        requires = "adaptive",
        help_heading = "Adaptive"
    )]
    pub noise_margin: Option<String>,

    /// Extra config starts for close calls [default: 4]
    #[arg(
        long,
        value_name = "N",
        requires = "adaptive",
        help_heading = "Adaptive"
    )]
    pub repeat_budget: Option<String>,

    /// After the grid (and any --adaptive search): derive the server's
    /// per-load schedule (summarize --schedule SERVER), apply it as one
    /// more config and benchmark it at every level (one extra restart, one
    /// extra pass); if the data cannot support one, say why and keep the
    /// static pick
    #[arg(
        long,
        value_name = "SERVER",
        conflicts_with = "hosts",
        help_heading = "Schedule"
    )]
    pub schedule: Option<ScheduleServer>,

    /// With --schedule: derive it from depths up to K only (summarize
    /// --max-depth K): both servers reserve speculative KV for a
    /// schedule's deepest depth at every load
    #[arg(long, value_name = "K", requires = "schedule",
          value_parser = clap::value_parser!(u32), help_heading = "Schedule")]
    pub schedule_max_depth: Option<u32>,

    /// One host per line of FILE, or a comma list: [USER@]HOST[:PORT]
    /// (reached over SSH) or - (here), then optional NAME=VALUE words
    /// ({NAME} in --url) and exec=PREFIX... (the rest of the line)
    #[arg(
        long,
        value_name = "FILE|LIST",
        allow_hyphen_values = true,
        help_heading = "Fleet"
    )]
    pub hosts: Option<String>,

    /// Stop using a host after N failures blamed on it; its configs go to
    /// the other hosts
    #[arg(long, value_name = "N", default_value = "2", help_heading = "Fleet")]
    pub drop_after: String,

    /// Split each machine (every --hosts host, else the --ssh one or this
    /// one) into GPU slots that run configs side by side: its GPUs, N to a slot
    /// (--gpus-per-config); {slot}, {gpus} and {port} fill the --unit,
    /// --spec or --container name and --url
    #[arg(long, value_name = "LIST", help_heading = "Fleet",
          conflicts_with_all = ["adaptive", "schedule", "validate_on", "slurm"])]
    pub gpus: Option<String>,

    /// GPUs per slot with --gpus
    #[arg(long, value_name = "N", default_value = "1", requires = "gpus",
          value_parser = clap::value_parser!(u32).range(1..), help_heading = "Fleet")]
    pub gpus_per_config: u32,

    /// Let a machine's slots benchmark at once (default: one bench at a
    /// time, while other slots load); each bench record says so
    #[arg(long, help_heading = "Fleet")]
    pub bench_together: bool,

    /// Run each config as a Slurm job (a task of one array) that starts
    /// the --spec server in its allocation, waits and benchmarks there
    #[arg(long, requires = "spec", help_heading = "Slurm",
          conflicts_with_all = ["hosts", "ssh", "exec_prefix"])]
    pub slurm: bool,

    #[command(flatten)]
    pub slurm_args: SlurmArgs,

    /// systemd unit
    #[arg(long, value_name = "NAME", help_heading = "Target")]
    pub unit: Option<String>,

    /// Process spec (svc-swap's process manager)
    #[arg(long, value_name = "FILE", conflicts_with = "unit",
          value_hint = clap::ValueHint::FilePath, help_heading = "Target")]
    pub spec: Option<String>,

    /// Container to swap (svc-swap --container: re-created per config;
    /// wait-ready watches it)
    #[arg(long, value_name = "NAME", conflicts_with_all = ["unit", "spec"],
          help_heading = "Target")]
    pub container: Option<String>,

    /// Compose file whose --service to swap (svc-swap --compose)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["unit", "spec", "container"],
          requires = "service", value_hint = clap::ValueHint::FilePath,
          help_heading = "Target")]
    pub compose: Option<String>,

    /// The service of --compose FILE
    #[arg(
        long,
        value_name = "NAME",
        requires = "compose",
        help_heading = "Target"
    )]
    pub service: Option<String>,

    /// Container engine CLI for --container and --compose (svc-swap,
    /// wait-ready) [their default: docker when its daemon answers, else
    /// podman]
    #[arg(long, value_name = "ENGINE", value_parser = ["docker", "podman"],
          help_heading = "Target")]
    pub engine: Option<String>,

    /// Reach the unit over SSH
    #[arg(long, value_name = "USER@HOST[:PORT]", help_heading = "Target")]
    pub ssh: Option<String>,

    /// Private key for --ssh (repeatable)
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          help_heading = "Target")]
    pub ssh_key: Vec<String>,

    /// Check the host key against FILE
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          help_heading = "Target")]
    pub known_hosts: Option<String>,

    /// Record an unknown host key (a changed one is refused)
    #[arg(long, help_heading = "Target")]
    pub accept_new_host_key: bool,

    /// Run far-side commands behind CMD ('pct exec 129 --')
    #[arg(long, value_name = "'CMD'", help_heading = "Target")]
    pub exec_prefix: Option<String>,

    /// OpenSSH client config to read for --ssh and --hosts [default:
    /// ~/.ssh/config]
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          help_heading = FAR_SIDE)]
    pub ssh_config: Option<String>,

    /// Keep retrying SSH connects and lost sessions for up to DUR (svc-swap,
    /// wait-ready) [their default: 30s]
    #[arg(long, value_name = "DUR", help_heading = FAR_SIDE)]
    pub ssh_retry: Option<String>,

    /// Limit for SSH connect and authentication [their default: 10s]
    #[arg(long, value_name = "DUR", help_heading = FAR_SIDE)]
    pub connect_timeout: Option<String>,

    /// Server base URL, as reachable from here; with --hosts a template:
    /// {host}, {n}, {NAME} per host
    #[arg(long, value_name = "URL", help_heading = "Server")]
    pub url: String,

    /// wait-ready preset [default: probe --url as given]
    #[arg(long, value_name = "KIND", help_heading = "Server",
          value_parser = sweepkit::server_kind::NAMES)]
    pub server: Option<String>,

    /// wait-ready --timeout
    #[arg(
        long,
        value_name = "DUR",
        default_value = "10m",
        help_heading = "Server"
    )]
    pub ready_timeout: String,

    /// Also check each swept value in the live server's arguments
    /// (wait-ready --expect-config)
    #[arg(long, help_heading = "Server")]
    pub expect_config: bool,

    /// loadgen -c LIST (closed-loop levels)
    #[arg(long, value_name = "LIST", help_heading = "Server")]
    pub concurrency: Option<String>,

    /// Write summarize's self-contained HTML report of the results to FILE
    /// at the end (after Ctrl-C too, with what was measured)
    #[arg(long, value_name = "FILE.html", value_hint = clap::ValueHint::FilePath,
          help_heading = "Decision")]
    pub report: Option<String>,

    /// End with summarize --compare FILE against this run's results: an
    /// earlier results file of the same grid (a new server version)
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          help_heading = "Decision")]
    pub compare_to: Option<String>,

    /// Per config, search the highest concurrency meeting every term
    /// (loadgen --find-capacity TERMS) and rank configs by it (summarize
    /// --slo TERMS), e.g. 'p99_ttft_ms<=500'
    #[arg(long, value_name = "TERMS", help_heading = "Decision")]
    pub find_capacity: Option<String>,

    /// At the end, replay trace FILE (loadgen --trace) against the pick
    /// (and the --schedule beside it) and report its goodput apart
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath,
          conflicts_with_all = ["hosts", "slurm", "no_restore"], help_heading = "Validate")]
    pub validate_on: Option<String>,

    /// With --validate-on: the replay's goodput objectives per request
    /// (loadgen --slo), e.g. 'ttft_ms<=500,tpot_ms<=50'
    #[arg(
        long,
        value_name = "TERMS",
        requires = "validate_on",
        help_heading = "Validate"
    )]
    pub slo: Option<String>,

    /// Extra argument for every svc-swap call (repeatable, one word each)
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        help_heading = "Pass-through"
    )]
    pub swap_arg: Vec<String>,

    /// Extra argument for wait-ready
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        help_heading = "Pass-through"
    )]
    pub ready_arg: Vec<String>,

    /// Extra argument for loadgen
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        help_heading = "Pass-through"
    )]
    pub load_arg: Vec<String>,

    /// Extra argument for summarize
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        help_heading = "Pass-through"
    )]
    pub summarize_arg: Vec<String>,

    /// Where the tools are [default: $SWEEPKIT_BIN, beside sweep, PATH, then
    /// the repository's target/release or debug]
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath,
          help_heading = "Other")]
    pub bin_dir: Option<String>,

    /// No progress lines on stderr
    #[arg(short, long, help_heading = "Other")]
    pub quiet: bool,
}

const EXIT_HELP: &str = "\
Exit status: 0 every config measured; 2 usage; 40 some configs failed
(recorded as failure records); 41 every config failed; 42 the final restore
or apply failed (--hosts: also --keep-winner refused on hosts of different
hardware); 43 configs left unrun (every host dropped); 44 GNU parallel not
found; 45 a host was dropped (every config has a result); 46 --slurm: sbatch
refused the job (nothing else submitted); 47 --slurm: Slurm's commands
missing or slurmctld unreachable; 50-52 --adaptive:
sweep-plan next refused the results file (no records, another sweep's, a
non-numeric value); 53 the results file's origin is another sweep's; 130
interrupted (results whole, config restored).";

/// The tools a pass-through option goes to: the shell arrays sweep.sh
/// hands each of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum To {
    Swap,
    Ready,
    Load,
    Summarize,
}

/// Options sweep takes once and hands on as given (the tools check them):
/// long flag, the tools that take it. See the module note to add one.
pub const PASS_THROUGH: &[(&str, &[To])] = &[
    ("ssh-config", &[To::Swap, To::Ready]),
    ("ssh-retry", &[To::Swap, To::Ready]),
    ("connect-timeout", &[To::Swap, To::Ready]),
    // Containers (issue 25): svc-swap re-creates, wait-ready watches.
    ("container", &[To::Swap, To::Ready]),
    ("compose", &[To::Swap]),
    ("service", &[To::Swap]),
    ("engine", &[To::Swap, To::Ready]),
];

/// sweep's argv parsed: its options, or the text of --help/--version.
pub enum Parsed {
    Help(String),
    Given(Box<Given>),
}

/// The options given, and clap's matches (which say where each word
/// stood, and which pass-through options were given).
pub struct Given {
    pub args: SweepArgs,
    pub matches: ArgMatches,
}

/// The one example `sweep -h` shows (the README's, on llm-sim).
const SWEEP_EXAMPLE: &str = "sweep --spec sim.spec --url http://127.0.0.1:18080 --server llm-sim \\
    --param speculative-num-steps --values 1,2,4 --concurrency 1,4 \\
    --results sim.jsonl";

/// Parse sweep's `argv` (without the program name) by [`SweepArgs`]: a
/// usage error is one line (exit 2); `-h` is a summary.
pub fn parse(argv: &[String]) -> Result<Parsed, Exit> {
    let words: Vec<std::ffi::OsString> = std::iter::once("sweep".to_string())
        .chain(argv.iter().cloned())
        .map(Into::into)
        .collect();
    let m = match SweepArgs::command().try_get_matches_from(&words) {
        Ok(m) => m,
        Err(e) if sweepkit::short_help::is_short_help(&e, &words) => {
            let text = sweepkit::short_help::summary(&SweepArgs::command(), SWEEP_EXAMPLE);
            return Ok(Parsed::Help(text));
        }
        Err(e) if !e.use_stderr() => return Ok(Parsed::Help(e.render().to_string())),
        Err(e) => return Err(usage(one_line(&e))),
    };
    let args = SweepArgs::from_arg_matches(&m).map_err(|e| usage(one_line(&e)))?;
    Ok(Parsed::Given(Box::new(Given { args, matches: m })))
}

/// clap's error as one line: its first paragraph, without `error: `.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let para: Vec<&str> = text.lines().take_while(|l| !l.trim().is_empty()).collect();
    let line = para.join(" ");
    let line = line.trim_start_matches("error: ");
    format!(
        "{} (see --help)",
        line.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

/// sweep's usage error (exit 2), one line.
pub fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow::anyhow!("{msg}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    testkit::cli_tests!(SweepArgs);
}
