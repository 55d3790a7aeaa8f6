//! Kernel receive timestamps (`SO_TIMESTAMPNS`, socket(7)): the moment the
//! bytes a read returns reached the socket, stamped by the kernel as the
//! packet came in. A chunk's time then does not depend on when the event
//! loop got round to the socket: a busy client (hundreds of streams on one
//! thread, or cores shared with the server) measures the same TTFT and ITL
//! as an idle one. loadgen stamps response chunks with it; llm-sim stamps
//! request arrival, so its own TTFT is measured on the wire too.
//!
//! `recvmsg(2)` with a control buffer is not in tokio's or std's API, and
//! nix's safe wrapper wants an initialised buffer, which would mean zeroing
//! hyper's read buffer before every read: hence this small libc call.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// What a [`Stamped`] stream tells its owner.
pub trait Clock: Unpin {
    /// A read returned bytes that arrived at `at`.
    fn read(&self, at: Instant);
    /// A write handed bytes to the kernel.
    fn wrote(&self) {}
}

/// An instant that one task stores and another reads without a lock
/// (nanoseconds after a reference instant in an atomic; 0 is "none").
pub struct AtomicInstant {
    epoch: Instant,
    ns: AtomicU64,
}

impl Default for AtomicInstant {
    fn default() -> Self {
        AtomicInstant {
            epoch: Instant::now(),
            ns: AtomicU64::new(0),
        }
    }
}

impl AtomicInstant {
    /// Store `t` (an instant before the reference counts as the reference).
    pub fn store(&self, t: Instant) {
        let ns = t
            .saturating_duration_since(self.epoch)
            .as_nanos()
            .clamp(1, u64::MAX as u128) as u64;
        self.ns.store(ns, Relaxed);
    }

    /// The instant stored last, if any.
    pub fn load(&self) -> Option<Instant> {
        match self.ns.load(Relaxed) {
            0 => None,
            ns => Some(self.epoch + Duration::from_nanos(ns)),
        }
    }

    pub fn clear(&self) {
        self.ns.store(0, Relaxed);
    }
}

/// The simplest clock: when the last read's bytes arrived.
impl Clock for AtomicInstant {
    fn read(&self, at: Instant) {
        self.store(at);
    }
}

/// A clock shared with whoever reads it (the request handler).
impl<C: Clock> Clock for std::sync::Arc<C> {
    fn read(&self, at: Instant) {
        (**self).read(at)
    }

    fn wrote(&self) {
        (**self).wrote()
    }
}

/// A tokio TCP stream whose reads go through [`poll_read`] and report
/// their arrival time, and whose writes report when they complete.
pub struct Stamped<C: Clock> {
    pub tcp: TcpStream,
    pub clock: C,
}

impl<C: Clock> Stamped<C> {
    /// Wrap `tcp`, asking the kernel to stamp what it receives.
    pub fn new(tcp: TcpStream, clock: C) -> Self {
        enable(tcp.as_raw_fd());
        Stamped { tcp, clock }
    }
}

impl<C: Clock> AsyncRead for Stamped<C> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        poll_read(&this.tcp, cx, buf).map_ok(|at| {
            if let Some(at) = at {
                this.clock.read(at);
            }
        })
    }
}

impl<C: Clock> AsyncWrite for Stamped<C> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.tcp).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.clock.wrote();
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
            self.clock.wrote();
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

/// A socket with stamping on, for the life of the process: the kernel
/// turns receive stamping on a moment after the first socket asks (a
/// deferred static key) and keeps it on while one does, so holding this
/// from start-up means the first connections are stamped too.
pub fn keep_on() -> Option<std::net::UdpSocket> {
    let s = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
    enable(s.as_raw_fd()).then_some(s)
}

/// `AsyncRead::poll_read` for a tokio TCP stream, through `recvmsg`: on
/// Ready(Ok) the bytes read are in `buf`, and the value is when they
/// arrived (the kernel's stamp, else the clock after the read), or None
/// when nothing was read (end of stream).
pub fn poll_read(
    tcp: &TcpStream,
    cx: &mut Context<'_>,
    buf: &mut ReadBuf<'_>,
) -> Poll<io::Result<Option<Instant>>> {
    let fd = tcp.as_raw_fd();
    loop {
        std::task::ready!(tcp.poll_read_ready(cx))?;
        // SAFETY: recv writes only into the unfilled part, and exactly the
        // `n` bytes marked initialised and filled below.
        let unfilled = unsafe { buf.unfilled_mut() };
        match tcp.try_io(tokio::io::Interest::READABLE, || recv(fd, unfilled)) {
            Ok((n, stamp)) => {
                // SAFETY: the kernel wrote n bytes (see above).
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                let at = (n > 0).then(|| stamp.map_or_else(Instant::now, to_instant));
                return Poll::Ready(Ok(at));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
            Err(e) => return Poll::Ready(Err(e)),
        }
    }
}

/// Ask the kernel to stamp received data on this socket. False when the
/// kernel refuses, or is not Linux (callers then read the clock after the
/// read).
#[cfg(not(target_os = "linux"))]
pub fn enable(_fd: RawFd) -> bool {
    false
}

/// Ask the kernel to stamp received data on this socket. False when the
/// kernel refuses (callers fall back to reading the clock after the read).
#[cfg(target_os = "linux")]
pub fn enable(fd: RawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: a valid socket fd and a c_int option value of the right size.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// One non-blocking `recvmsg`: bytes read into `buf`, and the kernel's
/// receive time of the newest of them when it sent one.
pub fn recv(fd: RawFd, buf: &mut [MaybeUninit<u8>]) -> io::Result<(usize, Option<SystemTime>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one cmsghdr and a timespec, 8-byte aligned.
    let mut control = [0u64; 8];
    // SAFETY: msghdr is plain data; all-zero is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    // SAFETY: iov points at `buf` (writable, its length), control at a
    // local buffer of the stated size; the kernel writes within both.
    let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    let mut stamp = None;
    // SAFETY: the CMSG_* walkers stay within msg_control/msg_controllen,
    // which the kernel set; the data of an SCM_TIMESTAMPNS message is a
    // timespec (possibly unaligned, hence read_unaligned).
    #[cfg(target_os = "linux")]
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if ts.tv_sec > 0 {
                    stamp = Some(
                        std::time::UNIX_EPOCH
                            + Duration::new(
                                ts.tv_sec as u64,
                                ts.tv_nsec.clamp(0, 999_999_999) as u32,
                            ),
                    );
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

/// The Instant at which the wall-clock time `at` was: now minus its age.
/// Ages outside 0..1 s mean the wall clock stepped: use now.
pub fn to_instant(at: SystemTime) -> Instant {
    let now = Instant::now();
    match SystemTime::now().duration_since(at) {
        Ok(age) if age < Duration::from_secs(1) => now.checked_sub(age).unwrap_or(now),
        _ => now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsRawFd;

    #[test]
    #[cfg(target_os = "linux")]
    fn kernel_stamps_data_when_it_arrives_not_when_it_is_read() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        assert!(enable(b.as_raw_fd()));
        // The kernel switches stamping on a moment later (a deferred
        // static key), and a packet that came before it has no stamp.
        std::thread::sleep(Duration::from_millis(200));
        a.write_all(b"hello").unwrap();
        let written = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [MaybeUninit::uninit(); 64];
        let (n, stamp) = recv(b.as_raw_fd(), &mut buf).unwrap();
        let read = Instant::now();
        assert_eq!(n, 5);
        let at = to_instant(stamp.expect("a kernel timestamp"));
        // Stamped at arrival (about when written), not 30 ms later at the read.
        assert!(
            read.duration_since(at) >= Duration::from_millis(25),
            "{:?}",
            read - at
        );
        assert!(at.duration_since(written) < Duration::from_millis(5) || at < written);
        // Nothing left: a non-blocking read says so.
        let e = recv(b.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }
}
