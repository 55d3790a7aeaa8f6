//! One request, start to finish: send over a kept-alive HTTP/1.1 connection
//! (hyper), read the SSE stream, and classify failures by kind.
//!
//! Timing: the connection's driver (hyper's `Connection` future) and the
//! request's own future are polled by the same task, driver first, so a
//! frame reaches the request in the poll that read it off the socket, and
//! its timestamp is when that read's bytes reached the socket (the kernel's
//! receive stamp, [`TimedIo`]), not when the task got round to parsing it. One event loop serves every
//! request in flight: no thread per request, no context switch per chunk.

mod conn;
mod request;
mod sample;
mod stream;
#[cfg(test)]
mod tests;

use std::io;

use bytes::Bytes;

pub use conn::{Conn, Target};
pub use request::execute;
pub use sample::{kind_name, ChunkMark, ErrorKind, RequestError, Sample, TurnId};
pub use stream::StreamState;

/// Request bodies share everything but the prompt: prepared once as
/// reference-counted bytes, so a request costs no JSON building or copy.
pub type Body = Bytes;

/// The runtime the load runs on: one thread by default, so requests cost
/// no cross-thread wakeups; more when one core cannot keep up.
pub fn runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    // The event loop's threads wake for send times and response bytes:
    // short scheduler slices, so a busy machine delays them less.
    if threads <= 1 {
        crate::sched_slice::shorten_current_thread();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("loadgen")
            .on_thread_start(crate::sched_slice::shorten_current_thread)
            .enable_all()
            .build()
    }
}
