//! The open loop's dispatcher: sends each request at its time (drawn
//! gaps for `--rate`, the recorded times for `--trace`), capped in flight;
//! the wait for a free slot is client queue time.

use std::sync::atomic::Ordering::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand_distr::{Distribution, Gamma};
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::{execute_or_cancel, new_sample, Ctl, Env, Msg, Prepared};
use crate::client::Target;

pub(super) fn dispatch(
    env: &Env<'_>,
    ctl: &Arc<Ctl>,
    tx: &UnboundedSender<Msg>,
    when: When,
    cap: u32,
) -> Dispatch {
    Dispatch {
        ctl: ctl.clone(),
        target: env.target.clone(),
        prepared: env.prepared.clone(),
        offset: env.offset,
        cancel: env.cancel,
        tx: tx.clone(),
        when,
        cap,
    }
}

/// When the open loop sends: drawn gaps, or a trace's recorded times.
pub(super) enum When {
    Arrivals { gaps: Gamma<f64>, rng: Box<StdRng> },
    Trace { times: Arc<Vec<f64>>, speed: f64 },
}

impl When {
    /// The send time of request `n`; None when a trace has no more.
    fn next(&mut self, start: Instant, prev: Instant, n: u64) -> Option<Instant> {
        match self {
            When::Arrivals { gaps, rng } => Some(prev + Duration::from_secs_f64(gaps.sample(rng))),
            When::Trace { times, speed } => {
                let ms = *times.get(n as usize)?;
                Some(start + Duration::from_secs_f64(ms / 1e3 / *speed))
            }
        }
    }
}

/// The open loop's dispatcher.
pub(super) struct Dispatch {
    ctl: Arc<Ctl>,
    target: Arc<Target>,
    prepared: Arc<Vec<Prepared>>,
    offset: u64,
    cancel: Option<super::Cancel>,
    tx: UnboundedSender<Msg>,
    when: When,
    cap: u32,
}

impl Dispatch {
    pub(super) async fn run(mut self) {
        let ctl = self.ctl.clone();
        let slots = Arc::new(Semaphore::new(self.cap.max(1) as usize));
        // Owns the requests: cancelled with the dispatcher.
        let mut requests = JoinSet::new();
        let clock = super::send_clock::SendClock::new();
        let start = Instant::now();
        let mut at = start;
        let mut n = 0u64;
        while n < ctl.limit {
            let Some(next) = self.when.next(start, at, n) else {
                break;
            };
            at = next;
            if ctl.stop_at.is_some_and(|s| at >= s) || ctl.stop.load(Relaxed) {
                break;
            }
            clock.sleep_until(at).await;
            // Wait for a free in-flight slot: the wait is client queue time.
            let Ok(permit) = slots.clone().acquire_owned().await else {
                break;
            };
            if ctl.stop.load(Relaxed) {
                break;
            }
            let slot = Instant::now();
            let (mut s, body) = new_sample(&self.prepared, self.offset, n, at, slot);
            n += 1;
            ctl.inflight.fetch_add(1, SeqCst);
            let (ctl2, target, tx) = (ctl.clone(), self.target.clone(), self.tx.clone());
            let cancel = self.cancel;
            requests.spawn(async move {
                let mut conn = target.take_idle();
                execute_or_cancel(&target, &mut conn, body, &mut s, cancel).await;
                target.put_idle(conn);
                ctl2.inflight.fetch_sub(1, SeqCst);
                drop(permit);
                let _ = tx.send(Msg::Sample(Box::new(s)));
            });
            while requests.try_join_next().is_some() {}
        }
        let _ = self.tx.send(Msg::Issued(n));
        while requests.join_next().await.is_some() {}
    }
}
