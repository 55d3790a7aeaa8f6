//! The control side's loop: submit the configs as one array (sbatch),
//! read every task's state each second (`scontrol show job -o`, which
//! keeps an ended job for MinJobAge, 300 s by default: read well before
//! it expires), collect each ended task, submit again what a node failure
//! or an outside cancel took (up to --retries, avoiding the node), cancel
//! what pends past --queue-timeout, and on Ctrl-C scancel every job of
//! the sweep and collect what they wrote. With --adaptive the configs
//! come from the search, a batch at a time once the last one ended
//! ([`search`]); with --schedule one more job runs the derived
//! schedule after them ([`schedule_step`]). A resumed sweep first takes
//! over what an earlier one left in the queue ([`adopt`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use sweepkit::diag;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::FailureKind;

use super::collect::{self, Collected, TaskRef};
use super::job::JobLine;
use super::plan::{Plan, SCHEDULE_TASK};
use super::search::{self, Next};
use super::{schedule_step, script};
use crate::results;

mod queue;
mod takeover;

/// One config's current job.
#[derive(Debug)]
struct Task {
    /// The config's index in the grid (or [`SCHEDULE_TASK`]).
    index: usize,
    /// Its task id in `array`: the index, unless an earlier sweep with
    /// another grid submitted it ([`adopt`]).
    task: usize,
    array: String,
    /// The task's own job id, once it started (pending: none).
    job_id: Option<String>,
    state: String,
    submitted: Instant,
    /// Ended by sweep itself (interrupt, --queue-timeout).
    ours: Option<FailureKind>,
}

/// The loop's state.
pub struct Driver<'a> {
    p: &'a Plan,
    script: String,
    tasks: Vec<Task>,
    tries: BTreeMap<usize, usize>,
    avoid: BTreeMap<usize, Vec<String>>,
    /// The results file (its text and its records): read once at the
    /// start, then what this side appends (only it writes the file while
    /// the jobs run).
    text: String,
    lines: Vec<results::Line>,
    /// Text lines in the file at the start, and now.
    since: usize,
    end: usize,
    stop: Arc<AtomicBool>,
    interrupted: bool,
    rejected: bool,
    /// --adaptive: the values the finished search never tried.
    skipped: usize,
    /// --schedule: its job ended without a whole measurement.
    schedule_failed: bool,
    /// The search or the schedule step stopped the sweep: status, why.
    stopped: Option<(u8, String)>,
}

pub(super) fn say(p: &Plan, msg: &str) {
    if !p.quiet {
        diag::info("sweep", msg);
    }
}

/// A failure kind as records spell it (`node_fail`).
fn kind_word(k: FailureKind) -> String {
    serde_json::to_value(k)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

impl<'a> Driver<'a> {
    pub fn new(p: &'a Plan, stop: Arc<AtomicBool>) -> Result<Driver<'a>, Exit> {
        std::fs::create_dir_all(&p.dir)
            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{}: {e}", p.dir)))?;
        let script = format!("{}/sweep.sbatch", p.dir);
        std::fs::write(&script, script::batch(p, None))
            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{script}: {e}")))?;
        let text = std::fs::read_to_string(&p.results).unwrap_or_default();
        let since = text.lines().count();
        Ok(Driver {
            p,
            script,
            tasks: Vec::new(),
            tries: BTreeMap::new(),
            avoid: BTreeMap::new(),
            lines: results::read(&text),
            text,
            since,
            end: since,
            stop,
            interrupted: false,
            rejected: false,
            skipped: 0,
            schedule_failed: false,
            stopped: None,
        })
    }

    /// The records from line `from` on.
    fn lines_after(&self, from: usize) -> &[results::Line] {
        let at = self.lines.partition_point(|l| l.line <= from);
        &self.lines[at..]
    }

    /// Append `recs` to the results file and keep them in [`Self::lines`].
    fn append(&mut self, recs: &[serde_json::Value]) -> Result<(), Exit> {
        let text = results::append_records(&self.p.results, recs)?;
        self.keep(&text);
        Ok(())
    }

    /// Append `text` (whole records, as a tool printed them) to the
    /// results file and keep them in [`Self::lines`].
    fn append_text(&mut self, text: &str) -> Result<(), Exit> {
        results::append(&self.p.results, text)?;
        self.keep(text);
        Ok(())
    }

    /// Keep `text`, just appended, and its records.
    fn keep(&mut self, text: &str) {
        self.text.push_str(text);
        let end = self.end;
        self.lines
            .extend(results::read(text).into_iter().map(|mut l| {
                l.line += end;
                l
            }));
        self.end += text.lines().count();
    }

    /// The configs to run: all, or (--resume) those without a result and
    /// without a job taken over from an earlier sweep.
    pub fn pending(&self) -> Vec<usize> {
        let all = crate::step::all(&self.p.grid, &self.lines, 0, self.p.resume, &self.p.results);
        let live: BTreeSet<usize> = self.tasks.iter().map(|t| t.index).collect();
        all.pending
            .into_iter()
            .filter(|i| !live.contains(i))
            .collect()
    }

    /// sbatch refused the first submission: no job of this run went to
    /// the queue (submitted or taken over).
    pub fn refused_at_once(&self) -> bool {
        self.rejected && self.tries.is_empty()
    }

    /// Why the search or the schedule step stopped the sweep, if it did.
    pub fn stopped(&self) -> Option<&(u8, String)> {
        self.stopped.as_ref()
    }

    /// The arrays with a task still active, each once.
    fn arrays(&self) -> BTreeSet<String> {
        self.tasks.iter().map(|t| t.array.clone()).collect()
    }

    /// Whether a task that ended with records `recs` runs again: its
    /// config's state with them would be a transport end, with tries left.
    fn again(&self, index: usize, c: &Collected, recs: &[serde_json::Value]) -> bool {
        let text: String = recs.iter().map(|r| format!("{r}\n")).collect();
        let tries = self.tries.get(&index).copied().unwrap_or(0);
        // Pending past --queue-timeout would pend again: not now.
        let late = c.failure == Some(FailureKind::QueueTimeout);
        self.state_in(index, &results::read(&text)) == results::State::Transport
            && !self.interrupted
            && !late
            && tries <= self.p.retries
    }

    /// After a task ended (its records appended): say so, and note a
    /// failed node for the next try (`again`).
    fn after(&mut self, index: usize, c: &Collected, l: &JobLine, again: bool) {
        let state = self.state_of(index);
        let label = self.p.label(index);
        if again && c.failure == Some(FailureKind::NodeFail) {
            self.avoid.entry(index).or_default().extend(c.node.clone());
        }
        let what = c.failure.map(kind_word).unwrap_or_else(|| state.word());
        let more = if again { "; submitting it again" } else { "" };
        // Slurm's own word beside ours, and where it was read.
        say(
            self.p,
            &format!(
                "{label}: {what} (job {} {} per {}), {} record(s){more}",
                l.job_id, l.state, l.source, c.records
            ),
        );
    }

    /// Task `index`'s state in this run's records: a config's, or the
    /// schedule step's (its records after the schedule record).
    fn state_of(&self, index: usize) -> results::State {
        self.state_in(index, &[])
    }

    /// Task `index`'s state were `more` records appended.
    fn state_in(&self, index: usize, more: &[results::Line]) -> results::State {
        let with = |lines: &[results::Line]| [lines, more].concat();
        match (index, &self.p.schedule) {
            (SCHEDULE_TASK, Some(server)) => {
                crate::schedule::step(&with(&self.lines), server, true).state
            }
            _ => {
                let pt = &self.p.grid.points[index - 1];
                results::state_of(&with(self.lines_after(self.since)), |cfg| pt.matches(cfg))
            }
        }
    }

    /// Ctrl-C, sbatch's refusal or a stop: nothing more is submitted.
    fn halted(&self) -> bool {
        self.interrupted || self.rejected || self.stopped.is_some()
    }

    /// The sweep: `first` (the grid's configs), or the search's configs
    /// batch by batch, then the schedule step.
    pub fn run(&mut self, first: &[usize]) -> Result<(), Exit> {
        let started = std::time::SystemTime::now();
        let mut batch = first.to_vec();
        loop {
            if !batch.is_empty() {
                self.submit(&batch, &[])?;
            }
            self.wait()?;
            if self.halted() || self.p.search.is_none() {
                break;
            }
            let p = self.p;
            let mut say_it = |n: &str| say(p, n);
            let file = (self.text.as_str(), self.lines.as_slice());
            batch = match search::next(p, &self.tries, file, started, &mut say_it)? {
                Next::Run(b) => b,
                Next::Done(skipped, n) => {
                    self.append(&skipped)?;
                    self.skipped = n;
                    break;
                }
                Next::Fail(code, why) => {
                    self.stopped = Some((code, why));
                    break;
                }
            };
        }
        if !self.halted() {
            self.schedule()?;
        }
        Ok(())
    }

    /// --schedule's step after the configs: derive the schedule (its
    /// record appended), then run it as one more job.
    fn schedule(&mut self) -> Result<(), Exit> {
        let Some(server) = self.p.schedule.clone() else {
            return Ok(());
        };
        let mut st = schedule_step::step(self.p, &server, &self.lines, None)?;
        if st.action == "derive" {
            st.notes.iter().for_each(|n| say(self.p, n));
            let (rc, recs) = schedule_step::derive(self.p, &server)?;
            if rc == exit::OK {
                self.append_text(&recs)?;
            }
            st = schedule_step::step(self.p, &server, &self.lines, Some(rc))?;
        }
        st.notes.iter().for_each(|n| say(self.p, n));
        match st.action {
            "run" => {
                let w = crate::grid::PointWords {
                    swap: st.to_swap,
                    ready: st.to_ready,
                    load: st.to_load,
                };
                // sbatch reads the script when it submits: the jobs
                // submitted before keep the one they got.
                std::fs::write(&self.script, script::batch(self.p, Some(&w)))
                    .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{}: {e}", self.script)))?;
                say(self.p, &st.label);
                self.submit(&[SCHEDULE_TASK], &[])?;
                self.wait()?;
                self.schedule_failed = self.state_of(SCHEDULE_TASK) != results::State::Complete;
            }
            "fail" => self.stopped = Some((st.exit, st.error)),
            _ => {}
        }
        Ok(())
    }

    /// The loop, till no job of the sweep is left.
    fn wait(&mut self) -> Result<(), Exit> {
        let mut interrupt_started = None;
        while !self.tasks.is_empty() {
            if self.stop.load(Ordering::SeqCst) && !self.interrupted {
                self.interrupt();
                interrupt_started = Some(Instant::now());
            }
            if interrupt_started.is_some_and(|t| t.elapsed() > Duration::from_secs(120)) {
                diag::warning(
                    "sweep",
                    format!(
                        "jobs still ending 2 minutes after scancel; their records stay in {}",
                        self.p.dir
                    ),
                );
                break;
            }
            self.queue_timeouts();
            let mut again = Vec::new();
            for (index, l) in self.poll()? {
                let Some(pos) = self.tasks.iter().position(|t| t.index == index) else {
                    continue;
                };
                let t = self.tasks.remove(pos);
                let tr = TaskRef {
                    task: t.task,
                    config: self.p.config(index),
                };
                let (c, mut recs) = collect::collect(self.p, &l, &tr, t.ours);
                let runs_again = self.again(index, &c, &recs);
                if runs_again {
                    let kept = format!("{}/job-{}/records.jsonl", self.p.dir, l.job_id);
                    recs = collect::set_aside(recs, &kept);
                    again.push(index);
                }
                self.append(&recs)?;
                self.after(index, &c, &l, runs_again);
            }
            self.resubmit(&again)?;
            if !self.tasks.is_empty() {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        Ok(())
    }

    /// The sweep's end: the done line and the exit status.
    pub fn outcome(&self) -> (String, u8) {
        // --resume (implied by --adaptive): the results from before count.
        let whole = self.p.resume || self.p.search.is_some();
        let from = if whole { 0 } else { self.since };
        let t = crate::fleet::tally(&self.p.grid, self.lines_after(from));
        // A config Slurm lost past --retries has no result (not a failure
        // of the config); a value the search skipped needs none.
        let measured = t.measured;
        let failed = t.failed + usize::from(self.schedule_failed);
        let missing = t.missing.saturating_sub(self.skipped) + t.transport;
        let mut done =
            format!("done: {measured} measured, {failed} failed, {missing} without a result");
        if self.p.search.is_some() {
            done.push_str(&format!(", {} skipped", self.skipped));
        }
        let code = if self.interrupted {
            exit::INTERRUPTED
        } else if self.rejected {
            exit::SUBMIT_REJECTED
        } else if let Some((code, _)) = &self.stopped {
            *code
        } else if self.p.search.is_some() && missing == 0 {
            // As the search ends without Slurm: a skipped value is no
            // failure.
            crate::verdict::tally(measured, failed, self.skipped).exit
        } else {
            crate::fleet::grid_exit(measured, failed, missing, 0)
        };
        (done, code)
    }
}
