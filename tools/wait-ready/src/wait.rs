//! The waiting loop: probe the targets on a backoff schedule (in a worker
//! thread, so a hung probe never delays crash detection), poll the watchers
//! every tick, and decide the outcome.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sweepkit::exit::Exit;
use sweepkit::records::{ProbeTarget, ReadyOutcome};

use crate::cli::Backoff;
use crate::probe::{probe, NetError, Probe, RequestSpec};
use crate::target::Target;
use crate::watch::{Event, Watchers};

mod unreachable;

use unreachable::{key_refused, never_opened, not_found, unreachable};

/// How often the watchers are polled and the clock is checked. A local
/// /proc read and a log stat cost microseconds, so 50 ms keeps crash
/// detection far under a second for almost no CPU.
pub const TICK: Duration = Duration::from_millis(50);

/// When to probe.
#[derive(Debug, Clone, Copy)]
pub struct Schedule {
    pub interval: Duration,
    pub max_interval: Duration,
    pub backoff: Backoff,
}

impl Schedule {
    /// The pause after `pause` when nothing changed.
    pub fn grow(&self, pause: Duration) -> Duration {
        let next = match self.backoff {
            Backoff::None => self.interval,
            Backoff::Linear => pause + self.interval,
            Backoff::Exponential => pause.mul_f64(1.5),
        };
        next.min(self.max_interval.max(self.interval))
    }
}

/// Everything the loop needs.
pub struct Plan {
    pub targets: Vec<Target>,
    pub req: RequestSpec,
    pub timeout: Duration,
    pub attempt_timeout: Duration,
    pub schedule: Schedule,
    pub unreachable_after: Option<Duration>,
    /// `--unresolved-after`: a name that has not resolved for this long.
    pub unresolved_after: Option<Duration>,
    /// `--not-found-after`: a server answering "no such path" this long.
    pub not_found_after: Option<Duration>,
    pub invert: bool,
    pub verbose: bool,
    /// `--server openai`: OPENAI_API_KEY is read too (said on a 401).
    pub openai: bool,
}

/// What the loop decided.
#[derive(Debug)]
pub struct Verdict {
    pub outcome: ReadyOutcome,
    pub reason: String,
    /// The crash looked like an out-of-memory.
    pub oom: bool,
    pub targets: Vec<ProbeTarget>,
    pub time_to_port_open_s: Option<f64>,
    pub time_to_ready_s: Option<f64>,
    pub elapsed_s: f64,
    pub attempts: u64,
    pub log_tail: Vec<String>,
    /// What a human should know although the wait decided (an inert
    /// `--expect-config` value): `wait-ready: warning:` lines on stderr,
    /// and the ready record's `warnings`.
    pub warnings: Vec<String>,
}

#[derive(Default, Clone)]
struct State {
    ok: bool,
    last: Option<Probe>,
    ever_open: bool,
    /// When the first of an unbroken run of "name does not resolve"
    /// probes was sent.
    unresolved_since: Option<Instant>,
    /// When the first of an unbroken run of HTTP 404/405 answers came.
    not_found_since: Option<Instant>,
}

/// Wait. Err is a watcher that could not work (cannot run systemctl), with
/// its exit code.
pub fn wait(plan: &Plan, watchers: &mut Watchers, stop: &AtomicBool) -> Result<Verdict, Exit> {
    let mut r = Run::new(plan);
    loop {
        let now = Instant::now();
        if stop.load(Ordering::SeqCst) {
            let why = format!("interrupted after {:.1}s", r.secs(now));
            return Ok(r.verdict(ReadyOutcome::Interrupted, why));
        }
        if let Some(ev) = watchers.poll(now)? {
            return Ok(r.on_event(ev, watchers, now));
        }
        if !r.in_flight && now >= r.next_probe {
            r.launch(now);
        }
        match r.rx.recv_timeout(r.sleep_until(now)) {
            Ok(results) => {
                if let Some(v) = r.on_results(results, watchers.any()) {
                    return Ok(v);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("sender kept"),
        }
        if Instant::now() >= r.deadline {
            return Ok(r.at_deadline(watchers.any()));
        }
    }
}

/// One wait's state: the probes so far and the schedule of the next one.
struct Run<'a> {
    plan: &'a Plan,
    t0: Instant,
    deadline: Instant,
    st: Vec<State>,
    tx: mpsc::Sender<Vec<(usize, Probe)>>,
    rx: mpsc::Receiver<Vec<(usize, Probe)>>,
    /// A probe round is running in its worker thread.
    in_flight: bool,
    /// When the round in flight (or the last one) was sent.
    launched: Instant,
    next_probe: Instant,
    pause: Duration,
    attempts: u64,
    port_open_at: Option<f64>,
}

impl<'a> Run<'a> {
    fn new(plan: &'a Plan) -> Self {
        let t0 = Instant::now();
        let (tx, rx) = mpsc::channel();
        Run {
            plan,
            t0,
            deadline: t0 + plan.timeout,
            st: vec![State::default(); plan.targets.len()],
            tx,
            rx,
            in_flight: false,
            launched: t0,
            next_probe: t0,
            pause: plan.schedule.interval,
            attempts: 0,
            port_open_at: None,
        }
    }

    fn secs(&self, t: Instant) -> f64 {
        t.duration_since(self.t0).as_secs_f64()
    }

    /// The verdict as things stand.
    fn verdict(&self, outcome: ReadyOutcome, reason: String) -> Verdict {
        let targets = self.plan.targets.iter().zip(&self.st);
        Verdict {
            outcome,
            reason,
            oom: false,
            targets: targets
                .map(|(t, s)| ProbeTarget {
                    target: t.label.clone(),
                    ok: s.ok,
                    last_status: s.last.as_ref().and_then(|p| p.status),
                    last_error: s
                        .last
                        .as_ref()
                        .filter(|p| !p.pass)
                        .map(|p| p.detail.clone()),
                })
                .collect(),
            time_to_port_open_s: self.port_open_at,
            time_to_ready_s: None,
            elapsed_s: self.t0.elapsed().as_secs_f64(),
            attempts: self.attempts,
            log_tail: Vec::new(),
            warnings: Vec::new(),
        }
    }

    /// A watcher saw the server die or restart.
    fn on_event(&self, ev: Event, watchers: &mut Watchers, now: Instant) -> Verdict {
        let (outcome, reason, oom) = match ev {
            Event::Crashed { reason, .. } if self.plan.invert => {
                (ReadyOutcome::Down, format!("down: {reason}"), false)
            }
            Event::Crashed { reason, oom } => (
                ReadyOutcome::Crashed,
                format!("crashed after {:.1}s: {reason}", self.secs(now)),
                oom,
            ),
            Event::RestartLoop { reason } => (ReadyOutcome::RestartLoop, reason, false),
        };
        let mut v = self.verdict(outcome, reason);
        v.oom = oom;
        if outcome != ReadyOutcome::Down {
            v.log_tail = watchers.tail();
        }
        v
    }

    /// Start a probe round in a worker thread, so a hung probe never
    /// delays the watchers.
    fn launch(&mut self, now: Instant) {
        let plan = self.plan;
        let todo: Vec<(usize, Target)> = plan
            .targets
            .iter()
            .enumerate()
            .filter(|(i, _)| plan.invert || !self.st[*i].ok)
            .map(|(i, t)| (i, t.clone()))
            .collect();
        let req = plan.req.clone();
        let limit = plan
            .attempt_timeout
            .min(self.deadline.saturating_duration_since(now))
            .max(Duration::from_millis(10));
        let tx = self.tx.clone();
        std::thread::spawn(move || {
            let res = todo
                .iter()
                .map(|(i, t)| (*i, probe(t, &req, limit)))
                .collect();
            let _ = tx.send(res);
        });
        self.in_flight = true;
        self.launched = now;
        self.attempts += 1;
    }

    /// How long to wait for the probe round: a tick, or less when the
    /// next round or the deadline comes first.
    fn sleep_until(&self, now: Instant) -> Duration {
        let until = if self.in_flight {
            now + TICK
        } else {
            self.next_probe.min(now + TICK)
        };
        until.min(self.deadline).saturating_duration_since(now)
    }

    /// Record a finished round; the verdict when it decides the wait.
    fn on_results(&mut self, results: Vec<(usize, Probe)>, watched: bool) -> Option<Verdict> {
        self.in_flight = false;
        let done = Instant::now();
        let changed = self.record(results, done);
        if let Some(v) = self.decided(done) {
            return Some(v);
        }
        self.pause = if changed {
            self.plan.schedule.interval
        } else {
            self.plan.schedule.grow(self.pause)
        };
        self.next_probe = done + self.pause;
        if let Some(why) = key_refused(self.plan, &self.st) {
            return Some(self.verdict(ReadyOutcome::Unauthorized, why));
        }
        if let Some(why) = not_found(self.plan, &self.st, done) {
            return Some(self.verdict(ReadyOutcome::NotFound, why));
        }
        let why = unreachable(self.plan, &self.st, watched, done - self.t0, done)?;
        Some(self.verdict(ReadyOutcome::Unreachable, why))
    }

    /// Keep each probe's result; true when any target's answer changed
    /// (which resets the backoff).
    fn record(&mut self, results: Vec<(usize, Probe)>, done: Instant) -> bool {
        let mut changed = false;
        for (i, p) in results {
            let prev = self.st[i].last.as_ref().map(|l| (l.net, l.status));
            if prev != Some((p.net, p.status)) {
                changed = true;
                if self.plan.verbose {
                    let t = &self.plan.targets[i].label;
                    let d = sweepkit::redact::text(&p.detail);
                    sweepkit::diag::line(format!("wait-ready: {:.3}s {t}: {d}", self.secs(done)));
                }
            }
            if p.port_open && self.port_open_at.is_none() {
                self.port_open_at = Some(self.secs(done));
            }
            let s = &mut self.st[i];
            s.unresolved_since = match p.net {
                Some(NetError::Dns) => s.unresolved_since.or(Some(self.launched)),
                _ => None,
            };
            s.not_found_since = match p.status {
                Some(404 | 405) if !p.pass => s.not_found_since.or(Some(done)),
                _ => None,
            };
            s.ever_open |= p.port_open;
            s.ok = p.pass;
            s.last = Some(p);
        }
        changed
    }

    /// Ready (every target passed) or, with --invert, down (none did).
    fn decided(&self, done: Instant) -> Option<Verdict> {
        let at = self.secs(done);
        if !self.plan.invert && self.st.iter().all(|s| s.ok) {
            let r = format!("ready after {at:.2}s ({} probes)", self.attempts);
            let mut v = self.verdict(ReadyOutcome::Ready, r);
            v.time_to_ready_s = Some(at);
            return Some(v);
        }
        if self.plan.invert && self.st.iter().all(|s| !s.ok) {
            let last = self.st[0].last.as_ref();
            let why = last.map_or(String::new(), |p| p.detail.clone());
            let r = format!("down after {at:.2}s ({why})");
            return Some(self.verdict(ReadyOutcome::Down, r));
        }
        None
    }

    /// The timeout passed: unreachable if the port never opened with
    /// nothing watched, else still loading (124).
    fn at_deadline(&self, watched: bool) -> Verdict {
        if let Some(why) = never_opened(self.plan, &self.st, watched) {
            return self.verdict(ReadyOutcome::Unreachable, why);
        }
        self.verdict(ReadyOutcome::Timeout, timeout_reason(self.plan, &self.st))
    }
}

fn timeout_reason(plan: &Plan, st: &[State]) -> String {
    let waiting: Vec<String> = plan
        .targets
        .iter()
        .zip(st)
        .filter(|(_, s)| s.ok == plan.invert)
        .map(|(t, s)| {
            let d = s
                .last
                .as_ref()
                .map_or("no answer yet", |p| p.detail.as_str());
            format!("{}: {d}", t.label)
        })
        .collect();
    let what = if plan.invert {
        "still up"
    } else {
        "still loading"
    };
    format!(
        "{what} after {}: {}",
        humantime::format_duration(plan.timeout),
        waiting.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn backoff_grows_to_the_cap() {
        let ms = Duration::from_millis;
        let s = Schedule {
            interval: ms(50),
            max_interval: ms(150),
            backoff: Backoff::Exponential,
        };
        assert_eq!(s.grow(ms(50)), ms(75));
        assert_eq!(s.grow(ms(120)), ms(150));
        let l = Schedule {
            backoff: Backoff::Linear,
            ..s
        };
        assert_eq!(l.grow(ms(50)), ms(100));
        assert_eq!(l.grow(ms(100)), ms(150));
        let n = Schedule {
            backoff: Backoff::None,
            max_interval: ms(10),
            ..s
        };
        assert_eq!(n.grow(ms(50)), ms(50));
    }
}
