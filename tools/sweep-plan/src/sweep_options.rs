//! sweep(1)'s options, defined once: `sweep --help`, the OPTIONS section of
//! man/sweep.1 and sweep's completions are generated from [`SweepArgs`],
//! and `sweep-plan options -- ARGV...` parses sweep's argv with it and hands
//! the script its settings as shell assignments whose every value is
//! single-quoted by [`quote`], so the script's `eval` runs no user text.
//!
//! Adding a sweep option that a tool takes as it is (a pass-through such as
//! `--container NAME` for svc-swap or `--report FILE` for summarize): add
//! a field under `FAR_SIDE` or the matching heading (`Option<String>`,
//! `Vec<String>` or `bool`), and a row in [`PASS_THROUGH`] naming its long
//! flag and the tools that get it. sweep.sh needs no change: the words land
//! in the arrays it already hands each tool. An option sweep itself acts on
//! is a field plus an entry in [`Settings::emit`].

use clap::{ArgAction, ArgMatches, CommandFactory, FromArgMatches, Parser};
use sweepkit::exit;
use sweepkit::report::Exit;

use crate::stage_words::{self, Base, Stages, Target};

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
    /// each value are dropped)
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
    #[arg(long, value_name = "SERVER", value_parser = ["vllm", "sglang"],
          conflicts_with = "hosts", help_heading = "Schedule")]
    pub schedule: Option<String>,

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

    /// Run each config as a Slurm job (a task of one array) that starts
    /// the --spec server in its allocation, waits and benchmarks there
    #[arg(long, requires = "spec", help_heading = "Slurm",
          conflicts_with_all = ["hosts", "adaptive", "schedule", "ssh", "exec_prefix", "keep_winner"])]
    pub slurm: bool,

    /// sbatch --partition
    #[arg(long, value_name = "NAME", requires = "slurm", help_heading = "Slurm")]
    pub partition: Option<String>,

    /// sbatch --account
    #[arg(long, value_name = "NAME", requires = "slurm", help_heading = "Slurm")]
    pub account: Option<String>,

    /// sbatch --gres per job (gpu:2); records name the GPUs it gave
    #[arg(long, value_name = "SPEC", requires = "slurm", help_heading = "Slurm")]
    pub gres: Option<String>,

    /// sbatch --gpus-per-node instead of --gres, for clusters that reject
    /// the gres directive
    #[arg(
        long,
        value_name = "N",
        requires = "slurm",
        conflicts_with = "gres",
        help_heading = "Slurm"
    )]
    pub gpus_per_node: Option<String>,

    /// sbatch --exclusive: the job has its nodes to itself
    #[arg(long, requires = "slurm", help_heading = "Slurm")]
    pub exclusive: bool,

    /// sbatch --time per job (MIN, MIN:SEC, H:MM:SS, D-H); its levels are
    /// flushed --flush-before ahead of the limit
    #[arg(long, value_name = "TIME", requires = "slurm", help_heading = "Slurm")]
    pub time: Option<String>,

    /// With --time: signal the job this long before its limit, so loadgen
    /// writes the levels it measured (sbatch --signal=B:USR1@SECS)
    #[arg(
        long,
        value_name = "DUR",
        default_value = "30s",
        requires = "time",
        help_heading = "Slurm"
    )]
    pub flush_before: String,

    /// Run at most N configs at once (the array's %N throttle)
    #[arg(long, value_name = "N", requires = "slurm", help_heading = "Slurm",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_jobs: Option<u32>,

    /// Extra sbatch argument (repeatable, one word each)
    #[arg(
        long,
        value_name = "ARG",
        allow_hyphen_values = true,
        requires = "slurm",
        help_heading = "Slurm"
    )]
    pub sbatch_arg: Vec<String>,

    /// Cancel a job still pending after DUR (recorded, not a result)
    #[arg(long, value_name = "DUR", requires = "slurm", help_heading = "Slurm")]
    pub queue_timeout: Option<String>,

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
          value_parser = ["sglang", "vllm", "llama.cpp", "openai", "llm-sim"])]
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

    /// Per config, search the highest concurrency meeting every term
    /// (loadgen --find-capacity TERMS) and rank configs by it (summarize
    /// --slo TERMS), e.g. 'p99_ttft_ms<=500'
    #[arg(long, value_name = "TERMS", help_heading = "Decision")]
    pub find_capacity: Option<String>,

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

impl SweepArgs {
    /// What sweep_checks.rs reads of the options.
    fn given(&self) -> crate::sweep_checks::Given<'_> {
        crate::sweep_checks::Given {
            params: &self.params,
            params_new: &self.params_new,
            results: &self.results,
            resume: self.resume,
            adaptive: self.adaptive,
            append: self.append,
            dry_run: self.dry_run,
            concurrency: &self.concurrency,
            find_capacity: &self.find_capacity,
            load_arg: &self.load_arg,
        }
    }
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

/// The exit codes sweep.sh names, as `EXIT_<NAME>` with their values from
/// the shared table, so the script holds no magic numbers.
const EXITS: &[(&str, u8)] = &[
    ("FAILURE", exit::FAILURE),
    ("USAGE", exit::USAGE),
    ("BAD_INPUT", exit::BAD_INPUT),
    ("TRANSPORT_ERROR", exit::TRANSPORT_ERROR),
    ("PREFLIGHT_REJECTED", exit::PREFLIGHT_REJECTED),
    ("SOME_CONFIGS_FAILED", exit::SOME_CONFIGS_FAILED),
    ("ALL_CONFIGS_FAILED", exit::ALL_CONFIGS_FAILED),
    ("RESTORE_FAILED", exit::RESTORE_FAILED),
    ("NO_HOST_LEFT", exit::NO_HOST_LEFT),
    ("NO_PARALLEL", exit::NO_PARALLEL),
    ("HOST_DROPPED", exit::HOST_DROPPED),
    ("SUBMIT_REJECTED", exit::SUBMIT_REJECTED),
    ("NO_SLURM", exit::NO_SLURM),
    ("MIXED_HARDWARE", exit::MIXED_HARDWARE),
    ("INTERRUPTED", exit::INTERRUPTED),
    ("SCHEDULE_REFUSED", exit::SCHEDULE_REFUSED),
];

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

use crate::out::quote;

/// sweep's settings as the lines of a bash script: `name='value'` and
/// `name=('a' 'b')`.
#[derive(Default)]
pub struct Settings(Vec<String>);

impl Settings {
    fn scalar(&mut self, name: &str, v: &str) {
        self.0.push(format!("{name}={}", quote(v)));
    }
    fn flag(&mut self, name: &str, on: bool) {
        self.0.push(format!("{name}={}", u8::from(on)));
    }
    fn array(&mut self, name: &str, words: &[String]) {
        let q: Vec<String> = words.iter().map(|w| quote(w)).collect();
        self.0.push(format!("{name}=({})", q.join(" ")));
    }

    /// The grid: `grid`, the words every sweep-plan question about it
    /// takes; `labels`, each config's "a=1 b=2"; `n_configs`. A grid that
    /// does not expand is sweep's usage error.
    fn grid(&mut self, a: &SweepArgs) -> Result<(), Exit> {
        let g = crate::grid::expand(&a.params, &a.values).map_err(usage)?;
        let words: Vec<String> = a
            .params
            .iter()
            .zip(&a.values)
            .flat_map(|(p, v)| [format!("--param={p}"), format!("--values={v}")])
            .collect();
        self.array("grid", &words);
        let labels: Vec<String> = g.points.iter().map(|p| p.label()).collect();
        self.array("labels", &labels);
        self.scalar("n_configs", &labels.len().to_string());
        let line = crate::sweep_checks::plan_line(&a.given(), labels.len());
        self.scalar("plan_line", &line);
        Ok(())
    }

    /// Every variable sweep.sh reads, from parsed options.
    fn emit(a: &SweepArgs, m: &ArgMatches) -> Settings {
        let mut s = Settings::default();
        let opt = |o: &Option<String>| o.clone().unwrap_or_default();
        s.array("params", &a.params);
        s.array("values", &a.values);
        for (n, v) in [
            ("results", &a.results),
            ("retries", &a.retries),
            ("drop_after", &a.drop_after),
            ("url", &a.url),
            ("ready_timeout", &a.ready_timeout),
        ] {
            s.scalar(n, v);
        }
        for (n, v) in [
            ("unit", &a.unit),
            ("spec", &a.spec),
            ("ssh", &a.ssh),
            ("exec_prefix", &a.exec_prefix),
            ("hosts", &a.hosts),
            ("server", &a.server),
            ("concurrency", &a.concurrency),
            ("schedule", &a.schedule),
            ("report", &a.report),
        ] {
            s.scalar(n, &opt(v));
        }
        for (n, v) in [
            ("resume", a.resume),
            ("keep_winner", a.keep_winner),
            ("no_restore", a.no_restore),
            ("dry_run", a.dry_run),
            ("adaptive", a.adaptive),
            ("expect_config", a.expect_config),
            ("quiet", a.quiet),
            ("slurm", a.slurm),
        ] {
            s.flag(n, v);
        }
        s.words(a, m);
        s
    }

    /// The arrays: the adaptive knobs, the SSH options that go with each
    /// --ssh, each tool's extra words (pass-through options first), and
    /// the stages' shared words for the target (`target`, `ready`, `load`).
    fn words(&mut self, a: &SweepArgs, m: &ArgMatches) {
        let s = self;
        let mut knobs = Vec::new();
        for (f, v) in [
            ("--patience", &a.patience),
            ("--noise-margin", &a.noise_margin),
            ("--repeat-budget", &a.repeat_budget),
        ] {
            if let Some(v) = v {
                knobs.extend([f.to_string(), v.clone()]);
            }
        }
        s.array("adaptive_args", &knobs);
        // `sweep-plan step`'s words for the loop (the script adds where
        // the scores are, for --adaptive, and where to write).
        let mut step = knobs;
        step.extend(["--retries".to_string(), a.retries.clone()]);
        for (on, w) in [(a.resume, "--resume"), (a.expect_config, "--expect-config")] {
            if on {
                step.push(w.into());
            }
        }
        if let Some(sv) = &a.schedule {
            step.extend(["--schedule".to_string(), sv.clone()]);
        }
        s.array("step_args", &step);
        s.say_to(a, "");
        let cap: Vec<String> = a
            .schedule_max_depth
            .iter()
            .flat_map(|k| ["--max-depth".to_string(), k.to_string()])
            .collect();
        s.array("schedule_args", &cap);
        let w = ToolWords::of(a, m);
        s.array("ssh_opts", &w.ssh_opts);
        s.array("swap_args", &w.swap);
        s.array("ready_args", &w.ready);
        s.array("load_args", &w.load);
        s.array("sum_args", &w.sum);
        // svc-swap's words for each config's swap only (not the dry run's
        // or the restore's): pre-flight notes are said once, by verdict.
        s.array("swap_own", &crate::sweep_checks::swap_words(&a.given()));
        let t = Target {
            ssh: a.ssh.clone(),
            exec_prefix: a.exec_prefix.clone(),
            url: a.url.clone(),
        };
        s.stages(&w.stages(a, &t));
        s.origin_args(a, &t.url);
    }

    /// `origin_args`: the words that have `sweep-plan origin` check the
    /// dry run against the target at `url` (see dry_run_checks.rs).
    fn origin_args(&mut self, a: &SweepArgs, url: &str) {
        let mut w = vec!["--url".to_string(), url.to_string()];
        for k in crate::sweep_checks::new_keys(&a.given()) {
            w.extend(["--new".to_string(), k]);
        }
        // Only swept keys are checked: a `--swap-arg --set K` adds K on purpose.
        for p in &a.params {
            for k in p.split(',') {
                w.extend([
                    "--swept".to_string(),
                    crate::grid::key_of(k.trim()).to_string(),
                ]);
            }
        }
        // wait-ready probes the URL as given only without a preset.
        if a.server.is_none() && a.ready_arg.is_empty() {
            w.extend(["--probe".to_string(), url.to_string()]);
        }
        self.array("origin_args", &w);
    }

    /// `say_to`: the words that have sweep-plan say its notes on stderr
    /// as sweep does (none with --quiet).
    fn say_to(&mut self, a: &SweepArgs, prefix: &str) {
        let words = match a.quiet {
            true => Vec::new(),
            false => vec!["--say".to_string(), format!("sweep: {prefix}")],
        };
        self.array("say_to", &words);
    }

    fn stages(&mut self, st: &Stages) {
        self.array("target", &st.target);
        self.array("ready", &st.ready);
        self.array("load", &st.load);
    }
}

/// The words sweep hands each tool beside a config's own.
struct ToolWords {
    ssh_opts: Vec<String>,
    swap: Vec<String>,
    ready: Vec<String>,
    load: Vec<String>,
    sum: Vec<String>,
}

impl ToolWords {
    fn of(a: &SweepArgs, m: &ArgMatches) -> ToolWords {
        let mut ssh_opts = Vec::new();
        for k in &a.ssh_key {
            ssh_opts.extend(["--ssh-key".to_string(), k.clone()]);
        }
        if let Some(k) = &a.known_hosts {
            ssh_opts.extend(["--known-hosts".to_string(), k.clone()]);
        }
        if a.accept_new_host_key {
            ssh_opts.push("--accept-new-host-key".into());
        }
        let of = |to: To, own: &[String]| {
            let mut words = passed_to(m, to);
            // One SLO, two tools' spellings of it.
            if let Some(slo) = &a.find_capacity {
                match to {
                    To::Load => words.extend(["--find-capacity".into(), slo.clone()]),
                    To::Summarize => words.extend(["--slo".into(), slo.clone()]),
                    _ => {}
                }
            }
            words.extend(own.iter().cloned());
            words
        };
        ToolWords {
            ssh_opts,
            swap: of(To::Swap, &a.swap_arg),
            ready: of(To::Ready, &a.ready_arg),
            load: of(To::Load, &a.load_arg),
            sum: of(To::Summarize, &a.summarize_arg),
        }
    }

    fn stages(&self, a: &SweepArgs, t: &Target) -> Stages {
        let b = Base {
            unit: a.unit.as_deref(),
            spec: a.spec.as_deref(),
            ssh_opts: &self.ssh_opts,
            swap_args: &self.swap,
            ready_timeout: &a.ready_timeout,
            server: a.server.as_deref(),
            ready_args: &self.ready,
            concurrency: a.concurrency.as_deref(),
            load_args: &self.load,
        };
        stage_words::stages(&b, t)
    }
}

/// The [`PASS_THROUGH`] options given on the command line that go to `to`,
/// as words (`--flag`, or `--flag VALUE` per occurrence).
fn passed_to(m: &ArgMatches, to: To) -> Vec<String> {
    let cmd = SweepArgs::command();
    let mut words = Vec::new();
    for (long, _) in PASS_THROUGH.iter().filter(|(_, t)| t.contains(&to)) {
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_long() == Some(long))
            .unwrap_or_else(|| panic!("PASS_THROUGH: no option --{long}"));
        let id = arg.get_id().as_str();
        if matches!(arg.get_action(), ArgAction::SetTrue) {
            if m.get_flag(id) {
                words.push(format!("--{long}"));
            }
        } else if let Some(vs) = m.get_raw(id) {
            for v in vs {
                words.extend([format!("--{long}"), v.to_string_lossy().into_owned()]);
            }
        }
    }
    words
}

fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow::anyhow!("{msg}"))
}

/// What clap can't say: each --values after its --param, values with no
/// empty item, whole numbers.
fn check(a: &SweepArgs, m: &ArgMatches, p: &[usize]) -> Result<(), Exit> {
    let v: Vec<usize> = m
        .indices_of("values")
        .map(Iterator::collect)
        .unwrap_or_default();
    for (i, (vi, list)) in v.iter().zip(&a.values).enumerate() {
        if p.get(i).is_none_or(|pi| pi > vi) || p.get(i + 1).is_some_and(|next| next < vi) {
            return Err(usage(format!(
                "--values {list}: give --param NAME before each --values"
            )));
        }
        if list.split(',').any(|v| v.trim().is_empty()) {
            return Err(usage(format!(
                "--values '{list}': expected V1,V2,... with no empty value"
            )));
        }
    }
    if p.len() > v.len() {
        return Err(usage(format!(
            "--param {}: no --values after it",
            a.params[v.len()]
        )));
    }
    if !a.retries.bytes().all(|b| b.is_ascii_digit()) || a.retries.is_empty() {
        return Err(usage(format!(
            "--retries '{}': expected a whole number",
            a.retries
        )));
    }
    if !a.drop_after.bytes().all(|b| b.is_ascii_digit())
        || a.drop_after.parse::<u64>().unwrap_or(0) == 0
    {
        return Err(usage(format!(
            "--drop-after '{}': expected a whole number >= 1",
            a.drop_after
        )));
    }
    if a.hosts.is_some() && (a.ssh.is_some() || a.exec_prefix.is_some()) {
        return Err(usage(
            "--hosts names every host: give --ssh and --exec-prefix per host in it, not as options"
                .into(),
        ));
    }
    let ssh_opts = !a.ssh_key.is_empty() || a.known_hosts.is_some() || a.accept_new_host_key;
    if ssh_opts && a.ssh.is_none() && a.hosts.is_none() {
        return Err(usage(
            "--ssh-key, --known-hosts and --accept-new-host-key need --ssh".into(),
        ));
    }
    // One summary per host would give each host the best of the few
    // configs it happened to run (and svc-swap reads only one record).
    if a.hosts.is_some() && a.keep_winner && a.summarize_arg.iter().any(|w| w == "--per-host") {
        return Err(usage(
            "--keep-winner with --summarize-arg --per-host: each host ran only some configs, so its own best is no winner; drop one of them (--pool-hosts applies one pick to every host)".into(),
        ));
    }
    if a.adaptive && (a.params.len() != 1 || a.params[0].contains(',')) {
        return Err(usage(
            "--adaptive walks one parameter: give one --param NAME (no grid, no A,B)".into(),
        ));
    }
    Ok(())
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

/// Which of sweep's settings `options` hands back.
#[derive(Debug, Clone, Copy)]
pub enum Want<'a> {
    /// Every setting, and the exit codes.
    All,
    /// [`Want::All`] for a sweep that starts (not a pool's job): also
    /// refuse a results file that holds another sweep.
    Start,
    /// The pool's hosts (`h_id`, `h_name`: ids and names in --hosts order).
    Pool,
    /// One pool host's own: the stages' `target`, `ready` and `load`, its
    /// `origin_file` and the `say_prefix` that names it.
    Host(&'a str),
}

/// sweep's argv parsed (a usage error for --help, which has nothing to
/// plan), with the stages' words for a target: `sweep --slurm` builds
/// its jobs' words from these.
pub fn parsed_stages(argv: &[String], t: &Target) -> Result<(SweepArgs, Stages), Exit> {
    let (a, m) = matched(argv)?.map_err(|_| usage("--help: nothing to plan".into()))?;
    let st = ToolWords::of(&a, &m).stages(&a, t);
    Ok((a, st))
}

/// The one example `sweep -h` shows (the README's, on llm-sim).
const SWEEP_EXAMPLE: &str = "sweep --spec sim.spec --url http://127.0.0.1:18080 --server llm-sim \\
    --param speculative-num-steps --values 1,2,4 --concurrency 1,4 \\
    --results sim.jsonl";

/// sweep's argv parsed, or the text of --help/--version (`-h`: a summary).
fn matched(argv: &[String]) -> Result<Result<(SweepArgs, ArgMatches), String>, Exit> {
    let words: Vec<std::ffi::OsString> = std::iter::once("sweep".to_string())
        .chain(argv.iter().cloned())
        .map(Into::into)
        .collect();
    let m = match SweepArgs::command().try_get_matches_from(&words) {
        Ok(m) => m,
        Err(e) if sweepkit::short_help::is_short_help(&e, &words) => {
            let text = sweepkit::short_help::summary(&SweepArgs::command(), SWEEP_EXAMPLE);
            return Ok(Err(text));
        }
        Err(e) if !e.use_stderr() => return Ok(Err(e.render().to_string())),
        Err(e) => return Err(usage(one_line(&e))),
    };
    let mut a = SweepArgs::from_arg_matches(&m).map_err(|e| usage(one_line(&e)))?;
    // --param and --param-new make one grid, in command-line order.
    let (at, names): (Vec<usize>, Vec<String>) =
        crate::sweep_checks::params_in_order(&a.given(), &m)
            .into_iter()
            .unzip();
    a.params = names;
    check(&a, &m, &at)?;
    crate::sweep_checks::check_url(&a.url)?;
    Ok(Ok((a, m)))
}

fn pool_of(a: &SweepArgs) -> Result<Vec<crate::hosts::Host>, Exit> {
    match &a.hosts {
        Some(h) => crate::hosts::pool(h, &a.url),
        None => Err(usage("a pool's settings need --hosts".into())),
    }
}

/// Parse sweep's `argv` (without the program name): the settings script,
/// or a one-line usage error (exit 2). --help and --version come back as
/// `help='...'`, for the script to print.
pub fn parse(argv: &[String]) -> Result<String, Exit> {
    parse_for(argv, Want::All)
}

/// [`parse`], handing back the settings `want` names.
pub fn parse_for(argv: &[String], want: Want<'_>) -> Result<String, Exit> {
    let (a, m) = match matched(argv)? {
        Ok(am) => am,
        Err(help) => return Ok(format!("help={}\n", quote(&help))),
    };
    let mut s = Settings::default();
    match want {
        Want::All | Want::Start => {
            if matches!(want, Want::Start) {
                crate::sweep_checks::check_results_file(&a.given())?;
            }
            s = Settings::emit(&a, &m);
            s.grid(&a)?;
            s.array("argv", argv);
            s.0.push("help=''".into());
            let exits: Vec<String> = EXITS.iter().map(|(n, c)| format!("EXIT_{n}={c}")).collect();
            s.0.push(format!("readonly {}", exits.join(" ")));
        }
        Want::Pool => {
            let pool = pool_of(&a)?;
            s.array(
                "h_id",
                &pool.iter().map(|h| h.id.clone()).collect::<Vec<_>>(),
            );
            s.array(
                "h_name",
                &pool.iter().map(|h| h.name.clone()).collect::<Vec<_>>(),
            );
        }
        Want::Host(id) => {
            let pool = pool_of(&a)?;
            let h = pool
                .iter()
                .find(|h| h.id == id)
                .ok_or_else(|| usage(format!("--host '{id}' is not in --hosts")))?;
            let t = Target::of_host(h);
            s.stages(&ToolWords::of(&a, &m).stages(&a, &t));
            s.origin_args(&a, &t.url);
            s.scalar(
                "origin_file",
                &format!("{}.fleet/origin-{id}.jsonl", a.results),
            );
            s.scalar("say_prefix", &format!("[{}] ", h.name));
            s.say_to(&a, &format!("[{}] ", h.name));
        }
    }
    Ok(s.0.join("\n") + "\n")
}

/// `--dry-run`'s plan for sweep's `argv` (stage_words::dry_run), the tools
/// at the paths given.
pub fn dry_run(argv: &[String], tools: &stage_words::Tools<'_>) -> Result<String, Exit> {
    let (a, m) = matched(argv)?.map_err(|_| usage("--help: nothing to plan".into()))?;
    let g = crate::grid::expand(&a.params, &a.values).map_err(usage)?;
    let pool = match a.hosts {
        Some(_) => pool_of(&a)?,
        None => Vec::new(),
    };
    let t = match pool.first() {
        Some(h) => Target::of_host(h),
        None => Target {
            ssh: a.ssh.clone(),
            exec_prefix: a.exec_prefix.clone(),
            url: a.url.clone(),
        },
    };
    let st = ToolWords::of(&a, &m).stages(&a, &t);
    Ok(stage_words::dry_run(
        &g,
        &st,
        tools,
        &pool,
        a.expect_config,
        &a.results,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    testkit::cli_tests!(SweepArgs);

    #[test]
    fn the_settings_carry_the_grid_and_the_argv() {
        let argv: Vec<String> =
            "--param a,b --values 1:2,3:4 --param c --values it's --unit u --url http://x --results r"
                .split(' ')
                .map(String::from)
                .collect();
        let out = parse(&argv).unwrap();
        for line in [
            r"grid=('--param=a,b' '--values=1:2,3:4' '--param=c' '--values=it'\''s')",
            r"labels=('a=1 b=2 c=it'\''s' 'a=3 b=4 c=it'\''s')",
            "n_configs='2'",
            r"argv=('--param' 'a,b' '--values' '1:2,3:4' '--param' 'c' '--values' 'it'\''s'",
        ] {
            assert!(out.contains(line), "{line}: {out}");
        }
        let mut bad = argv.clone();
        bad[3] = "1,2".into(); // a,b takes A:B values
        assert_eq!(parse(&bad).unwrap_err().code, exit::USAGE);
    }

    #[test]
    fn every_pass_through_option_exists() {
        let v = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // The target options are each other's alternatives: two runs.
        let targets = ["container", "compose", "service"];
        for target in [&["--unit", "u"][..], &["--compose", "V", "--service", "V"]] {
            let mut argv = v(&["--param", "a", "--values", "1"]);
            argv.extend(v(target));
            argv.extend(v(&["--url", "http://x", "--results", "r"]));
            let value = |long: &str| if long == "engine" { "podman" } else { "V" };
            let given: Vec<&str> = PASS_THROUGH
                .iter()
                .map(|(l, _)| *l)
                .filter(|l| !targets.contains(l) || (target[0] != "--unit" && *l != "container"))
                .collect();
            for long in &given {
                if !targets.contains(long) {
                    argv.extend([format!("--{long}"), value(long).into()]);
                }
            }
            let out = parse(&argv).unwrap();
            for long in &given {
                let w = format!("'--{long}' '{}'", value(long));
                assert!(out.contains(&w), "{long}: {out}");
            }
        }
        let argv = v(&["--param", "a", "--values", "1", "--container", "c"]);
        let mut argv2 = argv.clone();
        argv2.extend(v(&["--url", "http://x", "--results", "r"]));
        let out = parse(&argv2).unwrap();
        assert!(out.contains("swap_args=('--container' 'c')"), "{out}");
        let own = "swap_own=('--quiet-preflight' '--max-load' '1')";
        assert!(out.contains(own), "{out}");
        assert!(out.contains("ready_args=('--container' 'c')"), "{out}");
        argv2.extend(v(&["--unit", "u"]));
        assert_eq!(parse(&argv2).unwrap_err().code, exit::USAGE);
    }
}
