//! summarize's command line: the flags (clap derive) and the closed
//! vocabularies they take.

use std::path::PathBuf;

use clap::{Parser, ValueEnum};

use crate::flag_values;
use crate::input::level;

/// What `--by` splits the results by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum By {
    /// What was sent (load.workload: prompts, trace digest, block size)
    Workload,
}

/// How the overall winner is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Objective {
    /// The best single (config, level) cell.
    Max,
    /// The best cell among those meeting every --slo term.
    Slo,
    /// The best config over a weighted mix of levels (--weights).
    Weighted,
}

impl Objective {
    /// The objective's name, as `--objective` takes it and records say it.
    pub fn name(self) -> &'static str {
        match self {
            Objective::Max => "max",
            Objective::Slo => "slo",
            Objective::Weighted => "weighted",
        }
    }
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned table and decisions (the default).
    Text,
    /// Markdown table and decisions, for pull requests.
    Markdown,
    /// One row per config and level.
    Csv,
    /// One summary record, for scripts.
    Json,
}

/// Which way the metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BetterArg {
    Higher,
    Lower,
}

/// `--slo` terms (a newtype so clap takes the list as one value).
#[derive(Debug, Clone)]
pub struct Slo(pub Vec<flag_values::SloTerm>);

/// `--weights` (a newtype so clap takes the list as one value).
#[derive(Debug, Clone)]
pub struct Weights(pub Vec<(level::Level, f64)>);

/// Compare configs from sweepkit results: table, picks, plateau, plot.
///
/// Reads bench and failure records, shows configs x load levels with the
/// change against a baseline, picks the best config per level and overall,
/// finds where gains level off, and writes a summary record that
/// `svc-swap --apply-from -` applies (with `--format json`).
#[derive(Debug, Parser)]
#[command(name = "summarize", version, max_term_width = 79)]
#[command(group = clap::ArgGroup::new("comparing").args(["compare", "compare_by", "trend"]))]
pub struct Args {
    /// Results: JSON Lines records or loadgen CSV; - is stdin [default: -]
    #[arg(value_name = "FILE")]
    pub files: Vec<String>,

    /// Metric to compare: dotted path (ttft_ms.p99) or alias (p99_ttft_ms)
    #[arg(
        short,
        long,
        value_name = "METRIC",
        default_value = "throughput.output_tok_per_s"
    )]
    pub metric: String,

    /// Which way the metric improves [default: from its unit: _ms/_s lower]
    #[arg(long, value_name = "WAY", value_enum)]
    pub better: Option<BetterArg>,

    /// Config the change in % is against [default: speculation off, if
    /// present, else the first config]
    #[arg(short, long, value_name = "KEY=VALUE", value_parser = flag_values::parse_baseline)]
    pub baseline: Option<(String, String)>,

    /// How to pick the overall winner [default: slo with --slo, else
    /// weighted (every level counts, equal weights unless --weights)]
    #[arg(long, value_name = "HOW", value_enum)]
    pub objective: Option<Objective>,

    /// Service levels every pick must meet, and each config's capacity
    /// (highest concurrency meeting them), e.g. 'p99_ttft_ms<=500'
    #[arg(long, value_name = "TERMS", value_parser = |s: &str| flag_values::parse_slo(s).map(Slo))]
    pub slo: Option<Slo>,

    /// Level weights for --objective weighted, e.g. 'c=1:0.5,c=16:0.5'
    /// [default: all levels equal]
    #[arg(long, value_name = "WEIGHTS", value_parser = |s: &str| flag_values::parse_weights(s).map(Weights))]
    pub weights: Option<Weights>,

    /// Ordered parameter for the plateau [default: the one varying
    /// numeric parameter]
    #[arg(long, value_name = "KEY")]
    pub param: Option<String>,

    /// Gain below which further steps of the parameter count as a plateau
    #[arg(long, value_name = "PCT", default_value = "2%", value_parser = flag_values::parse_pct)]
    pub plateau_threshold: f64,

    /// Scores within this of the best count as a tie; the smaller
    /// parameter value wins
    #[arg(long, value_name = "PCT", default_value = "1%", value_parser = flag_values::parse_pct)]
    pub tolerance: f64,

    /// Output format [default: text, terminal or not; json for scripts]
    #[arg(short, long, value_name = "FORMAT", value_enum)]
    pub format: Option<Format>,

    /// Rank results from hosts of different hardware together (without
    /// it: one table per host, and json/csv refuse, exit 55)
    #[arg(long, conflicts_with = "per_host")]
    pub pool_hosts: bool,

    /// One table (json: one summary record) per host, even when the
    /// hosts' hardware is identical
    #[arg(long)]
    pub per_host: bool,

    /// workload: one table and pick per workload, then the best config per
    /// workload and level (json: one summary record per workload; without
    /// it, json/csv refuse results of several workloads, exit 57)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub by: Option<By>,

    /// Also draw the metric by level and by parameter into this SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Also find the Pareto frontier of interactivity (1000 / TPOT p50,
    /// tok/s per user) against output tok/s per GPU; --plot draws it
    #[arg(long, help_heading = "Decision views")]
    pub pareto: bool,

    /// Also write one self-contained HTML report (verdict, table,
    /// frontier, capacity, timelines, failures, provenance) to FILE
    #[arg(long, value_name = "FILE.html", help_heading = "Decision views")]
    pub report: Option<PathBuf>,

    /// Print the server's own per-load schedule (JSON) from a sweep of one
    /// speculative depth at two or more concurrency levels
    #[arg(
        long,
        value_name = "SERVER",
        value_enum,
        help_heading = "Per-load schedule",
        conflicts_with_all = ["per_host", "format", "plot"]
    )]
    pub schedule: Option<Server>,

    /// With --schedule: the server's max batch, where the last range ends
    /// [default: from the records, else vLLM 256, SGLang 48]
    #[arg(
        long,
        value_name = "N",
        requires = "schedule",
        value_parser = clap::value_parser!(u64).range(1..),
        help_heading = "Per-load schedule"
    )]
    pub max_batch: Option<u64>,

    /// With --schedule: use depths up to K only, each level getting the
    /// best depth <= K by the same pick rule, instead of the cap summarize
    /// chooses from the records (see SCHEDULE, Depth cap)
    #[arg(
        long,
        value_name = "K",
        requires = "schedule",
        help_heading = "Per-load schedule"
    )]
    pub max_depth: Option<u32>,

    /// Compare two runs' results: per config x level x metric the change,
    /// its 95% interval and a verdict (see COMPARING RUNS)
    #[arg(
        long,
        num_args = 2,
        value_names = ["BEFORE", "AFTER"],
        help_heading = "Comparing runs",
        conflicts_with_all = ["files", "compare_by", "schedule", "plot", "pareto", "by"]
    )]
    pub compare: Option<Vec<String>>,

    /// Each config x level across several dated runs (one FILE each, in
    /// the order they ran): its value per run, the first-to-last change
    #[arg(
        long,
        help_heading = "Comparing runs",
        conflicts_with_all = ["compare", "compare_by", "schedule", "plot", "pareto", "by"]
    )]
    pub trend: bool,

    /// Compare the two runs of one results file that differ in FIELD, a
    /// dotted path (label, server.version); the first value seen is before
    #[arg(
        long,
        value_name = "FIELD",
        help_heading = "Comparing runs",
        conflicts_with_all = ["schedule", "plot", "pareto", "by"]
    )]
    pub compare_by: Option<String>,

    /// With --compare: the metrics to compare, comma-separated [default:
    /// output tok/s, TTFT p50 and p99, TPOT p50, ITL p99, E2E p50]
    #[arg(
        long,
        value_name = "LIST",
        requires = "comparing",
        help_heading = "Comparing runs"
    )]
    pub metrics: Option<String>,

    /// With --compare: exit 59 when a cell got worse beyond both the noise
    /// and a term, e.g. 'throughput.output_tok_per_s<-5%,ttft_ms.p99>+10%'
    #[arg(
        long,
        value_name = "TERMS",
        requires = "comparing",
        help_heading = "Comparing runs"
    )]
    pub fail_on: Option<String>,

    /// With --schedule sglang: the path the flags name for the adaptive
    /// config (write the record's adaptive_config there)
    #[arg(
        long,
        value_name = "PATH",
        default_value = "speculative-adaptive.json",
        help_heading = "Per-load schedule"
    )]
    pub adaptive_config_file: String,
}

/// Which server's schedule to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Server {
    /// vLLM: `--speculative-config` with num_speculative_tokens_per_batch_size.
    Vllm,
    /// SGLang: `--speculative-adaptive` with an adaptive config file.
    Sglang,
}

#[cfg(test)]
mod tests {
    testkit::cli_tests!(super::Args);
}
