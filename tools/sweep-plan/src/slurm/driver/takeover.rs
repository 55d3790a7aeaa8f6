//! `--resume` in the driver: before it submits anything, the sweep takes
//! over the tasks earlier sweeps left in the queue, collects the jobs that
//! ended unseen and cancels a task of no config of its grid (adopt.rs
//! finds them).

use std::time::Instant;

use sweepkit::exit::Exit;

use super::super::adopt;
use super::super::client;
use super::super::collect;
use super::{kind_word, say, Driver, Task};

impl Driver<'_> {
    /// `--resume`: take over the tasks earlier sweeps left in the queue,
    /// collect the jobs that ended unseen, cancel a task of no config of
    /// this grid ([`adopt`]).
    pub fn adopt(&mut self) -> Result<(), Exit> {
        let grid = &self.p.grid;
        let index_of = |c: &sweepkit::records::Config| {
            grid.points
                .iter()
                .find(|pt| pt.config() == *c)
                .map(|pt| pt.index)
        };
        let found = adopt::survey(&self.p.dir, &adopt::collected(&self.lines), |c| {
            index_of(c).is_some()
        })?;
        for (l, t) in &found.ended {
            let (c, recs) = collect::collect(self.p, l, t, None);
            self.append(&recs)?;
            let what = c.failure.map(kind_word).unwrap_or_else(|| "ended".into());
            say(
                self.p,
                &format!(
                    "job {} of an earlier sweep {what} unseen ({} per {}): its {} record(s) collected",
                    l.job_id, l.state, l.source, c.records
                ),
            );
        }
        let mut foreign = found.foreign;
        for lv in found.live {
            let index = index_of(&lv.t.config).unwrap_or_default();
            if self.tasks.iter().any(|t| t.index == index) {
                foreign.push(format!("{}_{}", lv.array, lv.t.task));
                continue;
            }
            let job = lv
                .job_id
                .clone()
                .unwrap_or_else(|| format!("{}_{}", lv.array, lv.t.task));
            say(
                self.p,
                &format!(
                    "{}: job {job} of an earlier sweep is {}; this sweep takes it over",
                    self.p.label(index),
                    lv.state
                ),
            );
            *self.tries.entry(index).or_default() += 1;
            self.tasks.push(Task {
                index,
                task: lv.t.task,
                array: lv.array,
                job_id: lv.job_id,
                state: lv.state,
                submitted: Instant::now(),
                ours: None,
            });
        }
        for id in foreign {
            say(
                self.p,
                &format!("cancelling job {id} of an earlier sweep: it runs no config of this grid, or one this sweep runs already"),
            );
            client::scancel(&id);
        }
        Ok(())
    }
}
