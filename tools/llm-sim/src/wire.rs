//! The wire clock of one connection: when a request's bytes reached the
//! socket (the kernel's receive stamp, [`sweepkit::rxstamp`]) and when the
//! write carrying its first token completed. llm-sim's own TTFT
//! (`timings.prompt_ms`) and its exact-timing mode's chunk times are taken
//! from these, so they hold what the client could see on the wire, not when
//! llm-sim's tasks got round to the request: a benchmark can then tell
//! client error from server lateness on a machine the two share.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use sweepkit::rxstamp::AtomicInstant;

#[derive(Default)]
pub struct Wire {
    /// When the last read with bytes on this connection arrived.
    last_read: AtomicInstant,
    /// The next write that completes carries the first token.
    armed: AtomicBool,
    first_write: AtomicInstant,
}

impl Wire {
    pub fn new() -> Arc<Wire> {
        Arc::new(Wire::default())
    }

    /// When the last bytes read on this connection arrived: after a
    /// request's body is read, the request's arrival.
    pub fn arrived(&self) -> Option<Instant> {
        self.last_read.load()
    }

    /// The next chunk handed to the connection carries the first token.
    pub fn arm(&self) {
        self.first_write.clear();
        self.armed.store(true, Relaxed);
    }

    /// When the write carrying the first token completed, once it has.
    pub fn first_write(&self) -> Option<Instant> {
        self.first_write.load()
    }
}

/// The connection's stream: reads note arrival, writes the first token.
pub type WireIo = sweepkit::rxstamp::Stamped<Arc<Wire>>;

impl sweepkit::rxstamp::Clock for Wire {
    fn read(&self, at: Instant) {
        self.last_read.store(at);
    }

    fn wrote(&self) {
        if self.armed.swap(false, Relaxed) {
            self.first_write.store(Instant::now());
        }
    }
}
