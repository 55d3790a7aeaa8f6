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
    #[arg(long, value_name = "TIME", requires = "slurm", help_heading = "Slurm",
          value_parser = TimeLimit::parse)]
    pub time: Option<TimeLimit>,

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

/// An sbatch `--time` as Slurm reads it (src/common/parse_time.c,
/// `time_str2secs`): MIN, MIN:SEC, H:MM:SS, D-H, D-H:MM, D-H:MM:SS, or
/// no limit (-1, INFINITE, UNLIMITED); Slurm rounds it up to whole minutes
/// (`time_str2mins`).
#[derive(Debug, Clone, PartialEq)]
pub struct TimeLimit {
    /// As given, for sbatch.
    pub text: String,
    /// The seconds it asks for; `None`: no limit.
    pub secs: Option<u64>,
}

impl TimeLimit {
    /// clap's value parser: the error says the forms Slurm takes.
    pub fn parse(text: &str) -> Result<TimeLimit, String> {
        let t = text.trim();
        let limit = |secs| TimeLimit {
            text: t.to_string(),
            secs,
        };
        if t == "-1" || ["infinite", "unlimited"].contains(&t.to_ascii_lowercase().as_str()) {
            return Ok(limit(None));
        }
        let secs = Self::secs(t).ok_or_else(|| {
            "expected MIN, MIN:SEC, H:MM:SS, D-H, D-H:MM or D-H:MM:SS (as sbatch --time), or UNLIMITED".to_string()
        })?;
        Ok(limit(Some(secs)))
    }

    fn secs(t: &str) -> Option<u64> {
        let num = |w: &str| -> Option<u64> {
            (!w.is_empty() && w.bytes().all(|b| b.is_ascii_digit())).then(|| w.parse().ok())?
        };
        let (days, rest) = match t.split_once('-') {
            Some((d, r)) => (Some(num(d)?), r),
            None => (None, t),
        };
        let parts: Vec<u64> = rest.split(':').map(num).collect::<Option<_>>()?;
        let (h, m, s) = match (days.is_some(), parts.as_slice()) {
            (false, &[m]) => (0, m, 0),
            (false, &[m, s]) => (0, m, s),
            (_, &[h, m, s]) => (h, m, s),
            (true, &[h]) => (h, 0, 0),
            (true, &[h, m]) => (h, m, 0),
            _ => return None,
        };
        Some(((days.unwrap_or(0) * 24 + h) * 60 + m) * 60 + s)
    }

    /// The limit Slurm applies: the seconds asked, rounded up to minutes.
    pub fn applied_secs(&self) -> Option<u64> {
        self.secs.map(|s| s.div_ceil(60) * 60)
    }
}

impl SlurmArgs {
    /// What a user should hear about `--time` before anything is
    /// submitted: Slurm rounds seconds up to a whole minute, without a
    /// word; a `--flush-before` not shorter than the time asked leaves
    /// loadgen little or nothing to measure.
    pub fn time_notes(&self) -> Vec<String> {
        let (Some(t), Some(asked)) = (&self.time, self.time.as_ref().and_then(|t| t.secs)) else {
            return Vec::new();
        };
        let applied = t.applied_secs().unwrap_or(asked);
        let mins = applied / 60;
        let mut notes = Vec::new();
        if applied != asked {
            notes.push(format!(
                "--time {}: Slurm counts time limits in whole minutes, so each job gets {mins} minute(s), not {asked} s; give --time {mins} to say so",
                t.text
            ));
        }
        let flush = self.flush_before.as_secs();
        if flush >= asked {
            let left = applied.saturating_sub(flush);
            notes.push(format!(
                "--flush-before {flush}s is not shorter than the {asked} s --time {} asks: each job is told to write its levels {flush} s before its {mins}-minute limit, {left} s after it starts; give a shorter --flush-before or a longer --time",
                t.text
            ));
        }
        notes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurm_time_forms_read_as_sbatch_reads_them() {
        let secs = |t: &str| TimeLimit::parse(t).map(|l| l.secs);
        assert_eq!(secs("5"), Ok(Some(300)));
        assert_eq!(secs("0:20"), Ok(Some(20)));
        assert_eq!(secs("1:00:00"), Ok(Some(3600)));
        assert_eq!(secs("2-3"), Ok(Some((2 * 24 + 3) * 3600)));
        assert_eq!(secs("1-0:30"), Ok(Some(24 * 3600 + 1800)));
        assert_eq!(secs("1-0:0:5"), Ok(Some(24 * 3600 + 5)));
        assert_eq!(secs("UNLIMITED"), Ok(None));
        assert_eq!(secs("-1"), Ok(None));
        for bad in ["banana", "", "1:2:3:4", "-5", "1-", "1:x", "1.5"] {
            assert!(TimeLimit::parse(bad).is_err(), "{bad}");
        }
        let l = TimeLimit::parse("0:20").unwrap();
        assert_eq!(l.applied_secs(), Some(60));
        assert_eq!(l.text, "0:20");
    }

    /// Regression: `--time 0:20` ran for a minute without a word, and the
    /// default --flush-before 30s exceeded the 20 s asked.
    #[test]
    fn seconds_slurm_rounds_and_a_flush_past_the_time_are_said() {
        let args = |time: &str, flush: u64| SlurmArgs {
            time: Some(TimeLimit::parse(time).unwrap()),
            flush_before: Duration::from_secs(flush),
            ..SlurmArgs::default()
        };
        let notes = args("0:20", 30).time_notes();
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(
            notes[0].contains("each job gets 1 minute(s), not 20 s"),
            "{notes:?}"
        );
        assert!(
            notes[1].contains("--flush-before 30s is not shorter than the 20 s"),
            "{notes:?}"
        );
        assert!(notes[1].contains("30 s after it starts"), "{notes:?}");
        assert!(args("5", 30).time_notes().is_empty());
        assert!(args("UNLIMITED", 30).time_notes().is_empty());
        let one = args("1:30", 100).time_notes();
        assert_eq!(one.len(), 2, "{one:?}");
        assert!(one[1].contains("0 s after it starts"), "{one:?}");
    }
}
