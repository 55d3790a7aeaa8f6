//! sweep's Slurm options (`--partition` ... `--queue-timeout`), defined
//! once and flattened into sweep(1)'s [`crate::sweep_options::SweepArgs`];
//! `sweep --slurm`'s plan keeps them as parsed here, durations included.

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

/// Why `--slurm` refuses an option it cannot honour (one line), if it
/// does. `--adaptive` and `--schedule` it runs: each next config is
/// submitted once the search (or the schedule) is decided.
pub fn refusal(slurm: bool, keep_winner: bool, spec: bool) -> Option<&'static str> {
    if slurm && !spec {
        // The job runs the server itself, as a step of its allocation.
        return Some("--slurm runs the server from a process spec (--spec FILE) as a step of each job; a --unit, --container or --compose target lives on a machine sweep reaches without Slurm. Write the server's command line as a spec (man svc-swap, PROCESS SPEC)");
    }
    if slurm && keep_winner {
        // Each job's server ends with its job: there is none to keep.
        return Some("--keep-winner with --slurm: no server outlives its job, so there is none to keep or restore; the table's recommendation names the winning flags to put in the spec");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_refuses_only_keep_winner_in_one_line() {
        assert_eq!(refusal(false, true, true), None);
        assert_eq!(refusal(true, false, true), None);
        let kw = refusal(true, true, true).unwrap();
        assert!(kw.starts_with("--keep-winner with --slurm: "), "{kw}");
        assert!(!kw.contains('\n'));
        let unit = refusal(true, false, false).unwrap();
        assert!(
            unit.starts_with("--slurm runs the server from a process spec"),
            "{unit}"
        );
        assert_eq!(refusal(false, false, false), None);
    }
}
