//! sweep's Slurm options (`--partition` ... `--queue-timeout`), defined
//! once and flattened into sweep(1)'s [`super::definition::SweepArgs`];
//! `sweep --slurm`'s plan keeps them as parsed here, durations included
//! (checks.rs refuses what `--slurm` cannot honour).

use std::time::Duration;

use sweepkit::time::parse_duration;

/// The sbatch settings and the control side's limits of `sweep --slurm`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SlurmArgs {
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
        value_parser = parse_duration,
        requires = "time",
        help_heading = "Slurm"
    )]
    pub flush_before: Duration,

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
    #[arg(long, value_name = "DUR", requires = "slurm", help_heading = "Slurm",
          value_parser = parse_duration)]
    pub queue_timeout: Option<Duration>,
}
