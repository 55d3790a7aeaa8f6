//! The wire clock of one connection: when a request's bytes reached the
//! socket (the kernel's receive stamp, [`sweepkit::rxstamp`]) and when the
//! write carrying its first token completed. llm-sim's own TTFT
//! (`timings.prompt_ms`) and its exact-timing schedule are taken from
//! these, so they hold what the client could see on the wire, not when
//! llm-sim's tasks got round to the request: a benchmark can then tell
//! client error from server lateness on a machine the two share.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Wire {
    epoch: Instant,
    /// Nanoseconds after `epoch` (0: never) of the last read with bytes.
    last_read: AtomicU64,
    /// The next write that completes carries the first token.
    armed: AtomicBool,
    first_write: AtomicU64,
}

impl Wire {
    pub fn new() -> Arc<Wire> {
        Arc::new(Wire {
            epoch: Instant::now(),
            last_read: AtomicU64::new(0),
            armed: AtomicBool::new(false),
            first_write: AtomicU64::new(0),
        })
    }

    fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.epoch)
            .as_nanos()
            .clamp(1, u64::MAX as u128) as u64
    }

    fn at(&self, ns: u64) -> Option<Instant> {
        (ns > 0).then(|| self.epoch + Duration::from_nanos(ns))
    }

    /// When the last bytes read on this connection arrived: after a
    /// request's body is read, the request's arrival.
    pub fn arrived(&self) -> Option<Instant> {
        self.at(self.last_read.load(Relaxed))
    }

    /// The next chunk handed to the connection carries the first token.
    pub fn arm(&self) {
        self.first_write.store(0, Relaxed);
        self.armed.store(true, Relaxed);
    }

    /// When the write carrying the first token completed, once it has.
    pub fn first_write(&self) -> Option<Instant> {
        self.at(self.first_write.load(Relaxed))
    }
}

/// The connection's stream: reads note arrival, writes the first token.
pub type WireIo = sweepkit::rxstamp::Stamped<Arc<Wire>>;

impl sweepkit::rxstamp::Clock for Wire {
    fn read(&self, at: Instant) {
        self.last_read.store(self.ns(at), Relaxed);
    }

    fn wrote(&self) {
        if self.armed.swap(false, Relaxed) {
            self.first_write.store(self.ns(Instant::now()), Relaxed);
        }
    }
}
