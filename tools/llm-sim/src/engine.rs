//! The batching engine: one thread plays the GPU. It admits queued requests
//! while KV fits, sleeps one modelled step (a plain thread sleep is precise
//! to well under a millisecond, unlike tokio's 1 ms timer wheel), then hands
//! each running request its tokens.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;

use crate::draft_depth::DraftDepth;
use crate::metrics::Metrics;
use crate::model::{Chunk, Gen, Model};

/// A request handed to the engine.
pub struct Job {
    pub prompt_tokens: u64,
    pub kv: u64,
    pub gen: Gen,
    /// Where the step results go; closed when the client went away.
    pub tx: UnboundedSender<Chunk>,
}

/// Handle to the engine thread.
#[derive(Clone)]
pub struct Engine {
    tx: Sender<Job>,
}

impl Engine {
    pub fn start(
        model: Model,
        max_running: usize,
        metrics: Arc<Metrics>,
        depth: DraftDepth,
    ) -> Engine {
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("llm-sim-engine".into())
            .spawn(move || run(rx, model, max_running, metrics, depth))
            .expect("spawn engine thread");
        Engine { tx }
    }

    pub fn submit(&self, job: Job) {
        let _ = self.tx.send(job);
    }
}

fn run(
    rx: Receiver<Job>,
    model: Model,
    max_running: usize,
    metrics: Arc<Metrics>,
    mut depth: DraftDepth,
) {
    let mut queue: VecDeque<Job> = VecDeque::new();
    let mut running: Vec<Job> = Vec::new();
    let mut kv_used = 0u64;
    let mut last_end = Instant::now();
    tight_timer_slack();
    loop {
        let continuing = !running.is_empty();
        if running.is_empty() && queue.is_empty() {
            match rx.recv() {
                Ok(job) => queue.push_back(job),
                Err(_) => return,
            }
        }
        while let Ok(job) = rx.try_recv() {
            queue.push_back(job);
        }
        // First come, first served: stop at the first request that does not
        // fit, as SGLang's default scheduler does.
        let mut prefill = 0;
        while let Some(job) = queue.front() {
            let fits = kv_used + job.kv <= model.kv_capacity || running.is_empty();
            if running.len() >= max_running || !fits {
                break;
            }
            let job = queue.pop_front().unwrap();
            kv_used += job.kv;
            prefill += job.prompt_tokens;
            running.push(job);
        }
        metrics.running.store(running.len() as u64, Relaxed);
        metrics.waiting.store(queue.len() as u64, Relaxed);
        metrics.kv_used.store(kv_used, Relaxed);

        // A running batch steps back to back on an absolute timeline, so
        // sleep overshoot does not accumulate; an idle GPU starts now.
        let now = Instant::now();
        // The depth of this step, by the number of requests it runs.
        let batch = running.len();
        let steps = depth.steps(batch);
        let dur = model.step_time_at(batch, prefill, steps);
        let start = if continuing && now < last_end + dur {
            last_end
        } else {
            now
        };
        let end = start + dur;
        sleep_until(end);
        last_end = end;

        let mut accepted = Vec::with_capacity(batch);
        running.retain_mut(|job| {
            // A request's first step is its prefill: no verify to report.
            let decoding = job.gen.generated > 0;
            let chunk = job.gen.step_at(&model, steps);
            if decoding {
                accepted.push(chunk.accepted);
            }
            let done = chunk.finish.is_some();
            let gone = job.tx.send(chunk).is_err();
            if done || gone {
                kv_used -= job.kv;
            }
            !(done || gone)
        });
        depth.observe(batch, &accepted);
        metrics.running.store(running.len() as u64, Relaxed);
        metrics.kv_used.store(kv_used, Relaxed);
    }
}

/// Ask Linux for 1 ns timer slack on this thread (default 50 us), so
/// modelled steps of a few milliseconds keep their length.
pub fn tight_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an integer and touches no memory.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Sleep until `t` with the OS timer (sub-millisecond precision).
pub fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}
