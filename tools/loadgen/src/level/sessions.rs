//! `--sessions`: who sends in a multi-turn level. Closed loop: N workers,
//! each runs one whole session after another (N live sessions). Open loop
//! (a `--speed` level): each session starts at its recorded time over the
//! speed. Within a session a turn is sent after the previous reply ended
//! plus its think time, and carries the live reply back. A turn that fails
//! or is cancelled ends its session: there is no reply to go on with, and
//! the later turns are counted as not sent.

use std::sync::atomic::{AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinSet;

use super::{execute_or_cancel, Cancel, Ctl, Env, Msg, Shape};
use crate::client::{Target, TurnId};
use crate::session::Gap;
use crate::session_run::{History, SessionRun};

/// What every session task of a level shares.
#[derive(Clone)]
struct Runner {
    ctl: Arc<Ctl>,
    target: Arc<Target>,
    run: Arc<SessionRun>,
    cancel: Option<Cancel>,
    tx: UnboundedSender<Msg>,
    speed: f64,
}

/// Start the level's senders; returns how many will say they exited.
pub(super) fn spawn(
    env: &Env<'_>,
    ctl: &Arc<Ctl>,
    shape: Shape,
    tx: &UnboundedSender<Msg>,
    tasks: &mut JoinSet<()>,
    run: &Arc<SessionRun>,
) -> u64 {
    let speed = match shape {
        Shape::Trace { speed, .. } => speed,
        _ => run.closed_speed,
    };
    let r = Runner {
        ctl: ctl.clone(),
        target: env.target.clone(),
        run: run.clone(),
        cancel: env.cancel,
        tx: tx.clone(),
        speed,
    };
    match shape {
        Shape::Closed { concurrency } => {
            let next = Arc::new(AtomicUsize::new(0));
            let n = (concurrency as usize).clamp(1, run.scripts.len().max(1));
            for _ in 0..n {
                let (r, next) = (r.clone(), next.clone());
                tasks.spawn(async move {
                    loop {
                        let k = next.fetch_add(1, SeqCst);
                        if k >= r.run.scripts.len() || r.ctl.stop.load(Relaxed) {
                            break;
                        }
                        r.session(k, Instant::now()).await;
                    }
                    let _ = r.tx.send(Msg::WorkerExit);
                });
            }
            n as u64
        }
        Shape::Open { .. } | Shape::Trace { .. } => {
            tasks.spawn(async move {
                r.start_at_recorded_times().await;
                let _ = r.tx.send(Msg::WorkerExit);
            });
            1
        }
    }
}

impl Runner {
    /// Open loop: each session at its start over the speed; returns when
    /// every session ended.
    async fn start_at_recorded_times(&self) {
        let t0 = Instant::now();
        let mut order: Vec<usize> = (0..self.run.scripts.len()).collect();
        order.sort_by(|a, b| {
            let at = |k: usize| self.run.scripts[k].start_ms;
            at(*a).total_cmp(&at(*b))
        });
        let mut sessions = JoinSet::new();
        for k in order {
            let ms = self.run.scripts[k].start_ms;
            let due = t0 + Duration::from_secs_f64(ms / 1e3 / self.speed);
            tokio::time::sleep_until(due.into()).await;
            if self.ctl.stop.load(Relaxed) {
                break;
            }
            let r = self.clone();
            sessions.spawn(async move { r.session(k, due).await });
            while sessions.try_join_next().is_some() {}
        }
        while sessions.join_next().await.is_some() {}
    }

    /// Run session `k`, its first turn due at `start`.
    async fn session(&self, k: usize, start: Instant) {
        let script = &self.run.scripts[k];
        let mut history = History::new(&self.run.bodies, script);
        let mut conn = self.target.take_idle();
        let mut prev_done: Option<Instant> = None;
        for (t, turn) in script.turns.iter().enumerate() {
            let due = match (turn.gap, prev_done) {
                (_, None) | (Gap::First, _) => start,
                (Gap::Think(ms), Some(p)) => p + self.run.think(ms, self.speed),
                (Gap::At(ms), Some(p)) => {
                    let at = (ms - script.start_ms).max(0.0) / 1e3 / self.speed;
                    (start + Duration::from_secs_f64(at)).max(p)
                }
            };
            // The body is built before the wait: its time is no send lag.
            let p = history.turn(turn);
            tokio::time::sleep_until(due.into()).await;
            if self.ctl.stop.load(Relaxed) {
                break;
            }
            let mut s = super::sample_for(&p, self.ctl.next.fetch_add(1, SeqCst), due, due);
            s.turn = Some(TurnId {
                session: k as u32,
                turn: t as u32,
            });
            s.reply = Some(String::new());
            self.ctl.inflight.fetch_add(1, SeqCst);
            execute_or_cancel(&self.target, &mut conn, p.body, &mut s, self.cancel).await;
            self.ctl.inflight.fetch_sub(1, SeqCst);
            let reply = s.reply.take().unwrap_or_default();
            let ended = s.error.is_some() || s.cancelled;
            prev_done = Some(s.done);
            if self.tx.send(Msg::Sample(Box::new(s))).is_err() || ended {
                break;
            }
            history.reply(reply);
        }
        self.target.put_idle(conn);
    }
}
