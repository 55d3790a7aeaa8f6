//! The control side's loop: submit the configs as one array (sbatch),
//! read every task's state each second (`scontrol show job -o`, which
//! keeps an ended job for MinJobAge, 300 s by default: read well before
//! it expires), collect each ended task, submit again what a node failure
//! or an outside cancel took (up to --retries, avoiding the node), cancel
//! what pends past --queue-timeout, and on Ctrl-C scancel every job of
//! the sweep and collect what they wrote.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::records::FailureKind;
use sweepkit::report::Exit;

use super::collect::{self, Collected};
use super::job::{self, End, JobLine};
use super::plan::Plan;
use super::script;
use crate::results::{self, State};

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
    since: usize,
    stop: Arc<AtomicBool>,
    interrupted: bool,
    rejected: bool,
}

fn say(p: &Plan, msg: &str) {
    if !p.quiet {
        eprintln!("sweep: {msg}");
    }
}

fn no_slurm(what: &str, e: impl std::fmt::Display) -> Exit {
    Exit::new(
        exit::NO_SLURM,
        anyhow!("{what}: {e} (sweep --slurm needs Slurm's client commands: apt-get install slurm-client, and SLURM_CONF or /etc/slurm/slurm.conf naming the cluster)"),
    )
}

/// Run `prog args`: Ok(stdout) or Err(stderr's lines) when it fails.
fn client(prog: &str, args: &[String]) -> Result<Result<String, String>, Exit> {
    let o = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| no_slurm(prog, e))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).trim().to_string();
    Ok(match o.status.success() {
        true => Ok(text(&o.stdout)),
        false => Err(text(&o.stderr)),
    })
}

impl<'a> Driver<'a> {
    pub fn new(p: &'a Plan, stop: Arc<AtomicBool>) -> Result<Driver<'a>, Exit> {
        std::fs::create_dir_all(&p.dir)
            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{}: {e}", p.dir)))?;
        let script = format!("{}/sweep.sbatch", p.dir);
        std::fs::write(&script, script::batch(p))
            .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{script}: {e}")))?;
        let since = std::fs::read_to_string(&p.results)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        Ok(Driver {
            p,
            script,
            tasks: Vec::new(),
            tries: BTreeMap::new(),
            avoid: BTreeMap::new(),
            since,
            stop,
            interrupted: false,
            rejected: false,
        })
    }

    fn lines(&self, from: usize) -> Vec<results::Line> {
        let text = std::fs::read_to_string(&self.p.results).unwrap_or_default();
        results::read(&text)
            .into_iter()
            .filter(|l| l.line > from)
            .collect()
    }

    /// The configs to run: all, or (--resume) those without a result.
    pub fn pending(&self) -> Vec<usize> {
        let lines = self.lines(0);
        crate::step::all(&self.p.grid, &lines, 0, self.p.resume, &self.p.results).pending
    }

    /// Submit `indices` as one array; a refusal records each config's
    /// failure with sbatch's own line and submits nothing more.
    fn submit(&mut self, indices: &[usize], avoid: &[String]) -> Result<(), Exit> {
        let args = script::sbatch_args(self.p, indices, avoid, &self.script);
        match client("sbatch", &args)? {
            Ok(out) => {
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
            Err(line) => {
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
                        self.p.grid.points[index - 1].config(),
                        sweepkit::records::Stage::Swap,
                        FailureKind::SubmitRejected,
                        line.clone(),
                        None,
                    );
                    f.log_tail = vec![line.clone()];
                    recs.push(collect::line_of(f)?);
                }
                collect::append(&self.p.results, &recs)?;
                eprintln!("sweep: error: sbatch refused the job: {line}; nothing else was submitted (fix the Slurm options, then run again with --resume)");
                Ok(())
            }
        }
    }

    /// Read every active array's tasks from scontrol.
    fn poll(&mut self) -> Result<Vec<(usize, JobLine)>, Exit> {
        let mut arrays: Vec<String> = self.tasks.iter().map(|t| t.array.clone()).collect();
        arrays.sort();
        arrays.dedup();
        let mut ended = Vec::new();
        for a in arrays {
            let show = ["show".into(), "job".into(), "-o".into(), a.clone()];
            let out = match client("scontrol", &show)? {
                Ok(o) => o,
                // Expired (MinJobAge) before it was read: it ended unseen.
                Err(e) if e.contains("Invalid job id") => String::new(),
                // slurmctld busy or restarting: ask again next round.
                Err(_) => continue,
            };
            let lines = job::parse(&out);
            for t in self.tasks.iter_mut().filter(|t| t.array == a) {
                let l = lines.iter().find(|l| {
                    l.tasks.contains(&(t.index as u32)) || (l.tasks.is_empty() && l.job_id == a)
                });
                let Some(l) = l else {
                    let lost = JobLine {
                        job_id: t.job_id.clone().unwrap_or(a.clone()),
                        array_job_id: Some(a.clone()),
                        state: "CANCELLED".into(),
                        reason: Some("the job's record expired before sweep read its end".into()),
                        ..JobLine::default()
                    };
                    ended.push((t.index, lost));
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

    fn scancel(&self, id: &str) {
        let _ = Command::new("scancel")
            .arg(id)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    /// Ctrl-C: every job of the sweep cancelled, once.
    fn interrupt(&mut self) {
        self.interrupted = true;
        let mut arrays: Vec<String> = self.tasks.iter().map(|t| t.array.clone()).collect();
        arrays.dedup();
        say(
            self.p,
            "interrupted; cancelling every job of the sweep (scancel)",
        );
        for a in &arrays {
            self.scancel(a);
        }
        for t in &mut self.tasks {
            t.ours.get_or_insert(FailureKind::Interrupted);
        }
    }

    /// Cancel tasks pending past --queue-timeout.
    fn queue_timeouts(&mut self) {
        let Some(limit) = self.p.queue_timeout else {
            return;
        };
        let late: Vec<usize> = self
            .tasks
            .iter()
            .filter(|t| t.state == "PENDING" && t.ours.is_none() && t.submitted.elapsed() > limit)
            .map(|t| t.index)
            .collect();
        let mut ids = Vec::new();
        for t in self.tasks.iter_mut().filter(|t| late.contains(&t.index)) {
            t.ours = Some(FailureKind::QueueTimeout);
            ids.push((t.index, format!("{}_{}", t.array, t.index)));
        }
        for (index, id) in ids {
            say(
                self.p,
                &format!(
                    "config {index}: still pending after --queue-timeout; cancelling job {id}"
                ),
            );
            self.scancel(&id);
        }
    }

    /// After a task ended: its config's state in this run's records, and
    /// whether to submit it again (a transport end, tries left).
    fn after(&mut self, index: usize, c: &Collected) -> Option<usize> {
        let pt = &self.p.grid.points[index - 1];
        let state = results::state_of(&self.lines(self.since), |cfg| pt.matches(cfg));
        let tries = self.tries.get(&index).copied().unwrap_or(0);
        let label = pt.label();
        // Pending past --queue-timeout would pend again: not now.
        let late = c.failure == Some(FailureKind::QueueTimeout);
        let again =
            state == State::Transport && !self.interrupted && !late && tries <= self.p.retries;
        if again && c.failure == Some(FailureKind::NodeFail) {
            self.avoid.entry(index).or_default().extend(c.node.clone());
        }
        let what = c
            .failure
            .map(|k| format!("{k:?}"))
            .unwrap_or_else(|| state.word());
        let more = if again { "; submitting it again" } else { "" };
        say(
            self.p,
            &format!("{label}: {what}, {} record(s){more}", c.records),
        );
        again.then_some(index)
    }

    /// The loop, till no job of the sweep is left.
    pub fn run(&mut self, first: &[usize]) -> Result<(), Exit> {
        if !first.is_empty() {
            self.submit(first, &[])?;
        }
        let mut interrupt_started = None;
        while !self.tasks.is_empty() {
            if self.stop.load(Ordering::SeqCst) && !self.interrupted {
                self.interrupt();
                interrupt_started = Some(Instant::now());
            }
            if interrupt_started.is_some_and(|t| t.elapsed() > Duration::from_secs(120)) {
                eprintln!("sweep: warning: jobs still ending 2 minutes after scancel; their records stay in {}", self.p.dir);
                break;
            }
            self.queue_timeouts();
            let mut again = Vec::new();
            for (index, l) in self.poll()? {
                let Some(pos) = self.tasks.iter().position(|t| t.index == index) else {
                    continue;
                };
                let t = self.tasks.remove(pos);
                let c = collect::collect(self.p, &l, index, t.ours)?;
                again.extend(self.after(index, &c));
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
        // --resume: the results from before count too.
        let lines = self.lines(if self.p.resume { 0 } else { self.since });
        let (mut measured, mut failed, mut missing) = (0, 0, 0);
        for pt in &self.p.grid.points {
            match results::state_of(&lines, |c| pt.matches(c)) {
                State::Complete => measured += 1,
                State::Failed => failed += 1,
                _ => missing += 1,
            }
        }
        let done =
            format!("done: {measured} measured, {failed} failed, {missing} without a result");
        let code = if self.interrupted {
            exit::INTERRUPTED
        } else if self.rejected {
            exit::SUBMIT_REJECTED
        } else if missing > 0 {
            exit::NO_HOST_LEFT
        } else if failed > 0 && measured == 0 {
            exit::ALL_CONFIGS_FAILED
        } else if failed > 0 {
            exit::SOME_CONFIGS_FAILED
        } else {
            exit::OK
        };
        (done, code)
    }
}

/// `sweep --slurm`: run plan `p` to its end; the exit status.
pub fn sweep(p: &Plan) -> Result<u8, Exit> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::SeqCst));
    let mut d = Driver::new(p, stop)?;
    let first = d.pending();
    say(
        p,
        &format!(
            "{} config(s) as Slurm jobs ({} to run); results: {}",
            p.grid.points.len(),
            first.len(),
            p.results
        ),
    );
    d.run(&first)?;
    let (done, code) = d.outcome();
    say(p, &done);
    Ok(code)
}
