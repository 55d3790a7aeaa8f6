//! `--resume` after a sweep that did not end (SIGKILLed, its login node
//! lost): its jobs may still be queued or running, or have ended unseen
//! with records no one appended. Every submission is written down
//! (`RESULTS.slurm/arrays.jsonl`: the array and each task's config), so a
//! resumed sweep takes over the tasks still in the queue (waits for them
//! and collects them as its own), collects the jobs that ended unseen from
//! their folders (`job-ID/records.jsonl`), and cancels a task of no config
//! of its grid: no config runs twice.

use std::collections::BTreeSet;

use anyhow::anyhow;
use serde::{Deserialize, Serialize};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Config;

use super::client::{self, Said};
use super::collect::{env_of, TaskRef};
use super::job::{self, End, JobLine};

/// The file each submission is written down in, in the sweep's folder.
pub const LEDGER: &str = "arrays.jsonl";

/// One submission: the array's id and what each of its tasks runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submitted {
    pub array: String,
    pub tasks: Vec<TaskConfig>,
}

/// One task of a submitted array.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskConfig {
    pub task: usize,
    pub config: Config,
}

/// Write submission `s` down in `dir`'s ledger.
pub fn write_down(dir: &str, s: &Submitted) -> Result<(), Exit> {
    crate::results::append_records(&format!("{dir}/{LEDGER}"), &[s]).map(|_| ())
}

/// Every submission `dir`'s ledger holds (none: no ledger).
fn ledger(dir: &str) -> Vec<Submitted> {
    let text = std::fs::read_to_string(format!("{dir}/{LEDGER}")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// A task of an earlier sweep still in the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    pub array: String,
    pub t: TaskRef,
    /// Its own job id, once it started.
    pub job_id: Option<String>,
    pub state: String,
}

/// What a resumed sweep finds of the earlier sweeps' jobs.
#[derive(Debug, Default)]
pub struct Found {
    /// Tasks still queued or running, to take over.
    pub live: Vec<Live>,
    /// Jobs that ended unseen, with their end: to collect now.
    pub ended: Vec<(JobLine, TaskRef)>,
    /// Tasks (`ARRAY_TASK`) of no config of this grid: to cancel.
    pub foreign: Vec<String>,
}

/// The jobs that wrote a folder in `dir`: (array, task) -> job id, from
/// the `array=` and `task=` lines of each one's `env`.
fn folders(dir: &str) -> Vec<((String, usize), String)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_prefix("job-")?.to_string();
            let env = env_of(&std::fs::read_to_string(e.path().join("env")).ok()?);
            let task = env.get("task")?.parse().ok()?;
            Some(((env.get("array")?.clone(), task), id))
        })
        .collect()
}

/// `scontrol show job -o ARRAY`'s lines: none once slurmctld forgot the
/// array; an answer that says nothing stops the resume (guessing a live
/// job gone would run its config twice).
fn shown(array: &str) -> Result<Vec<JobLine>, Exit> {
    let show = ["show", "job", "-o", array].map(String::from);
    match client::run("scontrol", &show)? {
        Said::Out(o) => Ok(job::parse(&o)),
        Said::Failed(e) if e.contains("Invalid job id") => Ok(Vec::new()),
        Said::Failed(e) => Err(Exit::new(
            exit::NO_SLURM,
            anyhow!("scontrol cannot say whether array job {array} of the earlier sweep still runs ({e}); run --resume again"),
        )),
    }
}

/// The earlier sweeps' jobs of the sweep folder `dir`: `collected`, the
/// job ids the results file has records of; `in_grid`, whether a config
/// is one of this sweep's.
pub fn survey(
    dir: &str,
    collected: &BTreeSet<String>,
    in_grid: impl Fn(&Config) -> bool,
) -> Result<Found, Exit> {
    let mut found = Found::default();
    let subs = ledger(dir);
    if subs.is_empty() {
        return Ok(found);
    }
    let jobs = folders(dir);
    let mut seen = BTreeSet::new();
    for s in subs.iter().filter(|s| seen.insert(s.array.clone())) {
        let lines = shown(&s.array)?;
        for tc in &s.tasks {
            let t = TaskRef {
                task: tc.task,
                config: tc.config.clone(),
            };
            let line = lines.iter().find(|l| l.is_task(&s.array, t.task));
            // A started task has a line of its own; pending ones share one.
            let own = line.filter(|l| l.tasks.len() == 1 || l.array_job_id.is_none());
            match line {
                Some(l) if job::end_of(&l.state, true) == End::Active => {
                    if in_grid(&t.config) {
                        let (array, state) = (s.array.clone(), l.state.clone());
                        let job_id = own.map(|l| l.job_id.clone());
                        found.live.push(Live {
                            array,
                            t,
                            job_id,
                            state,
                        });
                    } else {
                        found.foreign.push(format!("{}_{}", s.array, t.task));
                    }
                }
                _ => {
                    let key = (s.array.clone(), t.task);
                    let folder = jobs.iter().find(|(k, _)| *k == key).map(|(_, id)| id);
                    // Never started (no folder), or collected already.
                    let Some(id) = folder.filter(|id| !collected.contains(*id)) else {
                        continue;
                    };
                    let l = match own.filter(|l| &l.job_id == id) {
                        Some(l) => l.clone(),
                        None => client::purged(&s.array, t.task, Some(id)),
                    };
                    found.ended.push((l, t));
                }
            }
        }
    }
    Ok(found)
}

/// The job ids the results file's records name (`slurm.job_id`).
pub fn collected(lines: &[crate::results::Line]) -> BTreeSet<String> {
    lines
        .iter()
        .filter_map(|l| l.raw["slurm"]["job_id"].as_str().map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submissions_are_written_down_and_read_back() {
        let dir = testkit::temp_dir("sweep-plan-ledger");
        let d = dir.to_str().unwrap();
        let config = Config::from([("k".to_string(), "2".to_string())]);
        let s = Submitted {
            array: "77".into(),
            tasks: vec![TaskConfig { task: 2, config }],
        };
        write_down(d, &s).unwrap();
        write_down(d, &s).unwrap();
        assert_eq!(ledger(d), [s.clone(), s]);
        std::fs::create_dir_all(dir.join("job-79")).unwrap();
        std::fs::write(dir.join("job-79/env"), "node=n1\narray=77\ntask=2\n").unwrap();
        std::fs::create_dir_all(dir.join("job-80")).unwrap();
        std::fs::write(dir.join("job-80/env"), "node=n1\n").unwrap();
        assert_eq!(folders(d), [(("77".to_string(), 2), "79".to_string())]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_job_ids_on_file_are_those_collected() {
        let text = "{\"type\":\"origin\"}\n{\"type\":\"bench\",\"slurm\":{\"job_id\":\"12\"}}\n";
        let ids = collected(&crate::results::read(text));
        assert_eq!(ids, BTreeSet::from(["12".to_string()]));
    }
}
