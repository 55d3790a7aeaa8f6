//! `sweep --slurm`'s plan: sweep's argv parsed once into what the batch
//! script, sbatch and the control side's loop need.

use anyhow::anyhow;
use clap::Parser;
use std::path::Path;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Config;

use crate::grid::{Grid, GridArgs};
use crate::preflight::look::Ask;
use crate::search::knobs::SearchArgs;
use crate::sweep::checks::{For, SchemeUrl};
use crate::sweep::slurm_args::SlurmArgs;
use crate::sweep::stage_words::{Stages, Target};

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
    /// The sbatch settings and the control side's limits, as parsed.
    pub slurm: SlurmArgs,
    /// --adaptive: the one parameter's grid and the search's knobs.
    pub search: Option<(GridArgs, SearchArgs)>,
    /// --schedule SERVER, and summarize --schedule's own words.
    pub schedule: Option<String>,
    pub schedule_args: Vec<String>,
    /// summarize's path (the search's scores, the schedule's derivation,
    /// the table) and the sweep's words for it; `--report FILE`.
    pub summarize: Option<String>,
    pub sum_args: Vec<String>,
    pub report: Option<String>,
    /// The look at the spec before anything is submitted, as every path
    /// takes it (preflight/look.rs): no URL, each job has its own.
    pub ask: Ask,
}

/// The array task that runs the schedule step: no config of the grid
/// (they count from 1).
pub const SCHEDULE_TASK: usize = 0;

/// The search's knobs, parsed as `sweep-plan step` parses them.
fn knobs(words: Vec<String>) -> Result<SearchArgs, Exit> {
    #[derive(Parser)]
    struct K {
        #[command(flatten)]
        k: SearchArgs,
    }
    let argv = std::iter::once("sweep".to_string()).chain(words);
    K::try_parse_from(argv).map(|k| k.k).map_err(|e| {
        let text = e.render().to_string();
        let line = text
            .lines()
            .next()
            .unwrap_or("")
            .trim_start_matches("error: ");
        usage(line.to_string())
    })
}

fn usage(msg: String) -> Exit {
    Exit::new(exit::USAGE, anyhow!(msg))
}

fn absolute(p: &str, what: &str) -> Result<String, Exit> {
    std::fs::canonicalize(p)
        .map(|p| p.display().to_string())
        .map_err(|e| usage(format!("{what} {p}: {e}")))
}

/// The URL inside a job, `http://HOST:PORT/PATH` -> (`http://127.0.0.1`,
/// `/PATH`): the job's server listens on its own node (the port is the
/// job's).
fn on_node(url: &SchemeUrl) -> (String, String) {
    let tail = url.rest.find('/').map_or("", |i| &url.rest[i..]);
    (format!("{}://127.0.0.1", url.scheme), tail.to_string())
}

impl Plan {
    /// Parse sweep's `argv`; the tools at `tools`.
    pub fn from_argv(argv: &[String], tools: &[String]) -> Result<Plan, Exit> {
        let t = Target {
            url: URL.into(),
            ..Target::default()
        };
        let s = crate::sweep::read(argv, For::Plan)?.to_plan()?;
        let ask = s.ask(&s.target(), false);
        let mut stages = s.stages(&t);
        let knobs = knobs(s.search_knobs);
        let schedule_args = s.schedule_args;
        let (a, grid, url, sum_args) = (s.args, s.grid, s.url, s.words.sum);
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
        let (url_head, url_tail) = on_node(&url);
        let results = std::path::absolute(&a.results)
            .map_err(|e| usage(format!("--results {}: {e}", a.results)))?
            .display()
            .to_string();
        let mut tools_abs = Vec::new();
        for t in tools {
            tools_abs.push(absolute(t, "tool")?);
        }
        let search = match a.adaptive {
            true => Some((
                GridArgs {
                    params: a.params.clone(),
                    values: a.values.clone(),
                },
                knobs?,
            )),
            false => None,
        };
        Ok(Plan {
            grid,
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
            slurm: a.slurm_args,
            search,
            schedule: a.schedule.map(|s| s.name().to_string()),
            schedule_args,
            summarize: None,
            sum_args,
            report: a.report,
            ask,
        })
    }

    /// Task `index`'s config: the grid's, or the schedule step's own
    /// (`schedule=SERVER`, as its stages record a failure).
    pub fn config(&self, index: usize) -> Config {
        match index {
            SCHEDULE_TASK => Config::from([(
                crate::results::SCHEDULE_KEY.to_string(),
                self.schedule.clone().unwrap_or_default(),
            )]),
            i => self.grid.points[i - 1].config(),
        }
    }

    /// Task `index`'s name in messages.
    pub fn label(&self, index: usize) -> String {
        match index {
            SCHEDULE_TASK => format!(
                "[schedule] {} per-load schedule",
                self.schedule.as_deref().unwrap_or_default()
            ),
            i => self.grid.points[i - 1].label(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A plan from sweep's words `extra` over a spec in a temp folder
    /// (`--param speculative-num-steps --values 1,2`).
    pub(crate) fn plan(extra: &[&str]) -> Result<Plan, Exit> {
        let dir = std::env::temp_dir().join(format!("plan-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec = dir.join("sim.spec");
        std::fs::write(&spec, "ExecStart=/bin/true\n").unwrap();
        let results = dir.join("r.jsonl");
        let mut argv: Vec<String> = ["--slurm", "--spec", spec.to_str().unwrap()]
            .iter()
            .chain(&["--results", results.to_str().unwrap()])
            .chain(&["--url", "http://127.0.0.1:1", "--server", "sglang"])
            .chain(&["--param", "speculative-num-steps", "--values", "1,2"])
            .map(|w| w.to_string())
            .collect();
        argv.extend(extra.iter().map(|w| w.to_string()));
        let me = std::env::current_exe().unwrap().display().to_string();
        Plan::from_argv(&argv, &[me.clone(), me.clone(), me])
    }

    #[test]
    fn the_schedule_step_is_task_0_with_its_own_config_and_words() {
        let p = plan(&["--schedule", "sglang", "--schedule-max-depth", "3"]).unwrap();
        assert_eq!(p.schedule_args, ["--max-depth", "3"]);
        assert_eq!(p.config(SCHEDULE_TASK)["schedule"], "sglang");
        assert_eq!(
            p.label(SCHEDULE_TASK),
            "[schedule] sglang per-load schedule"
        );
        assert_eq!(p.label(2), "speculative-num-steps=2");
        let w = crate::grid::PointWords {
            swap: vec!["--apply-from".into(), "/s/schedule.json".into()],
            ready: vec!["--expect-config".into(), "speculative-adaptive=true".into()],
            load: vec!["--pipeline-config".into(), "schedule=sglang".into()],
        };
        let script = super::super::script::batch(&p, Some(&w));
        assert!(
            script.contains("0) set_=( --apply-from /s/schedule.json ) ready_=( --expect-config speculative-adaptive=true ) load_=( --pipeline-config schedule=sglang ) ;;"),
            "{script}"
        );
        assert!(!super::super::script::batch(&p, None).contains("\n0) "));
    }

    #[test]
    fn the_search_knobs_parse_as_step_parses_them() {
        let p = plan(&["--adaptive", "--patience", "3", "--noise-margin", "10%"]).unwrap();
        let (g, k) = p.search.unwrap();
        assert_eq!(g.params, ["speculative-num-steps"]);
        assert_eq!((k.patience, k.repeat_budget), (3, 4));
        assert!((k.noise_margin - 0.1).abs() < 1e-9);
        let bad = plan(&["--adaptive", "--patience", "x"]).err().unwrap();
        assert_eq!(bad.code, exit::USAGE);
        let msg = bad.error.unwrap().to_string();
        assert!(msg.contains("--patience") && !msg.contains('\n'), "{msg}");
    }

    #[test]
    fn the_jobs_url_is_on_its_own_node() {
        let url = |scheme: &str, rest: &str| SchemeUrl {
            scheme: scheme.into(),
            rest: rest.into(),
        };
        let (h, t) = on_node(&url("http", "gpu7:8000/v1"));
        assert_eq!((h.as_str(), t.as_str()), ("http://127.0.0.1", "/v1"));
        let (h, t) = on_node(&url("https", "x"));
        assert_eq!((h.as_str(), t.as_str()), ("https://127.0.0.1", ""));
    }
}
