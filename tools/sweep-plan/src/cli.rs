//! sweep-plan's command line: its subcommands and their flags, as clap
//! defines them (the man page and completions are generated from here).

use clap::{Parser, Subcommand};

use crate::fleet;
use crate::grid;
use crate::results;

/// Decide a sweep's campaign: what to run next, what to restore.
///
/// sweep(1) asks; each answer is a function of the grid (--param and
/// --values, as sweep takes them) and the results file, so a resumed sweep
/// asks and acts exactly the same.
#[derive(Debug, Parser)]
#[command(name = "sweep-plan", version, max_term_width = 79)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,

    /// Print these fields of each answer, one per line (arrays: the
    /// elements joined by spaces; absent: an empty line), not JSON
    #[arg(long, value_name = "NAME", global = true)]
    pub field: Vec<String>,

    /// Print each answer as bash assignments instead, one field a line
    /// (NAME='text', arrays NAME=('a' 'b')), every value single-quoted so
    /// sweep(1) can eval them; with --field only those fields
    #[arg(long, global = true)]
    pub shell: bool,
}

/// The grid, as sweep(1) takes it.
#[derive(Debug, Clone, clap::Args)]
pub struct GridArgs {
    /// Launch flag to vary (repeatable); A,B: flags that move together
    #[arg(
        long = "param",
        value_name = "NAME",
        required = true,
        allow_hyphen_values = true
    )]
    pub params: Vec<String>,

    /// Comma-separated values of the --param at the same place (with A,B:
    /// each value A:B)
    #[arg(
        long = "values",
        value_name = "LIST",
        required = true,
        allow_hyphen_values = true
    )]
    pub values: Vec<String>,
}

/// The adaptive search's knobs.
#[derive(Debug, Clone, clap::Args)]
pub struct NextArgs {
    /// Stop after K further values past the best showed the plateau
    #[arg(long, value_name = "K", default_value_t = 2)]
    pub patience: usize,

    /// Weighted-score gap that counts as a close call (and a drop that
    /// counts as a clear peak) until repeats measure the noise
    #[arg(long, value_name = "PCT", default_value = "5%", value_parser = parse_pct)]
    pub noise_margin: f64,

    /// Extra config starts allowed for re-measuring close calls
    #[arg(long, value_name = "N", default_value_t = 4)]
    pub repeat_budget: usize,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Each config of the grid, in run order, with its state in RESULTS
    /// and whether to run it (--resume skips those with a result)
    Configs {
        #[command(flatten)]
        grid: GridArgs,
        /// Skip configs whose last record is a result (complete, or a
        /// failure of their own)
        #[arg(long)]
        resume: bool,
        /// Results file (JSON Lines); absent or missing: nothing ran yet
        #[arg(value_name = "RESULTS")]
        results: Option<String>,
    },
    /// One config's arguments for a tool, one word per line
    Args {
        #[command(flatten)]
        grid: GridArgs,
        /// The config's place in the grid (1-based, as `configs` numbers)
        #[arg(long, value_name = "N")]
        index: usize,
        /// Which tool's words
        #[arg(long = "for", value_name = "TOOL", value_enum)]
        tool: grid::Tool,
    },
    /// What one run of a config (or of --schedule's step) left in RESULTS:
    /// its state and how many bench records it wrote (other configs'
    /// records are not counted); with --exits, what sweep makes of it
    /// (tally, usage_exit, interrupted, refused, warning, note)
    Verdict {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(long, value_name = "N", required_unless_present = "schedule")]
        index: Option<usize>,
        /// The schedule step's run for SERVER instead of a config: counted
        /// only when it failed (it adds no config to the measured count)
        #[arg(long, value_name = "SERVER", conflicts_with = "index")]
        schedule: Option<String>,
        /// Append the verdict of a finished run (one not to be retried) to
        /// FILE, for `tally --from FILE`
        #[arg(long, value_name = "FILE", requires = "exits")]
        tally: Option<String>,
        /// Only the records after this many lines (the file's length
        /// before the run)
        #[arg(long, value_name = "LINES", default_value_t = 0)]
        since: usize,
        /// The run's exit statuses: svc-swap's, wait-ready's, loadgen's
        #[arg(long, value_name = "STATUS", num_args = 3)]
        exits: Option<Vec<u8>>,
        /// sweep's --retries (a transport failure runs again this often)
        #[arg(long, value_name = "N", default_value_t = 0)]
        retries: usize,
        /// Which try this was, from 0 (with --exits: retry_in_s and
        /// retry_note say whether and when to run it again)
        #[arg(long, value_name = "N", default_value_t = 0)]
        attempt: usize,
        /// Say on stderr after PREFIX each pre-flight note of the run's
        /// swap record that no verdict in the --tally FILE said yet
        #[arg(
            long,
            value_name = "PREFIX",
            allow_hyphen_values = true,
            requires = "tally"
        )]
        say: Option<String>,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// A single-host sweep's end from the tally file `verdict --tally FILE`
    /// and `step --tally FILE` appended to: the `done` line sweep says and
    /// its exit status (41 every config failed, 40 some, else 0)
    Tally {
        /// The tally file (missing: nothing counted)
        #[arg(long, value_name = "FILE")]
        from: Option<String>,
    },
    /// Read a dry-run swap record on stdin; print the origin record to
    /// append, unless ORIGIN already holds one (then print nothing)
    Origin {
        /// Append the new origin record to FILE (the results file) instead
        /// of printing it
        #[arg(long, value_name = "FILE")]
        append: Option<String>,
        /// Also write the new origin record to FILE (a pool host's own)
        #[arg(long, value_name = "FILE")]
        copy: Option<String>,
        /// When ORIGIN holds one already (and no --copy), say so on
        /// stderr after PREFIX
        #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
        say: Option<String>,
        /// Check the dry run first (sweep's pre-flight; exit 2 with one
        /// line): every swept flag is on the launch line (or --new), and
        /// URL's port is the one the target listens on
        #[arg(long, value_name = "URL")]
        url: Option<String>,
        /// With --url: a swept key the launch line may lack (sweep
        /// --param-new); repeatable
        #[arg(long = "new", value_name = "KEY", requires = "url")]
        new: Vec<String>,
        /// With --url: a swept key (sweep --param) that must be on the
        /// launch line already; repeatable. Other changes are not checked
        #[arg(long = "swept", value_name = "KEY", requires = "url")]
        swept: Vec<String>,
        /// With --url: the URL wait-ready probes as given (no --server); a
        /// running server's 404 or 405 there is refused (exit 2)
        #[arg(long, value_name = "URL", requires = "url")]
        probe: Option<String>,
        /// Where the origin is kept (the results file); missing: none yet
        #[arg(value_name = "ORIGIN")]
        file: Option<String>,
    },
    /// The end of a sweep, one swap at a time: with --keep-winner the
    /// schedule when it wins by the objective, else summarize's pick; else
    /// (or when that fails) the original config, a transport failure
    /// retried. Each answer: `swap` with svc-swap's and wait-ready's words
    /// and the lines to say, or `done` with the error and exit status (42:
    /// the last swap did not end with a ready server)
    End {
        #[command(flatten)]
        grid: GridArgs,
        /// The file holding the origin record
        #[arg(long, value_name = "FILE")]
        origin: String,
        /// The sweep ran the SERVER schedule step (its own flags are undone
        /// with the pick or the original)
        #[arg(long, value_name = "SERVER", value_parser = ["vllm", "sglang"])]
        schedule: Option<String>,
        /// Apply the winner last (the schedule when it wins, else
        /// summarize's pick)
        #[arg(long)]
        keep_winner: bool,
        /// Run summarize (this path) once, into DIR/summary: its summary
        /// record of RESULTS (`--format json`) for --keep-winner and
        /// --validate-on
        #[arg(long, value_name = "PATH")]
        summarize: Option<String>,
        /// An argument for --summarize (repeatable)
        #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
        sum_arg: Vec<String>,
        /// sweep --validate-on: replay trace FILE against the pick (and
        /// the schedule) before the rest of the end
        #[arg(long, value_name = "FILE")]
        validate_on: Option<String>,
        /// sweep --slo: loadgen --slo for the replay
        #[arg(long, value_name = "TERMS", requires = "validate_on")]
        slo: Option<String>,
        /// loadgen's words for the replay (repeatable)
        #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
        validate_load: Vec<String>,
        /// The swap that ran last (none: the first is asked for)
        #[arg(long, value_enum)]
        after: Option<crate::end::Swap>,
        /// Which try of the original that was, from 0
        #[arg(long, value_name = "N", default_value_t = 0)]
        attempt: usize,
        /// svc-swap's and wait-ready's exit statuses in it
        #[arg(long, value_name = "STATUS", num_args = 2, requires = "after")]
        exits: Option<Vec<u8>>,
        /// sweep's --retries (a transport failure restores again this often)
        #[arg(long, value_name = "N", default_value_t = 0)]
        retries: usize,
        /// Where the schedule record for svc-swap --apply-from is written
        #[arg(long, value_name = "DIR", default_value = ".")]
        work: String,
        /// 1: the sweep was interrupted, so the original's wait is bounded
        /// by the first time to ready RESULTS measured, plus a margin
        #[arg(long, value_name = "0|1", default_value = "0", action = clap::ArgAction::Set,
              value_parser = clap::builder::BoolishValueParser::new())]
        interrupted: bool,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// Mark loadgen's records on stdin as sweep --validate-on's replay
    /// (a `validation` object), for the results file: never one of the
    /// sweep's results
    Validation {
        /// What was validated
        #[arg(long, value_parser = ["pick", "schedule"])]
        of: String,
        /// The trace replayed
        #[arg(long, value_name = "FILE")]
        trace: String,
        /// The objectives loadgen judged goodput by
        #[arg(long, value_name = "TERMS")]
        slo: Option<String>,
        /// The config replayed against (a JSON object), for records
        /// whose own `config` is empty (loadgen ran with no upstream)
        #[arg(long, value_name = "JSON")]
        config: Option<String>,
    },
    /// svc-swap's words that put ORIGIN's original config back, one per
    /// line; every swept key must be in it
    Restore {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(value_name = "ORIGIN")]
        file: String,
    },
    /// The record of a host the fleet dropped for REASON; ORIGIN is that
    /// host's origin record (may be missing)
    HostDropped {
        #[arg(long, value_name = "REASON")]
        reason: String,
        #[arg(value_name = "ORIGIN")]
        file: Option<String>,
    },
    /// The adaptive search's next step along the one --param: measure a
    /// value, or done (and why, what it cost)
    Next {
        #[command(flatten)]
        grid: GridArgs,
        #[command(flatten)]
        knobs: NextArgs,
        /// summarize's summary record of RESULTS (`summarize --format json
        /// --objective weighted --pool-hosts RESULTS`); - is stdin; empty:
        /// nothing measured yet
        #[arg(long, value_name = "FILE")]
        summary: String,
        /// Write a skipped record for each untried value of a finished
        /// search (none twice), instead of the answer
        #[arg(long)]
        emit_skipped: bool,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// Which step sweep's loop runs next, with each tool's words for it:
    /// the grid's next config after the one it ran last (resumed: one
    /// whose last record is not a result), or the adaptive search's next
    /// value (as `next`; a finished search's untried values get skipped
    /// records in RESULTS), then the schedule step; `done` when none is
    /// left, with how many were skipped, or `fail` with the error and the
    /// exit status
    Step {
        #[command(flatten)]
        grid: GridArgs,
        #[command(flatten)]
        knobs: NextArgs,
        /// The config the loop ran last (0: none yet)
        #[arg(long, value_name = "N", default_value_t = 0)]
        after: usize,
        /// Config N itself (a pool job's), with its words
        #[arg(long, value_name = "N", conflicts_with_all = ["all", "adaptive"])]
        index: Option<usize>,
        /// After the configs, the schedule step for SERVER (sweep
        /// --schedule): derive it (summarize --schedule), run it, or done
        #[arg(long, value_name = "SERVER", value_parser = ["vllm", "sglang"])]
        schedule: Option<String>,
        /// The derive ran (summarize --schedule, its record appended to
        /// RESULTS) and exited RC: run the schedule (0), keep the static
        /// pick (56, refused), or fail
        #[arg(long, value_name = "RC", requires = "schedule")]
        derived: Option<u8>,
        /// The schedule step ran: done
        #[arg(long, requires = "schedule", conflicts_with = "derived")]
        scheduled: bool,
        /// A config's wait-ready words check the live server runs it
        /// (--expect-config per swept flag)
        #[arg(long)]
        expect_config: bool,
        /// sweep's --retries (for the adaptive search's transport stop)
        #[arg(long, value_name = "N", default_value_t = 0)]
        retries: usize,
        /// Where the schedule record for svc-swap --apply-from is written
        #[arg(long, value_name = "DIR", default_value = ".")]
        work: String,
        /// Skip configs whose last record is a result
        #[arg(long)]
        resume: bool,
        /// Every config left to run at once (`pending`), for a pool
        #[arg(long, conflicts_with = "adaptive")]
        all: bool,
        /// The adaptive search, from summarize's summary record of RESULTS
        /// (as `next --summary`)
        #[arg(long, value_name = "SUMMARY")]
        adaptive: Option<String>,
        /// Say the answer's notes (the configs skipped, the search's
        /// reasons, its end and cost) on stderr, each after PREFIX
        #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
        say: Option<String>,
        /// Append the answer (its skipped count) to FILE, for `tally
        /// --from FILE`
        #[arg(long, value_name = "FILE")]
        tally: Option<String>,
        /// Results file; missing: nothing ran yet
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// How a pool's grid ended (sweep --hosts): configs measured, failed
    /// and left without a result, hosts dropped, whether a job's tool
    /// rejected its arguments (usage), the exit status sweep(1) documents,
    /// and what sweep says at the end (error, warning, done, refusal)
    Outcome {
        #[command(flatten)]
        grid: GridArgs,
        /// Count the host_dropped records after this many lines (the
        /// file's length when the pool started)
        #[arg(long, value_name = "LINES", default_value_t = 0)]
        since: usize,
        /// GNU parallel's --joblog of the pool: a job that exited 2 (a
        /// usage error) is one (missing: none ran)
        #[arg(long, value_name = "FILE")]
        joblog: Option<String>,
        /// fleet-watch's --tries file: with --joblog, the jobs that
        /// ended well without a try record (unstarted: none of sweep's
        /// job ran)
        #[arg(long, value_name = "FILE", requires = "joblog")]
        tries: Option<String>,
        /// The pool was interrupted: exit 130 (a usage error stays 2)
        #[arg(long)]
        interrupted: bool,
        /// --keep-winner was refused (hosts of different hardware): exit
        /// 42, and the refusal to say
        #[arg(long)]
        winner_refused: bool,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// The pool of `sweep --hosts`, one answer per host: its place (n),
    /// dest, exec prefix, URL (from the --url template), id and name; a
    /// bad line: a usage error naming it
    Hosts {
        /// A pool file, or a comma list of hosts
        #[arg(long, value_name = "FILE|LIST")]
        hosts: String,
        /// sweep's --url template ({host}, {n}, {NAME} of the line)
        #[arg(long, value_name = "URL")]
        url: String,
    },
    /// One try of config N on one pool host: the try's record (it names
    /// the host, for fleet-watch) with the job's next step and its exit
    /// status for GNU parallel (0: the result stands, 1: another host
    /// tries it through --retries, 130: interrupted)
    FleetStep {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(long, value_name = "N")]
        index: usize,
        /// The host's id (its sshlogin)
        #[arg(long, value_name = "ID")]
        host: String,
        /// The try's verdict (`verdict --field state`)
        #[arg(long, value_enum, required_unless_present = "origin_failed")]
        state: Option<results::State>,
        /// The host's config could not be read (nothing ran): blame it
        #[arg(long)]
        origin_failed: bool,
        /// The config already failed on another host in this run
        #[arg(long)]
        suspect: bool,
        /// svc-swap's exit status in the try
        #[arg(long, value_name = "N", default_value_t = 0)]
        swap_exit: u8,
    },
    /// Read the pool's tries (fleet-step's records) on stdin till parallel
    /// ends; keep each host's blame, and drop a host charged N times (a
    /// warning, a host_dropped record appended to RESULTS, the sshlogin
    /// file SLF rewritten without it: parallel re-reads it)
    FleetWatch {
        /// Failures charged to a host before it is dropped
        #[arg(long, value_name = "N", default_value_t = 2)]
        drop_after: usize,
        /// A host of the pool (repeatable, in --hosts order)
        #[arg(long = "host", value_name = "ID=NAME", value_parser = fleet::parse_host, required = true)]
        hosts: Vec<fleet::Host>,
        /// parallel's --slf file, written here
        #[arg(long, value_name = "FILE")]
        slf: String,
        /// The directory of the hosts' origin-ID.jsonl records
        #[arg(long, value_name = "DIR")]
        origins: String,
        /// Append each try's record here too (the pool's per-try log)
        #[arg(long, value_name = "FILE")]
        tries: Option<String>,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// The last schedule record for SERVER in RESULTS, where its step
    /// stands (derive, run or done, its records' state) and the words
    /// wait-ready takes for it; with --emit-record the record itself (as
    /// svc-swap --apply-from reads it). sweep's loop asks `step`
    Schedule {
        /// The server the schedule is for
        #[arg(long, value_name = "SERVER", value_parser = ["vllm", "sglang"])]
        server: String,
        /// Keep a schedule RESULTS holds (without: always derive anew)
        #[arg(long)]
        resume: bool,
        /// Print the last schedule record instead of the answer; none:
        /// exit 3
        #[arg(long)]
        emit_record: bool,
        /// Print one tool's words one per line instead: expect (wait-ready
        /// --expect-config) or stage (--pipeline-config)
        #[arg(long, value_name = "WHICH", value_parser = ["expect", "stage"])]
        words: Option<String>,
        #[arg(value_name = "RESULTS")]
        results: String,
    },
    /// Where the sweep stands before config N runs, and its ETA: the mean
    /// load and bench time of the config starts in RESULTS so far, times
    /// the configs without a result (`--field line`: the human line)
    Progress {
        #[command(flatten)]
        grid: GridArgs,
        #[arg(long, value_name = "N")]
        index: usize,
        /// Show the line on stderr, after PREFIX, instead of answering on
        /// stdout: kept on the bottom row of a terminal, else a plain line
        #[arg(long, value_name = "PREFIX", allow_hyphen_values = true)]
        show: Option<String>,
        /// With --show: a plain line even on a terminal
        #[arg(long, requires = "show")]
        plain: bool,
        /// Results file; absent or missing: nothing ran yet
        #[arg(value_name = "RESULTS")]
        results: Option<String>,
    },
    /// Give a terminal's bottom row back after `progress --show` (the
    /// whole screen scrolls again, the row is cleared); off a terminal,
    /// nothing. sweep(1) runs it at exit, signals included
    ProgressEnd,
    /// Parse sweep(1)'s own arguments (after --) with its one option
    /// definition; print its settings as bash assignments, every value
    /// single-quoted (sweep.sh evals them); a bad one: `sweep: error:`, 2
    Options {
        /// Only the pool's hosts: h_id and h_name, in --hosts order
        #[arg(long, conflicts_with = "host")]
        pool: bool,
        /// Only pool host ID's own settings: the stages' target, ready and
        /// load words, its origin_file and say_prefix
        #[arg(long, value_name = "ID")]
        host: Option<String>,
        /// A sweep starts (not a pool's job): also refuse a results file
        /// that holds another sweep, unless --resume or --append
        #[arg(long, conflicts_with_all = ["pool", "host"])]
        start: bool,
        #[arg(
            value_name = "SWEEP_ARG",
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        argv: Vec<String>,
    },
    /// sweep(1) --dry-run: print the plan for sweep's arguments (after
    /// --): with --hosts each host and its URL, then each config's pipe as
    /// a command to copy, the tools at the paths given
    DryRun {
        #[command(flatten)]
        sweep: SweepRun,
    },
    /// Run `sweep --slurm`: each config a Slurm job (sweep(1), SLURM);
    /// with --dry-run in ARGV print the batch script and the sbatch line
    Slurm {
        #[command(flatten)]
        sweep: SweepRun,
    },
}

/// What `dry-run` and `slurm` take: the tools sweep found, and sweep's
/// own arguments after `--`.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepRun {
    /// svc-swap's, wait-ready's and loadgen's paths
    #[arg(long, value_names = ["SVC_SWAP", "WAIT_READY", "LOADGEN"], num_args = 3, required = true)]
    pub tools: Vec<String>,
    /// summarize's path: `slurm` scores the --adaptive search and
    /// derives the --schedule with it
    #[arg(long, value_name = "SUMMARIZE")]
    pub summarize: Option<String>,
    #[arg(
        value_name = "SWEEP_ARG",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub argv: Vec<String>,
}

/// clap's parser for a percentage (`5%` or `5`), as a fraction.
pub fn parse_pct(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    let x: f64 = t
        .parse()
        .map_err(|_| format!("\"{s}\": expected a percentage like 5%"))?;
    if !(0.0..=100.0).contains(&x) {
        return Err(format!("\"{s}\": must be between 0% and 100%"));
    }
    Ok(x / 100.0)
}
