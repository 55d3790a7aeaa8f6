//! The driver's side of Slurm's queue: submit an array (sbatch, each
//! submission written down for a resumed sweep), read every active
//! array's tasks (scontrol), cancel on Ctrl-C and past --queue-timeout,
//! and submit again what a transport end took.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::anyhow;
use sweepkit::diag;
use sweepkit::exit::Exit;
use sweepkit::records::FailureKind;

use super::super::adopt::{self, Submitted, TaskConfig};
use super::super::client::{self, Said};
use super::super::collect;
use super::super::job::{self, End, JobLine};
use super::super::{script, secrets};
use super::{say, Driver, Task};

impl Driver<'_> {
    /// Submit `indices` as one array; a refusal records each config's
    /// failure with sbatch's own line and submits nothing more.
    pub(super) fn submit(&mut self, indices: &[usize], avoid: &[String]) -> Result<(), Exit> {
        let args = script::sbatch_args(self.p, indices, avoid, &self.script);
        match client::sbatch(&args, &secrets::NAMES)? {
            Said::Out(out) => {
                let id = out
                    .lines()
                    .last()
                    .unwrap_or("")
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .to_string();
                let list: Vec<String> = indices.iter().map(usize::to_string).collect();
                say(
                    self.p,
                    &format!("submitted array job {id} (config {})", list.join(",")),
                );
                let tasks = indices.iter().map(|&task| TaskConfig {
                    task,
                    config: self.p.config(task),
                });
                adopt::write_down(
                    &self.p.dir,
                    &Submitted {
                        array: id.clone(),
                        tasks: tasks.collect(),
                    },
                )?;
                for &index in indices {
                    *self.tries.entry(index).or_default() += 1;
                    self.tasks.push(Task {
                        index,
                        task: index,
                        array: id.clone(),
                        job_id: None,
                        state: "PENDING".into(),
                        submitted: Instant::now(),
                        ours: None,
                    });
                }
                Ok(())
            }
            Said::Failed(line) => {
                self.rejected = true;
                let line = line
                    .lines()
                    .find(|l| l.contains("error"))
                    .unwrap_or(&line)
                    .to_string();
                let mut recs = Vec::new();
                for &index in indices {
                    let mut f = sweepkit::records::failure(
                        "sweep-plan",
                        std::time::SystemTime::now(),
                        self.p.config(index),
                        sweepkit::records::Stage::Swap,
                        FailureKind::SubmitRejected,
                        line.clone(),
                        None,
                    );
                    f.log_tail = vec![line.clone()];
                    recs.push(collect::value_of(f));
                }
                self.append(&recs)?;
                diag::error("sweep", &anyhow!("sbatch refused the job: {line}; nothing else was submitted (fix the Slurm options, then run again with --resume)"));
                Ok(())
            }
        }
    }

    /// Read every active array's tasks from scontrol.
    pub(super) fn poll(&mut self) -> Result<Vec<(usize, JobLine)>, Exit> {
        let mut ended = Vec::new();
        for a in self.arrays() {
            let show = ["show".into(), "job".into(), "-o".into(), a.clone()];
            let out = match client::run("scontrol", &show)? {
                Said::Out(o) => o,
                // Expired (MinJobAge) before it was read: it ended unseen.
                Said::Failed(e) if e.contains("Invalid job id") => String::new(),
                // slurmctld busy or restarting: ask again next round.
                Said::Failed(_) => continue,
            };
            let lines = job::parse(&out);
            for t in self.tasks.iter_mut().filter(|t| t.array == a) {
                let l = lines.iter().find(|l| l.is_task(&a, t.task));
                let Some(l) = l else {
                    let id = t.job_id.as_deref();
                    ended.push((t.index, client::gone(&a, t.task, id, t.ours)));
                    continue;
                };
                if l.tasks.len() == 1 || l.array_job_id.is_none() {
                    t.job_id = Some(l.job_id.clone());
                }
                t.state = l.state.clone();
                if job::end_of(&l.state, true) != End::Active && t.job_id.is_some() {
                    ended.push((t.index, l.clone()));
                } else if job::end_of(&l.state, true) != End::Active {
                    // A pending range cancelled as a whole: this task's line.
                    let mut one = l.clone();
                    one.tasks = vec![t.task as u32];
                    ended.push((t.index, one));
                }
            }
        }
        Ok(ended)
    }

    /// Ctrl-C: every job of the sweep cancelled, once.
    pub(super) fn interrupt(&mut self) {
        self.interrupted = true;
        say(
            self.p,
            "interrupted; cancelling every job of the sweep (scancel)",
        );
        for a in &self.arrays() {
            client::scancel(a);
        }
        for t in &mut self.tasks {
            t.ours.get_or_insert(FailureKind::Interrupted);
        }
    }

    /// Cancel tasks pending past --queue-timeout.
    pub(super) fn queue_timeouts(&mut self) {
        let Some(limit) = self.p.slurm.queue_timeout else {
            return;
        };
        let mut late = Vec::new();
        for t in &mut self.tasks {
            if t.state == "PENDING" && t.ours.is_none() && t.submitted.elapsed() > limit {
                t.ours = Some(FailureKind::QueueTimeout);
                late.push((t.index, format!("{}_{}", t.array, t.task)));
            }
        }
        for (index, id) in late {
            say(
                self.p,
                &format!(
                    "config {index}: still pending after --queue-timeout; cancelling job {id}"
                ),
            );
            client::scancel(&id);
        }
    }

    /// Submit `again`, grouped by the nodes each must avoid.
    pub(super) fn resubmit(&mut self, again: &[usize]) -> Result<(), Exit> {
        if self.rejected {
            return Ok(());
        }
        let mut groups: BTreeMap<Vec<String>, Vec<usize>> = BTreeMap::new();
        for &i in again {
            groups
                .entry(self.avoid.get(&i).cloned().unwrap_or_default())
                .or_default()
                .push(i);
        }
        for (avoid, indices) in groups {
            self.submit(&indices, &avoid)?;
        }
        Ok(())
    }
}
