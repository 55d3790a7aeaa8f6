//! Slurm's client commands as the control side runs them (sbatch,
//! scontrol, sacct, scancel): their output or their error line, and the
//! one error when they are missing (exit 47).

use std::process::{Command, Stdio};

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;

use sweepkit::records::FailureKind;

use super::job::{self, End, JobLine};

fn no_slurm(what: &str, e: impl std::fmt::Display) -> Exit {
    Exit::new(
        exit::NO_SLURM,
        anyhow!("{what}: {e} (sweep --slurm needs Slurm's client commands: apt-get install slurm-client, and SLURM_CONF or /etc/slurm/slurm.conf naming the cluster)"),
    )
}

/// What a Slurm command said.
#[derive(Debug, Clone, PartialEq)]
pub enum Said {
    /// It succeeded: its output.
    Out(String),
    /// It failed: its error lines.
    Failed(String),
}

/// Run `prog args`: what it said (missing: exit 47).
pub fn run(prog: &str, args: &[String]) -> Result<Said, Exit> {
    said(Command::new(prog).args(args), prog)
}

/// `sbatch args`, without the variables in `secret` in the environment it
/// exports to the job (sbatch's default `--export=ALL`), which slurmctld
/// keeps with the job: the job reads them from a file of the user's own
/// (secrets.rs).
pub fn sbatch(args: &[String], secret: &[&str]) -> Result<Said, Exit> {
    let mut c = Command::new("sbatch");
    c.args(args);
    for name in secret {
        c.env_remove(name);
    }
    said(&mut c, "sbatch")
}

fn said(c: &mut Command, prog: &str) -> Result<Said, Exit> {
    let o = c
        .stdin(Stdio::null())
        .output()
        .map_err(|e| no_slurm(prog, e))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    Ok(match o.status.success() {
        true => Said::Out(text(&o.stdout)),
        false => Said::Failed(text(&o.stderr)),
    })
}

/// The controller answers (`scontrol ping`): else exit 47 with its own
/// last line, before sweep writes or submits anything (no configuration
/// found, a controller down or a wrong SLURM_CONF).
pub fn reachable() -> Result<(), Exit> {
    // Slurm's commands retry a missing SLURM_CONF for a minute first.
    if let Some(conf) = std::env::var_os("SLURM_CONF").filter(|c| !std::path::Path::new(c).exists())
    {
        return Err(Exit::new(
            exit::NO_SLURM,
            anyhow!("SLURM_CONF names {}, which does not exist; point it at your cluster's slurm.conf (or unset it for /etc/slurm/slurm.conf); nothing was submitted", conf.to_string_lossy()),
        ));
    }
    let o = Command::new("scontrol")
        .arg("ping")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| no_slurm("scontrol", e))?;
    // A controller down is on stdout ("Slurmctld(primary) at H is DOWN"),
    // a configuration not found on stderr.
    let said = String::from_utf8_lossy(&o.stdout) + String::from_utf8_lossy(&o.stderr);
    if o.status.success() && !said.lines().any(|l| l.ends_with(" is DOWN")) {
        return Ok(());
    }
    // The controller's line, else the last that says something (scontrol
    // frames "RESTORE SLURMCTLD DAEMON TO SERVICE" in asterisks).
    let line = said
        .lines()
        .find(|l| l.ends_with(" is DOWN"))
        .or_else(|| {
            said.lines()
                .rev()
                .find(|l| l.chars().any(char::is_alphanumeric))
        })
        .unwrap_or("no answer");
    Err(Exit::new(
        exit::NO_SLURM,
        anyhow!("slurmctld does not answer `scontrol ping` ({line}); point SLURM_CONF at your cluster's slurm.conf, or run sweep where sbatch works; nothing was submitted"),
    ))
}

/// Cancel job `id` (a job, an array or one task of it); a job already
/// gone is no error.
pub fn scancel(id: &str) {
    let _ = Command::new("scancel")
        .arg(id)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The end of task `index` of `array` (job `job_id` once it started)
/// that scontrol no longer lists: sweep's own cancel (`ours`: at
/// --queue-timeout, on an interrupt), which it needs no one to report,
/// else a record slurmctld purged before it was read ([`purged`]).
pub fn gone(array: &str, index: usize, job_id: Option<&str>, ours: Option<FailureKind>) -> JobLine {
    match ours {
        Some(kind) => cancelled_by_sweep(array, index, job_id, kind),
        None => purged(array, index, job_id),
    }
}

/// The line of a task sweep cancelled itself (`kind`: why).
fn cancelled_by_sweep(
    array: &str,
    index: usize,
    job_id: Option<&str>,
    kind: FailureKind,
) -> JobLine {
    let why = match kind {
        FailureKind::QueueTimeout => "queue timeout",
        _ => "interrupted",
    };
    JobLine {
        job_id: job_id.unwrap_or(array).to_string(),
        array_job_id: Some(array.to_string()),
        tasks: u32::try_from(index).into_iter().collect(),
        state: "CANCELLED".into(),
        source: "sweep",
        reason: Some(format!("cancelled by sweep ({why})")),
        ..JobLine::default()
    }
}

/// The end of task `index` of `array` (job `job_id` once it started)
/// whose record slurmctld purged before it was read: sacct's line where
/// accounting keeps one (an ended state only), else [`job::EXPIRED`],
/// which its records (if any) decide.
pub fn purged(array: &str, index: usize, job_id: Option<&str>) -> JobLine {
    let args = ["-n", "-P", "-X", "-j", array, "--format", job::SACCT_FORMAT].map(String::from);
    let out = match run("sacct", &args) {
        Ok(Said::Out(out)) => Some(out),
        _ => None,
    };
    let known = out.and_then(|out| {
        job::parse_sacct(&out)
            .into_iter()
            .find(|l| l.is_task(array, index) && job::end_of(&l.state, true) != End::Active)
    });
    known.unwrap_or_else(|| JobLine {
        job_id: job_id.unwrap_or(array).to_string(),
        array_job_id: Some(array.to_string()),
        state: job::EXPIRED.into(),
        source: "sweep",
        reason: Some("slurmctld purged the job's record before sweep read its end, and sacct has none (accounting off)".into()),
        ..JobLine::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression: a task sweep cancelled at --queue-timeout that scontrol
    /// no longer listed was recorded as EXPIRED, "slurmctld purged the
    /// job's record", though sweep had cancelled it itself a second before.
    #[test]
    fn a_task_sweep_cancelled_is_cancelled_by_sweep_not_purged() {
        let l = gone("40", 2, None, Some(FailureKind::QueueTimeout));
        assert_eq!((l.state.as_str(), l.source), ("CANCELLED", "sweep"));
        assert_eq!(
            l.reason.as_deref(),
            Some("cancelled by sweep (queue timeout)")
        );
        assert_eq!((l.job_id.as_str(), l.tasks.as_slice()), ("40", &[2][..]));
        let l = gone("40", 1, Some("41"), Some(FailureKind::Interrupted));
        assert_eq!(
            l.reason.as_deref(),
            Some("cancelled by sweep (interrupted)")
        );
        assert_eq!(l.job_id, "41");
    }
}
