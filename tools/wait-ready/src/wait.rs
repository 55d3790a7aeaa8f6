//! The waiting loop: probe the targets on a backoff schedule (in a worker
//! thread, so a hung probe never delays crash detection), poll the watchers
//! every tick, and decide the outcome.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sweepkit::records::{ProbeTarget, ReadyOutcome};

use crate::cli::Backoff;
use crate::probe::{probe, NetError, Probe, RequestSpec};
use crate::target::Target;
use crate::watch::{Event, Watchers};

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
    pub invert: bool,
    pub verbose: bool,
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
}

#[derive(Default, Clone)]
struct State {
    ok: bool,
    last: Option<Probe>,
    ever_open: bool,
}

/// Wait. Err is a watcher that could not work: (exit code, message).
pub fn wait(
    plan: &Plan,
    watchers: &mut Watchers,
    stop: &AtomicBool,
) -> Result<Verdict, (u8, String)> {
    let t0 = Instant::now();
    let deadline = t0 + plan.timeout;
    let mut st = vec![State::default(); plan.targets.len()];
    let (tx, rx) = mpsc::channel::<Vec<(usize, Probe)>>();
    let mut in_flight = false;
    let mut next_probe = t0;
    let mut pause = plan.schedule.interval;
    let mut attempts = 0u64;
    let mut port_open_at = None;
    let secs = |t: Instant| t.duration_since(t0).as_secs_f64();
    let verdict = |outcome, reason: String, st: &[State], attempts, port: Option<f64>| Verdict {
        outcome,
        reason,
        oom: false,
        targets: plan
            .targets
            .iter()
            .zip(st)
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
        time_to_port_open_s: port,
        time_to_ready_s: None,
        elapsed_s: t0.elapsed().as_secs_f64(),
        attempts,
        log_tail: Vec::new(),
    };
    loop {
        let now = Instant::now();
        if stop.load(Ordering::SeqCst) {
            let r = format!("interrupted after {:.1}s", secs(now));
            return Ok(verdict(
                ReadyOutcome::Interrupted,
                r,
                &st,
                attempts,
                port_open_at,
            ));
        }
        if let Some(ev) = watchers.poll(now)? {
            let (outcome, reason, oom) = match ev {
                Event::Crashed { reason, .. } if plan.invert => {
                    (ReadyOutcome::Down, format!("down: {reason}"), false)
                }
                Event::Crashed { reason, oom } => (
                    ReadyOutcome::Crashed,
                    format!("crashed after {:.1}s: {reason}", secs(now)),
                    oom,
                ),
                Event::RestartLoop { reason } => (ReadyOutcome::RestartLoop, reason, false),
            };
            let mut v = verdict(outcome, reason, &st, attempts, port_open_at);
            v.oom = oom;
            if outcome != ReadyOutcome::Down {
                v.log_tail = watchers.tail();
            }
            return Ok(v);
        }
        if !in_flight && now >= next_probe {
            let todo: Vec<(usize, Target)> = plan
                .targets
                .iter()
                .enumerate()
                .filter(|(i, _)| plan.invert || !st[*i].ok)
                .map(|(i, t)| (i, t.clone()))
                .collect();
            let req = plan.req.clone();
            let limit = plan
                .attempt_timeout
                .min(deadline.saturating_duration_since(now));
            let limit = limit.max(Duration::from_millis(10));
            let tx = tx.clone();
            std::thread::spawn(move || {
                let res = todo
                    .iter()
                    .map(|(i, t)| (*i, probe(t, &req, limit)))
                    .collect();
                let _ = tx.send(res);
            });
            in_flight = true;
            attempts += 1;
        }
        let until = if in_flight {
            now + TICK
        } else {
            next_probe.min(now + TICK)
        };
        let until = until.min(deadline);
        match rx.recv_timeout(until.saturating_duration_since(now)) {
            Ok(results) => {
                in_flight = false;
                let done = Instant::now();
                let mut changed = false;
                for (i, p) in results {
                    let s = &mut st[i];
                    let prev = s.last.as_ref().map(|l| (l.net, l.status));
                    if prev != Some((p.net, p.status)) {
                        changed = true;
                        if plan.verbose {
                            let t = &plan.targets[i].label;
                            let d = sweepkit::redact::text(&p.detail);
                            eprintln!("wait-ready: {:.3}s {t}: {d}", secs(done));
                        }
                    }
                    if p.port_open && port_open_at.is_none() {
                        port_open_at = Some(secs(done));
                    }
                    s.ever_open |= p.port_open;
                    s.ok = p.pass;
                    s.last = Some(p);
                }
                let all_ok = st.iter().all(|s| s.ok);
                let all_down = st.iter().all(|s| !s.ok);
                if !plan.invert && all_ok {
                    let r = format!("ready after {:.2}s ({attempts} probes)", secs(done));
                    let mut v = verdict(ReadyOutcome::Ready, r, &st, attempts, port_open_at);
                    v.time_to_ready_s = Some(secs(done));
                    return Ok(v);
                }
                if plan.invert && all_down {
                    let why = st[0]
                        .last
                        .as_ref()
                        .map_or(String::new(), |p| p.detail.clone());
                    let r = format!("down after {:.2}s ({why})", secs(done));
                    return Ok(verdict(ReadyOutcome::Down, r, &st, attempts, port_open_at));
                }
                pause = if changed {
                    plan.schedule.interval
                } else {
                    plan.schedule.grow(pause)
                };
                next_probe = done + pause;
                if let Some(why) = unreachable(plan, &st, watchers.any(), done - t0) {
                    let v = verdict(ReadyOutcome::Unreachable, why, &st, attempts, port_open_at);
                    return Ok(v);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("sender kept"),
        }
        if Instant::now() >= deadline {
            if let Some(why) = never_opened(plan, &st, watchers.any()) {
                let v = verdict(ReadyOutcome::Unreachable, why, &st, attempts, port_open_at);
                return Ok(v);
            }
            let r = timeout_reason(plan, &st);
            return Ok(verdict(
                ReadyOutcome::Timeout,
                r,
                &st,
                attempts,
                port_open_at,
            ));
        }
    }
}

/// The unreachable rule (see the man page): a target that never accepted a
/// connection is unreachable once `unreachable_after` has passed, when its
/// name does not resolve or there is no route, or, with nothing watched
/// that could say the server is still loading, when it is refused.
fn unreachable(plan: &Plan, st: &[State], watched: bool, elapsed: Duration) -> Option<String> {
    let grace = plan.unreachable_after?;
    if plan.invert || elapsed < grace {
        return None;
    }
    for (t, s) in plan.targets.iter().zip(st) {
        if s.ok || s.ever_open {
            continue;
        }
        let Some(p) = &s.last else { continue };
        let hard = matches!(p.net, Some(NetError::Dns | NetError::NoRoute));
        let soft = matches!(p.net, Some(NetError::Refused | NetError::ConnectTimeout));
        if hard || (soft && !watched) {
            let hint = if hard {
                ""
            } else {
                "; nothing watched says a server is loading (give --pid, --unit or --log)"
            };
            return Some(format!(
                "unreachable: {}: {} for {}{hint}",
                t.label,
                p.detail,
                humantime::format_duration(grace)
            ));
        }
    }
    None
}

/// At the timeout, with nothing watched: a target whose port never opened
/// is unreachable (exit 12), not a slow load (124). A refused connection
/// meanwhile was a server still starting, as wait4x and
/// `curl --retry-connrefused` assume: SGLang and vLLM keep their port
/// closed while loading (SGLang's engine starts before uvicorn).
fn never_opened(plan: &Plan, st: &[State], watched: bool) -> Option<String> {
    if plan.invert || watched {
        return None;
    }
    let (t, s) = plan
        .targets
        .iter()
        .zip(st)
        // No probe finished at all (the first one was still waiting for an
        // answer at the timeout): nothing says the port never opened.
        .find(|(_, s)| !s.ok && !s.ever_open && s.last.is_some())?;
    let d = s.last.as_ref().map_or("no answer", |p| p.detail.as_str());
    Some(format!(
        "unreachable: {}: {d}; the port never opened in {}",
        t.label,
        humantime::format_duration(plan.timeout)
    ))
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
