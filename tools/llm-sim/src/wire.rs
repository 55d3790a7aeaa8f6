//! The wire clock of one connection: when a request's bytes reached the
//! socket (the kernel's receive stamp, [`sweepkit::rxstamp`]) and when the
//! write carrying its first token completed. llm-sim's own TTFT
//! (`timings.prompt_ms`) and its exact-timing schedule are taken from
//! these, so they hold what the client could see on the wire, not when
//! llm-sim's tasks got round to the request: a benchmark can then tell
//! client error from server lateness on a machine the two share.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

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

    fn wrote(&self) {
        if self.armed.swap(false, Relaxed) {
            self.first_write.store(self.ns(Instant::now()), Relaxed);
        }
    }
}

/// A TCP stream that keeps its connection's [`Wire`] clock.
pub struct WireIo {
    pub tcp: TcpStream,
    pub wire: Arc<Wire>,
}

impl AsyncRead for WireIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match sweepkit::rxstamp::poll_read(&this.tcp, cx, buf) {
            Poll::Ready(Ok(at)) => {
                if let Some(at) = at {
                    this.wire.last_read.store(this.wire.ns(at), Relaxed);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for WireIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.wire.wrote();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.wire.wrote();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
