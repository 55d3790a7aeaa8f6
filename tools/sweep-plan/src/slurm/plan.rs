//! `sweep --slurm`'s plan: sweep's argv parsed once into what the batch
//! script, sbatch and the control side's loop need.

use std::path::Path;
use std::time::Duration;

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::report::Exit;

use crate::grid::Grid;
use crate::stage_words::{Stages, Target};

/// The placeholder words a [`Plan`]'s stages carry for the job's spec copy
/// and URL, which the batch script writes as `"$spec"` and `"$url"`.
pub const SPEC: &str = "\u{1}SPEC";
pub const URL: &str = "\u{1}URL";

/// Everything a Slurm sweep needs, from sweep's argv.
#[derive(Debug, Clone)]
pub struct Plan {
    pub grid: Grid,
    /// The stages' shared words, the spec and URL as [`SPEC`] and [`URL`].
    pub stages: Stages,
    /// svc-swap's, wait-ready's and loadgen's absolute paths.
    pub tools: [String; 3],
    /// RESULTS.slurm: the batch script, the jobs' output and records (on
    /// a file system the nodes share).
    pub dir: String,
    pub results: String,
    pub spec: String,
    pub spec_dir: String,
    /// The URL inside a job: `scheme://127.0.0.1`, `:PORT`, then the rest.
    pub url_head: String,
    pub url_tail: String,
    pub expect_config: bool,
    pub dry_run: bool,
    pub resume: bool,
    pub retries: usize,
    pub quiet: bool,
    pub partition: Option<String>,
    pub account: Option<String>,
    pub gres: Option<String>,
    pub gpus_per_node: Option<String>,
    pub exclusive: bool,
    pub time: Option<String>,
    pub flush_before_s: u64,
    pub max_jobs: Option<u32>,
    pub sbatch_args: Vec<String>,
    pub queue_timeout: Option<Duration>,
}

fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow!(msg))
}

fn absolute(p: &str, what: &str) -> Result<String, Exit> {
    std::fs::canonicalize(p)
        .map(|p| p.display().to_string())
        .map_err(|e| usage(format!("{what} {p}: {e}")))
}

fn duration(flag: &str, v: &str) -> Result<Duration, Exit> {
    humantime::parse_duration(v).map_err(|e| usage(format!("{flag} '{v}': {e} (e.g. 30s, 5m)")))
}

/// `http://HOST:PORT/PATH` -> (`http://127.0.0.1`, `/PATH`): the job's
/// server listens on its own node.
pub fn split_url(url: &str) -> Result<(String, String), Exit> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| usage(format!("--url '{url}': expected http://HOST:PORT")))?;
    let tail = rest.find('/').map_or("", |i| &rest[i..]);
    Ok((format!("{scheme}://127.0.0.1"), tail.to_string()))
}

impl Plan {
    /// Parse sweep's `argv`; the tools at `tools`.
    pub fn from_argv(argv: &[String], tools: &[String]) -> Result<Plan, Exit> {
        let t = Target {
            url: URL.into(),
            ..Target::default()
        };
        let (a, mut stages) = crate::sweep_options::parsed_stages(argv, &t)?;
        if !a.slurm {
            return Err(usage("sweep-plan slurm: the sweep has no --slurm".into()));
        }
        let spec_arg = a.spec.clone().unwrap_or_default();
        // The job's own copy of the spec stands in for the user's.
        let mut prev = "";
        for w in stages.target.iter_mut() {
            if prev == "--spec" {
                *w = SPEC.into();
            }
            prev = if w == "--spec" { "--spec" } else { "" };
        }
        let spec = absolute(&spec_arg, "--spec")?;
        let spec_dir = Path::new(&spec)
            .parent()
            .map_or("/".into(), |d| d.display().to_string());
        let (url_head, url_tail) = split_url(&a.url)?;
        let results = std::path::absolute(&a.results)
            .map_err(|e| usage(format!("--results {}: {e}", a.results)))?
            .display()
            .to_string();
        let mut tools_abs = Vec::new();
        for t in tools {
            tools_abs.push(absolute(t, "tool")?);
        }
        Ok(Plan {
            grid: crate::grid::expand(&a.params, &a.values).map_err(usage)?,
            stages,
            tools: [
                tools_abs[0].clone(),
                tools_abs[1].clone(),
                tools_abs[2].clone(),
            ],
            dir: format!("{results}.slurm"),
            results,
            spec,
            spec_dir,
            url_head,
            url_tail,
            expect_config: a.expect_config,
            dry_run: a.dry_run,
            resume: a.resume,
            retries: a.retries.parse().unwrap_or(0),
            quiet: a.quiet,
            partition: a.partition,
            account: a.account,
            gres: a.gres,
            gpus_per_node: a.gpus_per_node,
            exclusive: a.exclusive,
            flush_before_s: duration("--flush-before", &a.flush_before)?
                .as_secs()
                .max(1),
            time: a.time,
            max_jobs: a.max_jobs,
            sbatch_args: a.sbatch_arg,
            queue_timeout: a
                .queue_timeout
                .map(|q| duration("--queue-timeout", &q))
                .transpose()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jobs_url_is_on_its_own_node() {
        let (h, t) = split_url("http://gpu7:8000/v1").unwrap();
        assert_eq!((h.as_str(), t.as_str()), ("http://127.0.0.1", "/v1"));
        let (h, t) = split_url("https://x").unwrap();
        assert_eq!((h.as_str(), t.as_str()), ("https://127.0.0.1", ""));
        assert_eq!(split_url("x:1").unwrap_err().code, exit::USAGE);
    }
}
