//! Running one load level: closed loop (N workers, each sends its next
//! request when the previous one ends, on a connection of its own) or open
//! loop (a dispatcher sends on a Poisson/gamma schedule, capped in flight).
//! One code path executes requests; the two differ only in who decides
//! when to send. Everything runs as tasks on one event loop; the collector
//! gathers samples and enforces the level's deadline, Ctrl-C, and the
//! give-up rule when the server stops accepting connections, so a level
//! ends in bounded time whatever the server does. Tasks still running when
//! the level ends are cancelled (their requests count as abandoned).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::Gamma;
use tokio::sync::mpsc::{self, UnboundedReceiver, UnboundedSender};
use tokio::task::JoinSet;

use crate::client::{execute, Body, ErrorKind, Sample, Target};

mod dispatch;
mod send_clock;
mod sessions;
use dispatch::{dispatch, When};

/// How long in-flight requests may finish after Ctrl-C.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// How often the collector looks at Ctrl-C and the level deadline.
const TICK: Duration = Duration::from_millis(50);

pub use crate::body::Prepared;

/// Cancel this share of requests this long after their send: a workload
/// of users who give up (the stream is dropped, the server sees the
/// connection close).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cancel {
    pub rate: f64,
    pub after: Duration,
    pub seed: u64,
}

impl Cancel {
    /// Is request `i` one to cancel? A hash of the seed and the index
    /// (SplitMix64), so the same requests are cancelled on every run.
    fn picks(&self, i: u64) -> bool {
        use sweepkit::mix::{mix64, GOLDEN};
        let z = mix64(
            self.seed
                .wrapping_add(i.wrapping_mul(GOLDEN))
                .wrapping_add(0x63616e63),
        );
        ((z >> 11) as f64 / (1u64 << 53) as f64) < self.rate
    }
}

/// Execute one request, cancelled after `cancel.after` when `cancel`
/// picks it: the request future and its connection are dropped, and the
/// sample says cancelled (not a failure: no tokens, no error).
pub(crate) async fn execute_or_cancel(
    target: &Target,
    conn: &mut Option<crate::client::Conn>,
    body: Body,
    s: &mut Sample,
    cancel: Option<Cancel>,
) {
    let Some(c) = cancel.filter(|c| c.picks(s.index)) else {
        return execute(target, conn, body, s).await;
    };
    let run = tokio::time::timeout(c.after, execute(target, conn, body, s)).await;
    if run.is_err() {
        s.done = Instant::now();
        s.cancelled = true;
    }
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
    /// `--trace`: each request at its recorded time over `speed`.
    Trace {
        speed: f64,
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
    /// What ended the level.
    pub ended: Ended,
}

/// What ended a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Its bound: the request count was sent or the duration was over.
    Bound,
    /// `on_sample` said it had seen enough (`--until-stable`).
    Enough,
    Interrupted,
    /// `--level-timeout`.
    Deadline,
    /// The server refused connections until we gave up.
    ServerGone,
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
    pub rt: &'a tokio::runtime::Runtime,
    pub target: Arc<Target>,
    pub prepared: Arc<Vec<Prepared>>,
    /// Index of the first prompt to use (levels rotate through the pool).
    pub offset: u64,
    /// `--trace`: each prompt's send time, ms on the trace's clock after
    /// the first (a trace level sends prompt i at `trace_ms[i] / speed`).
    pub trace_ms: Option<Arc<Vec<f64>>>,
    /// `--cancel-rate` and `--cancel-after` (None for warm-up requests).
    pub cancel: Option<Cancel>,
    /// `--sessions`: the level runs these sessions instead of `prepared`.
    pub sessions: Option<Arc<crate::session_run::SessionRun>>,
    pub interrupted: &'a AtomicBool,
    pub deadline: Instant,
    pub seed: u64,
    /// Called once per finished request with the start of the steady
    /// state (None while ramping up): progress, and `--until-stable`,
    /// which returns true once it has seen enough (the level then ends).
    pub on_sample: &'a dyn Fn(&Sample, Option<Instant>) -> bool,
}

fn new_sample(
    env_prepared: &[Prepared],
    offset: u64,
    i: u64,
    sched: Instant,
    slot: Instant,
) -> (Sample, Body) {
    let p = &env_prepared[((offset + i) % env_prepared.len() as u64) as usize];
    (sample_for(p, i, sched, slot), p.body.clone())
}

/// Request `i`'s sample for the prepared request `p`, scheduled at
/// `sched` in `slot`.
pub(crate) fn sample_for(p: &Prepared, i: u64, sched: Instant, slot: Instant) -> Sample {
    let mut s = Sample::new(i, sched, slot);
    s.asked_tokens = p.asked_tokens;
    // One mark per chunk, at most one chunk per token: no regrowth for
    // short answers; long ones grow as they come (a request that stops
    // early must not hold a reservation for max_tokens until the level ends).
    s.chunks
        .reserve(p.asked_tokens.unwrap_or(16).clamp(1, 256) as usize);
    s.prompt_tokens_hint = p.input_tokens;
    s
}

/// Run one level (or a warmup) and collect its samples.
pub fn run(env: &Env, shape: Shape, bound: Bound) -> Outcome {
    env.rt.block_on(run_async(env, shape, bound))
}

async fn run_async(env: &Env<'_>, shape: Shape, bound: Bound) -> Outcome {
    let started = Instant::now();
    let (tx, mut rx) = mpsc::unbounded_channel::<Msg>();
    let limit = bound.count.unwrap_or(u64::MAX);
    let stop_at = bound.duration.map(|d| started + d);
    let threshold = match shape {
        Shape::Closed { concurrency } => ((concurrency as f64) * 0.95).ceil().max(1.0) as u64,
        Shape::Open { .. } | Shape::Trace { .. } => u64::MAX,
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
    // Dropped when this function returns: cancels whatever still runs.
    let mut tasks = JoinSet::new();
    let workers = spawn_senders(env, &ctl, shape, &tx, &mut tasks);
    drop(tx);
    let mut out = Outcome {
        samples: Vec::new(),
        started,
        window: None,
        abandoned: 0,
        cut_short: None,
        server_gone: false,
        ended: Ended::Bound,
    };
    collect(env, &ctl, &mut rx, shape, workers, &mut out).await;
    ctl.stop.store(true, SeqCst);
    out.abandoned = ctl.inflight.load(SeqCst);
    if let (Some(o), Some(c)) = (ctl.win_open.get(), ctl.win_close.get()) {
        if c > o {
            out.window = Some((*o, *c));
        }
    }
    tasks.abort_all();
    out
}

/// Start who sends: one worker per closed-loop slot, or the open loop's
/// dispatcher. Returns how many will say they exited.
fn spawn_senders(
    env: &Env<'_>,
    ctl: &Arc<Ctl>,
    shape: Shape,
    tx: &UnboundedSender<Msg>,
    tasks: &mut JoinSet<()>,
) -> u64 {
    if let Some(run) = &env.sessions {
        return sessions::spawn(env, ctl, shape, tx, tasks, run);
    }
    match shape {
        Shape::Closed { concurrency } => {
            let n = (concurrency as u64).min(ctl.limit);
            for _ in 0..n {
                let (ctl, target, prepared, tx) = (
                    ctl.clone(),
                    env.target.clone(),
                    env.prepared.clone(),
                    tx.clone(),
                );
                let at = (env.offset, env.cancel);
                tasks.spawn(async move {
                    worker(&ctl, &target, &prepared, at, &tx).await;
                    let _ = tx.send(Msg::WorkerExit);
                });
            }
            n
        }
        Shape::Open {
            rate,
            burstiness,
            max_inflight,
        } => {
            let when = When::Arrivals {
                gaps: arrivals(rate, burstiness),
                rng: Box::new(StdRng::seed_from_u64(env.seed)),
            };
            tasks.spawn(dispatch(env, ctl, tx, when, max_inflight).run());
            1
        }
        Shape::Trace {
            speed,
            max_inflight,
        } => {
            let times = env.trace_ms.clone().unwrap_or_default();
            let when = When::Trace { times, speed };
            tasks.spawn(dispatch(env, ctl, tx, when, max_inflight).run());
            1
        }
    }
}

/// The collector's bookkeeping between messages.
struct Collector {
    /// Give up after this many refused connections in a row with no
    /// success in between: the server is gone, and a closed loop would spin.
    give_up: u64,
    refused_in_a_row: u64,
    exited: u64,
    workers: u64,
    /// Open loop: how many requests the dispatcher issued in all.
    issued: Option<u64>,
    grace_until: Option<Instant>,
}

async fn collect(
    env: &Env<'_>,
    ctl: &Ctl,
    rx: &mut UnboundedReceiver<Msg>,
    shape: Shape,
    workers: u64,
    out: &mut Outcome,
) {
    let concurrency = match shape {
        Shape::Closed { concurrency } => concurrency as u64,
        Shape::Open { max_inflight, .. } | Shape::Trace { max_inflight, .. } => max_inflight as u64,
    };
    let mut c = Collector {
        give_up: (2 * concurrency).max(8),
        refused_in_a_row: 0,
        exited: 0,
        workers,
        issued: None,
        grace_until: None,
    };
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !c.all_done(out) {
        tokio::select! {
            biased;
            m = rx.recv() => match m {
                Some(Msg::Sample(s)) => c.sample(env, ctl, shape, *s, out),
                Some(Msg::WorkerExit) => c.exited += 1,
                Some(Msg::Issued(n)) => {
                    c.issued = Some(n);
                    c.exited += 1;
                }
                None => return,
            },
            _ = tick.tick() => {}
        }
        if c.time_is_up(env, ctl, out) {
            return;
        }
    }
}

impl Collector {
    /// Every worker has exited (and every issued request came back).
    fn all_done(&self, out: &Outcome) -> bool {
        match self.issued {
            Some(n) => out.samples.len() as u64 >= n && self.exited >= self.workers,
            None => self.exited >= self.workers,
        }
    }

    fn sample(&mut self, env: &Env<'_>, ctl: &Ctl, shape: Shape, s: Sample, out: &mut Outcome) {
        if s.error == Some(ErrorKind::Connect) {
            self.refused_in_a_row += 1;
        } else {
            self.refused_in_a_row = 0;
        }
        out.samples.push(s);
        offer(env, ctl, shape, out);
        if self.refused_in_a_row >= self.give_up && !out.server_gone {
            out.server_gone = true;
            out.ended = Ended::ServerGone;
            out.cut_short = Some(format!(
                "the server refused {} connections in a row",
                self.refused_in_a_row
            ));
            ctl.stop.store(true, SeqCst);
            self.grace_until
                .get_or_insert(Instant::now() + INTERRUPT_GRACE);
        }
    }

    /// Ctrl-C (stop sending, then a grace period) and the level deadline.
    fn time_is_up(&mut self, env: &Env<'_>, ctl: &Ctl, out: &mut Outcome) -> bool {
        let now = Instant::now();
        if env.interrupted.load(SeqCst) && self.grace_until.is_none() {
            ctl.stop.store(true, SeqCst);
            out.cut_short = Some("interrupted".into());
            out.ended = Ended::Interrupted;
            self.grace_until = Some(now + INTERRUPT_GRACE);
        }
        if self.grace_until.is_some_and(|g| now >= g) {
            return true;
        }
        if now >= env.deadline {
            ctl.stop.store(true, SeqCst);
            if out.cut_short.is_none() {
                out.cut_short = Some("level timeout reached".into());
                out.ended = Ended::Deadline;
            }
            return true;
        }
        false
    }
}

/// Show the newest sample to `on_sample`; when it has seen enough, stop
/// sending (requests in flight finish) and close the steady window now.
fn offer(env: &Env<'_>, ctl: &Ctl, shape: Shape, out: &mut Outcome) {
    let Some(s) = out.samples.last() else { return };
    let from = match shape {
        Shape::Closed { .. } => ctl.win_open.get().copied(),
        Shape::Open { .. } | Shape::Trace { .. } => Some(out.started),
    };
    if (env.on_sample)(s, from) && !ctl.stop.swap(true, SeqCst) {
        let _ = ctl.win_close.set(Instant::now());
        out.ended = Ended::Enough;
    }
}

async fn worker(
    ctl: &Ctl,
    target: &Target,
    prepared: &[Prepared],
    (offset, cancel): (u64, Option<Cancel>),
    tx: &UnboundedSender<Msg>,
) {
    let mut conn = target.take_idle();
    loop {
        let now = Instant::now();
        if ctl.stop.load(Relaxed) {
            break;
        }
        if ctl.stop_at.is_some_and(|t| now >= t) {
            let _ = ctl.win_close.set(now);
            break;
        }
        let i = ctl.next.fetch_add(1, SeqCst);
        if i >= ctl.limit {
            let _ = ctl.win_close.set(now);
            break;
        }
        let (mut s, body) = new_sample(prepared, offset, i, now, now);
        if ctl.inflight.fetch_add(1, SeqCst) + 1 >= ctl.threshold {
            let _ = ctl.win_open.set(now);
        }
        execute_or_cancel(target, &mut conn, body, &mut s, cancel).await;
        ctl.inflight.fetch_sub(1, SeqCst);
        if tx.send(Msg::Sample(Box::new(s))).is_err() {
            break;
        }
    }
    // Kept for the next level: warmup connections serve the measurement.
    target.put_idle(conn);
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
    use rand_distr::Distribution;

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
