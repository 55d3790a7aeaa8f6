//! Slurm's client commands as the control side runs them (sbatch,
//! scontrol, sacct, scancel): their output or their error line, and the
//! one error when they are missing (exit 47).

use std::process::{Command, Stdio};

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;

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
    let o = Command::new(prog)
        .args(args)
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
