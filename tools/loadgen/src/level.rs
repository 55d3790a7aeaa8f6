//! Running one load level: closed loop (N workers, each sends its next
//! request when the previous one ends) or open loop (a dispatcher sends on
//! a Poisson/gamma schedule, capped in flight). One code path executes
//! requests; the two differ only in who decides when to send. The
//! collector (calling thread) gathers samples and enforces the level's
//! deadline, Ctrl-C, and the give-up rule when the server stops accepting
//! connections, so a level ends in bounded time whatever the server does.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Gamma};

use crate::client::{execute, Body, ErrorKind, Sample, Target};

/// Small stacks: a request thread needs a few KB (an 8 KB read buffer and
/// serde's frames), and 1024 threads at the 8 MB default would reserve 8 GB.
const STACK: usize = 128 * 1024;
/// How long in-flight requests may finish after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);

/// A prepared request: body bytes and what it asks for.
pub struct Prepared {
    pub body: Body,
    pub asked_tokens: Option<u64>,
    pub input_tokens: u64,
}

/// Who decides when requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    Closed {
        concurrency: u32,
    },
    Open {
        rate: f64,
        burstiness: f64,
        max_inflight: u32,
    },
}

/// When a level stops issuing requests.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    pub count: Option<u64>,
    pub duration: Option<Duration>,
}

/// What a level run produced.
pub struct Outcome {
    pub samples: Vec<Sample>,
    pub started: Instant,
    /// Steady-state window (closed loop): in-flight first reached 0.95 x
    /// concurrency .. first worker found no more work.
    pub window: Option<(Instant, Instant)>,
    /// Requests still in flight when the level was cut short.
    pub abandoned: u64,
    /// Why the level stopped early, if it did.
    pub cut_short: Option<String>,
    /// The server refused connections until we gave up.
    pub server_gone: bool,
}

enum Msg {
    Sample(Box<Sample>),
    WorkerExit,
    /// Open loop: the dispatcher issued this many requests in all.
    Issued(u64),
}

struct Ctl {
    next: AtomicU64,
    limit: u64,
    stop_at: Option<Instant>,
    stop: AtomicBool,
    inflight: AtomicU64,
    threshold: u64,
    win_open: OnceLock<Instant>,
    win_close: OnceLock<Instant>,
}

/// The shared pieces a level needs.
pub struct Env<'a> {
    pub target: Arc<Target>,
    pub prepared: Arc<Vec<Prepared>>,
    /// Index of the first prompt to use (levels rotate through the pool).
    pub offset: u64,
    pub interrupted: &'a AtomicBool,
    pub deadline: Instant,
    pub seed: u64,
    /// Called once per finished request (progress bar).
    pub on_sample: &'a dyn Fn(),
}

fn new_sample(
    env_prepared: &[Prepared],
    offset: u64,
    i: u64,
    sched: Instant,
    slot: Instant,
) -> (Sample, Body) {
    let p = &env_prepared[((offset + i) % env_prepared.len() as u64) as usize];
    let mut s = Sample::new(i, sched, slot);
    s.asked_tokens = p.asked_tokens;
    s.prompt_tokens_hint = p.input_tokens;
    (s, p.body.clone())
}

/// Run one level (or a warmup) and collect its samples.
pub fn run(env: &Env, shape: Shape, bound: Bound) -> Outcome {
    let started = Instant::now();
    let (tx, rx) = mpsc::channel::<Msg>();
    let limit = bound.count.unwrap_or(u64::MAX);
    let stop_at = bound.duration.map(|d| started + d);
    let threshold = match shape {
        Shape::Closed { concurrency } => ((concurrency as f64) * 0.95).ceil().max(1.0) as u64,
        Shape::Open { .. } => u64::MAX,
    };
    let ctl = Arc::new(Ctl {
        next: AtomicU64::new(0),
        limit,
        stop_at,
        stop: AtomicBool::new(false),
        inflight: AtomicU64::new(0),
        threshold,
        win_open: OnceLock::new(),
        win_close: OnceLock::new(),
    });
    let mut workers = 0u64;
    let mut issued: Option<u64> = None;
    match shape {
        Shape::Closed { concurrency } => {
            let n = (concurrency as u64).min(limit);
            for _ in 0..n {
                if spawn_worker(env, &ctl, tx.clone()) {
                    workers += 1;
                }
            }
        }
        Shape::Open {
            rate,
            burstiness,
            max_inflight,
        } => {
            workers = 1;
            spawn_dispatcher(env, &ctl, tx.clone(), rate, burstiness, max_inflight);
        }
    }
    drop(tx);
    let mut out = Outcome {
        samples: Vec::new(),
        started,
        window: None,
        abandoned: 0,
        cut_short: None,
        server_gone: false,
    };
    collect(env, &ctl, &rx, shape, workers, &mut issued, &mut out);
    ctl.stop.store(true, SeqCst);
    out.abandoned = ctl.inflight.load(SeqCst);
    if let (Some(o), Some(c)) = (ctl.win_open.get(), ctl.win_close.get()) {
        if c > o {
            out.window = Some((*o, *c));
        }
    }
    out
}

fn collect(
    env: &Env,
    ctl: &Ctl,
    rx: &mpsc::Receiver<Msg>,
    shape: Shape,
    workers: u64,
    issued: &mut Option<u64>,
    out: &mut Outcome,
) {
    let concurrency = match shape {
        Shape::Closed { concurrency } => concurrency as u64,
        Shape::Open { max_inflight, .. } => max_inflight as u64,
    };
    // Give up after this many refused connections in a row with no success
    // in between: the server is gone, and a closed loop would spin.
    let give_up = (2 * concurrency).max(8);
    let mut refused_in_a_row = 0u64;
    let mut exited = 0u64;
    let mut grace_until: Option<Instant> = None;
    loop {
        let done_all = match issued {
            Some(n) => out.samples.len() as u64 >= *n && exited >= workers,
            None => exited >= workers,
        };
        if done_all {
            return;
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Sample(s)) => {
                if s.error == Some(ErrorKind::Connect) {
                    refused_in_a_row += 1;
                } else {
                    refused_in_a_row = 0;
                }
                out.samples.push(*s);
                (env.on_sample)();
                if refused_in_a_row >= give_up && !out.server_gone {
                    out.server_gone = true;
                    out.cut_short = Some(format!(
                        "the server refused {refused_in_a_row} connections in a row"
                    ));
                    ctl.stop.store(true, SeqCst);
                    grace_until.get_or_insert(Instant::now() + INTERRUPT_GRACE);
                }
            }
            Ok(Msg::WorkerExit) => exited += 1,
            Ok(Msg::Issued(n)) => {
                *issued = Some(n);
                exited += 1;
            }
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        if env.interrupted.load(SeqCst) && grace_until.is_none() {
            ctl.stop.store(true, SeqCst);
            out.cut_short = Some("interrupted".into());
            grace_until = Some(now + INTERRUPT_GRACE);
        }
        if grace_until.is_some_and(|g| now >= g) {
            return;
        }
        if now >= env.deadline {
            ctl.stop.store(true, SeqCst);
            out.cut_short
                .get_or_insert_with(|| "level timeout reached".into());
            return;
        }
    }
}

fn spawn_worker(env: &Env, ctl: &Arc<Ctl>, tx: mpsc::Sender<Msg>) -> bool {
    let ctl = ctl.clone();
    let target = env.target.clone();
    let prepared = env.prepared.clone();
    let offset = env.offset;
    std::thread::Builder::new()
        .stack_size(STACK)
        .name("loadgen-worker".into())
        .spawn(move || {
            worker(&ctl, &target, &prepared, offset, &tx);
            let _ = tx.send(Msg::WorkerExit);
        })
        .is_ok()
}

fn worker(ctl: &Ctl, target: &Target, prepared: &[Prepared], offset: u64, tx: &mpsc::Sender<Msg>) {
    loop {
        let now = Instant::now();
        if ctl.stop.load(Relaxed) {
            return;
        }
        if ctl.stop_at.is_some_and(|t| now >= t) {
            let _ = ctl.win_close.set(now);
            return;
        }
        let i = ctl.next.fetch_add(1, SeqCst);
        if i >= ctl.limit {
            let _ = ctl.win_close.set(now);
            return;
        }
        let (mut s, body) = new_sample(prepared, offset, i, now, now);
        if ctl.inflight.fetch_add(1, SeqCst) + 1 >= ctl.threshold {
            let _ = ctl.win_open.set(now);
        }
        execute(target, &body, &mut s);
        ctl.inflight.fetch_sub(1, SeqCst);
        if tx.send(Msg::Sample(Box::new(s))).is_err() {
            return;
        }
    }
}

/// Sleep until `t`, waking early when the level stops.
fn sleep_until(t: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

fn spawn_dispatcher(
    env: &Env,
    ctl: &Arc<Ctl>,
    tx: mpsc::Sender<Msg>,
    rate: f64,
    burstiness: f64,
    cap: u32,
) {
    let ctl = ctl.clone();
    let target = env.target.clone();
    let prepared = env.prepared.clone();
    let offset = env.offset;
    let seed = env.seed;
    let slots = Arc::new((Mutex::new(0u32), Condvar::new()));
    let spawn = std::thread::Builder::new()
        .name("loadgen-dispatch".into())
        .spawn(move || {
            let mut rng = StdRng::seed_from_u64(seed);
            let gaps = arrivals(rate, burstiness);
            let t0 = Instant::now();
            let mut at = t0;
            let mut n = 0u64;
            while n < ctl.limit {
                at += Duration::from_secs_f64(gaps.sample(&mut rng));
                if ctl.stop_at.is_some_and(|s| at >= s) || !sleep_until(at, &ctl.stop) {
                    break;
                }
                // Wait for a free in-flight slot: the wait is client queue time.
                {
                    let (m, cv) = &*slots;
                    let mut inflight = m.lock().unwrap_or_else(|e| e.into_inner());
                    while *inflight >= cap && !ctl.stop.load(Relaxed) {
                        inflight = cv
                            .wait_timeout(inflight, Duration::from_millis(50))
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    if ctl.stop.load(Relaxed) {
                        break;
                    }
                    *inflight += 1;
                }
                let slot = Instant::now();
                let (mut s, body) = new_sample(&prepared, offset, n, at, slot);
                n += 1;
                ctl.inflight.fetch_add(1, SeqCst);
                let (ctl2, target2, tx2, slots2) =
                    (ctl.clone(), target.clone(), tx.clone(), slots.clone());
                let spawned = std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn(move || {
                        execute(&target2, &body, &mut s);
                        ctl2.inflight.fetch_sub(1, SeqCst);
                        let (m, cv) = &*slots2;
                        *m.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                        cv.notify_one();
                        let _ = tx2.send(Msg::Sample(Box::new(s)));
                    });
                if let Err(e) = spawned {
                    ctl.inflight.fetch_sub(1, SeqCst);
                    *slots.0.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
                    let mut s = Sample::new(n - 1, at, slot);
                    s.fail(ErrorKind::Client, format!("cannot start a thread: {e}"));
                    let _ = tx.send(Msg::Sample(Box::new(s)));
                }
            }
            let _ = tx.send(Msg::Issued(n));
        });
    if spawn.is_err() {
        // Nothing was issued; the collector sees the channel close.
    }
}

/// Inter-arrival times: gamma with shape k = burstiness and mean 1/rate
/// (scale 1/(rate k)), vLLM's `--burstiness` definition; k = 1 is the
/// exponential distribution, i.e. Poisson arrivals.
pub fn arrivals(rate: f64, burstiness: f64) -> Gamma<f64> {
    let k = if burstiness > 0.0 { burstiness } else { 1.0 };
    Gamma::new(k, 1.0 / (rate * k)).unwrap_or_else(|_| Gamma::new(1.0, 1.0).expect("valid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_arrivals_have_the_asked_mean_rate() {
        for (rate, b) in [(10.0, 1.0), (50.0, 0.5), (5.0, 4.0)] {
            let g = arrivals(rate, b);
            let mut rng = StdRng::seed_from_u64(1);
            let n = 20_000;
            let total: f64 = (0..n).map(|_| g.sample(&mut rng)).sum();
            let measured = n as f64 / total;
            assert!(
                (measured / rate - 1.0).abs() < 0.05,
                "rate {rate} b {b}: {measured}"
            );
        }
    }
}
