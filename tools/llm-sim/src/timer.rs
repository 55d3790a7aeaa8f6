//! A precise timer for async tasks. tokio's timer wheel rounds every sleep
//! up to the next millisecond; exact-timing mode promises chunk times well
//! under a millisecond, so one thread keeps a heap of deadlines, sleeps
//! with the OS timer and wakes each waiting task through a oneshot.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::time::Instant;

use tokio::sync::oneshot;

struct Entry(Instant, u64, oneshot::Sender<()>);

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.0, self.1).cmp(&(o.0, o.1))
    }
}

/// Handle to the timer thread.
#[derive(Clone)]
pub struct Timer {
    tx: Sender<(Instant, oneshot::Sender<()>)>,
}

impl Timer {
    pub fn start() -> Timer {
        let (tx, rx) = mpsc::channel::<(Instant, oneshot::Sender<()>)>();
        std::thread::Builder::new()
            .name("llm-sim-timer".into())
            .spawn(move || {
                crate::engine::tight_timer_slack();
                let mut heap: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
                let mut n = 0u64;
                loop {
                    let now = Instant::now();
                    while heap.peek().is_some_and(|e| e.0 .0 <= now) {
                        let _ = heap.pop().unwrap().0 .2.send(());
                    }
                    let got = match heap.peek() {
                        Some(e) => rx.recv_timeout(e.0 .0 - now),
                        None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    };
                    match got {
                        Ok((t, s)) => {
                            n += 1;
                            heap.push(Reverse(Entry(t, n, s)));
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
            .expect("spawn timer thread");
        Timer { tx }
    }

    /// Wait until `t`, precisely.
    pub async fn sleep_until(&self, t: Instant) {
        if t <= Instant::now() {
            return;
        }
        let (s, r) = oneshot::channel();
        if self.tx.send((t, s)).is_ok() {
            let _ = r.await;
        }
    }
}
