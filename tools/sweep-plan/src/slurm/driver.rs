//! The control side's loop: submit the configs as one array (sbatch),
//! read every task's state each second (`scontrol show job -o`, which
//! keeps an ended job for MinJobAge, 300 s by default: read well before
//! it expires), collect each ended task, submit again what a node failure
//! or an outside cancel took (up to --retries, avoiding the node), cancel
//! what pends past --queue-timeout, and on Ctrl-C scancel every job of
//! the sweep and collect what they wrote. With --adaptive the configs
//! come from the search, a batch at a time once the last one ended
//! ([`search`]); with --schedule one more job runs the derived
//! schedule after them ([`schedule_step`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use sweepkit::diag;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::FailureKind;

use super::client::{self, Said};
use super::collect::{self, Collected};
use super::job::{self, End, JobLine};
use super::plan::{Plan, SCHEDULE_TASK};
use super::search::{self, Next};
use super::{schedule_step, script};
use crate::results;

/// One config's current job.
#[derive(Debug)]
struct Task {
    index: usize,
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

fn say(p: &Plan, msg: &str) {
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

    /// The configs to run: all, or (--resume) those without a result.
    pub fn pending(&self) -> Vec<usize> {
        crate::step::all(&self.p.grid, &self.lines, 0, self.p.resume, &self.p.results).pending
    }

    /// The arrays with a task still active, each once.
    fn arrays(&self) -> BTreeSet<String> {
        self.tasks.iter().map(|t| t.array.clone()).collect()
    }

    /// Submit `indices` as one array; a refusal records each config's
    /// failure with sbatch's own line and submits nothing more.
    fn submit(&mut self, indices: &[usize], avoid: &[String]) -> Result<(), Exit> {
        let args = script::sbatch_args(self.p, indices, avoid, &self.script);
        match client::run("sbatch", &args)? {
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
                for &index in indices {
                    *self.tries.entry(index).or_default() += 1;
                    self.tasks.push(Task {
                        index,
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
    fn poll(&mut self) -> Result<Vec<(usize, JobLine)>, Exit> {
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
                let l = lines.iter().find(|l| l.is_task(&a, t.index));
                let Some(l) = l else {
                    ended.push((t.index, client::purged(&a, t.index, t.job_id.as_deref())));
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
                    one.tasks = vec![t.index as u32];
                    ended.push((t.index, one));
                }
            }
        }
        Ok(ended)
    }

    /// Ctrl-C: every job of the sweep cancelled, once.
    fn interrupt(&mut self) {
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
    fn queue_timeouts(&mut self) {
        let Some(limit) = self.p.slurm.queue_timeout else {
            return;
        };
        let mut late = Vec::new();
        for t in &mut self.tasks {
            if t.state == "PENDING" && t.ours.is_none() && t.submitted.elapsed() > limit {
                t.ours = Some(FailureKind::QueueTimeout);
                late.push((t.index, format!("{}_{}", t.array, t.index)));
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

    /// After a task ended: its config's state in this run's records, and
    /// whether to submit it again (a transport end, tries left).
    fn after(&mut self, index: usize, c: &Collected, l: &JobLine) -> Option<usize> {
        let state = self.state_of(index);
        let tries = self.tries.get(&index).copied().unwrap_or(0);
        let label = self.p.label(index);
        // Pending past --queue-timeout would pend again: not now.
        let late = c.failure == Some(FailureKind::QueueTimeout);
        let again = state == results::State::Transport
            && !self.interrupted
            && !late
            && tries <= self.p.retries;
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
        again.then_some(index)
    }

    /// Task `index`'s state in this run's records: a config's, or the
    /// schedule step's (its records after the schedule record).
    fn state_of(&self, index: usize) -> results::State {
        match (index, &self.p.schedule) {
            (SCHEDULE_TASK, Some(server)) => crate::schedule::step(&self.lines, server, true).state,
            _ => {
                let pt = &self.p.grid.points[index - 1];
                results::state_of(self.lines_after(self.since), |cfg| pt.matches(cfg))
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
                let (c, recs) = collect::collect(self.p, &l, index, t.ours);
                self.append(&recs)?;
                again.extend(self.after(index, &c, &l));
            }
            self.resubmit(&again)?;
            if !self.tasks.is_empty() {
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        Ok(())
    }

    /// Submit `again`, grouped by the nodes each must avoid.
    fn resubmit(&mut self, again: &[usize]) -> Result<(), Exit> {
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

/// `sweep --slurm`: run plan `p` to its end; the exit status.
pub fn sweep(p: &Plan) -> Result<u8, Exit> {
    super::client::reachable()?;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::SeqCst));
    let mut d = Driver::new(p, stop)?;
    // The search decides its own configs, one batch at a time.
    let first = match p.search {
        Some(_) => Vec::new(),
        None => d.pending(),
    };
    let what = match p.search {
        Some(_) => "the adaptive search picks them".to_string(),
        None => format!("{} to run", first.len()),
    };
    say(
        p,
        &format!(
            "{} config(s) as Slurm jobs ({what}); results: {}",
            p.grid.points.len(),
            p.results
        ),
    );
    d.run(&first)?;
    let (done, code) = d.outcome();
    say(p, &done);
    if let Some((_, why)) = &d.stopped {
        diag::error("sweep", &anyhow!("{why}"));
    }
    Ok(code)
}
