//! TCP tunnels over SSH direct-tcpip: local listeners on 127.0.0.1 whose
//! connections are carried to a port on the far side, and single streams for
//! `connect_tcp`. One thread pumps every tunnel on a session of its own,
//! non-blocking with poll(2), so no tunnel (nor a command on the main
//! session) can hold libssh2 while it waits.

use std::collections::VecDeque;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ssh2::{BlockDirections, Channel, Session};

use super::nonblocking;
use super::{open_session, Conn, SshConfig};
use crate::transport::TransportError;

/// Bytes buffered per direction per tunnel before reading pauses.
const CAP: usize = 256 * 1024;
/// A channel still closing after this long means the session is wedged
/// (a half-sent packet nobody will finish): reopen it.
const CLOSE_LIMIT: Duration = Duration::from_secs(10);

enum Req {
    Listen(TcpListener, String, u16),
    Connect(Pending),
}

/// The far side's reason for not opening a `connect_tcp` channel.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Refused(String);

/// A local end waiting for its channel to open.
struct Pending {
    local: Local,
    host: String,
    port: u16,
    /// For `connect_tcp`: told whether the far side accepted.
    reply: Option<mpsc::Sender<Result<(), Refused>>>,
    /// Already reopened the session once for this connection.
    retried: bool,
}

/// The local side of a tunnel.
enum Local {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Local {
    fn fd(&self) -> RawFd {
        match self {
            Local::Tcp(s) => s.as_raw_fd(),
            Local::Unix(s) => s.as_raw_fd(),
        }
    }
    fn io(&mut self) -> &mut dyn ReadWrite {
        match self {
            Local::Tcp(s) => s,
            Local::Unix(s) => s,
        }
    }
    fn shutdown_write(&self) {
        let _ = match self {
            Local::Tcp(s) => s.shutdown(Shutdown::Write),
            Local::Unix(s) => s.shutdown(Shutdown::Write),
        };
    }
    /// Close so the client sees a reset, the nearest thing to "refused"
    /// once its connection has been accepted here.
    fn reset(self) {
        if let Local::Tcp(s) = &self {
            let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
        }
    }
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// One open tunnel.
struct Link {
    local: Local,
    ch: Channel,
    up: Vec<u8>,
    down: Vec<u8>,
    local_eof: bool,
    eof_sent: bool,
    remote_eof: bool,
    local_shut: bool,
    /// The last channel write returned EAGAIN: libssh2 holds a half-sent
    /// packet that only a repeat of that write finishes, and every other
    /// send on the session waits behind it.
    write_pending: bool,
    /// Finished or broken: closing the channel (which waits for the far
    /// side's close; dropping it earlier would leave it open there).
    closing: Option<Instant>,
}

/// Handle on the pump thread; stops it on drop.
pub(crate) struct Forwarder {
    tx: mpsc::Sender<Req>,
    wake: UnixStream,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Forwarder {
    /// Open the tunnel session now (so auth errors surface here) and start
    /// the pump.
    pub fn start(cfg: SshConfig) -> Result<Forwarder, TransportError> {
        let conn = open_session(&cfg)?;
        Self::start_on(cfg, conn)
    }

    /// Start the pump on a session already opened for `cfg` (reopened
    /// from `cfg` when it breaks).
    pub fn start_on(cfg: SshConfig, conn: Conn) -> Result<Forwarder, TransportError> {
        let (tx, rx) = mpsc::channel();
        let (wake, wake_rx) = UnixStream::pair()?;
        wake_rx.set_nonblocking(true)?;
        // A full wake pipe already means "wake up"; never block a caller.
        wake.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let pump = Pump {
            cfg,
            conn: Some(conn),
            rx,
            wake: wake_rx,
            stop: stop.clone(),
            listeners: Vec::new(),
            pending: VecDeque::new(),
            links: Vec::new(),
        };
        let thread = std::thread::Builder::new()
            .name("sweepkit-ssh-forward".into())
            .spawn(move || pump.run())?;
        Ok(Forwarder {
            tx,
            wake,
            stop,
            thread: Some(thread),
        })
    }

    fn send(&self, r: Req) -> Result<(), TransportError> {
        self.tx
            .send(r)
            .map_err(|_| TransportError::Connect("ssh tunnel thread has stopped".into()))?;
        let _ = (&self.wake).write(&[1]);
        Ok(())
    }

    pub fn listen(&self, host: &str, port: u16) -> Result<SocketAddr, TransportError> {
        let l = TcpListener::bind("127.0.0.1:0")?;
        l.set_nonblocking(true)?;
        let addr = l.local_addr()?;
        self.send(Req::Listen(l, host.to_string(), port))?;
        Ok(addr)
    }

    /// Ask the pump for a channel to `host:port`; wait for the answer with
    /// `await_open` (without holding any lock meanwhile).
    pub fn request(&self, host: &str, port: u16) -> Result<Opening, TransportError> {
        let (mine, theirs) = UnixStream::pair()?;
        theirs.set_nonblocking(true)?;
        let (reply, answer) = mpsc::channel();
        self.send(Req::Connect(Pending {
            local: Local::Unix(theirs),
            host: host.to_string(),
            port,
            reply: Some(reply),
            retried: false,
        }))?;
        Ok(Opening {
            stream: mine,
            answer,
            what: format!("{host}:{port}"),
        })
    }
}

/// A `connect_tcp` waiting for its channel.
pub(crate) struct Opening {
    stream: UnixStream,
    answer: mpsc::Receiver<Result<(), Refused>>,
    what: String,
}

impl Opening {
    pub fn wait(self, timeout: Duration) -> Result<UnixStream, TransportError> {
        match self.answer.recv_timeout(timeout) {
            Ok(Ok(())) => Ok(self.stream),
            Ok(Err(e)) => Err(TransportError::Connect(format!(
                "{} from the far side: {e}",
                self.what
            ))),
            Err(_) => Err(TransportError::Timeout(timeout)),
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = (&self.wake).write(&[1]);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Pump {
    cfg: SshConfig,
    /// None after the session broke; reopened for the next tunnel.
    conn: Option<Conn>,
    rx: mpsc::Receiver<Req>,
    wake: UnixStream,
    stop: Arc<AtomicBool>,
    listeners: Vec<(TcpListener, String, u16)>,
    pending: VecDeque<Pending>,
    links: Vec<Link>,
}

impl Pump {
    fn run(mut self) {
        let mut buf = vec![0u8; 64 * 1024];
        while !self.stop.load(Ordering::SeqCst) {
            if let Some(c) = &self.conn {
                nonblocking::quickack(c.fd());
            }
            let mut progress = self.take_requests();
            progress |= self.accept();
            progress |= self.open_next();
            let sess = self.conn.as_ref().map(|c| c.sess.clone());
            for link in &mut self.links {
                progress |= pump_link(link, &mut buf, sess.as_ref());
            }
            progress |= self.reap();
            if !progress {
                self.wait();
            }
        }
    }

    fn take_requests(&mut self) -> bool {
        let mut drained = [0u8; 64];
        while matches!((&self.wake).read(&mut drained), Ok(n) if n > 0) {}
        let mut any = false;
        while let Ok(r) = self.rx.try_recv() {
            any = true;
            match r {
                Req::Listen(l, h, p) => self.listeners.push((l, h, p)),
                Req::Connect(p) => self.pending.push_back(p),
            }
        }
        any
    }

    fn accept(&mut self) -> bool {
        let mut any = false;
        for (l, host, port) in &self.listeners {
            while let Ok((s, _)) = l.accept() {
                any = true;
                let _ = s.set_nodelay(true);
                if s.set_nonblocking(true).is_ok() {
                    self.pending.push_back(Pending {
                        local: Local::Tcp(s),
                        host: host.clone(),
                        port: *port,
                        reply: None,
                        retried: false,
                    });
                }
            }
        }
        any
    }

    /// Open the channel for the oldest waiting connection (libssh2 opens
    /// one direct-tcpip channel at a time in non-blocking mode).
    fn open_next(&mut self) -> bool {
        let Some(p) = self.pending.front() else {
            return false;
        };
        if self.conn.is_none() {
            match open_session(&self.cfg) {
                Ok(c) => self.conn = Some(c),
                Err(e) => {
                    let p = self.pending.pop_front().expect("front");
                    refuse(p, &e.to_string());
                    return true;
                }
            }
        }
        let sess = &self.conn.as_ref().expect("open").sess;
        match sess.channel_direct_tcpip(&p.host, p.port, None) {
            Err(e) if nonblocking::is_again(&e) => false,
            Err(e) if session_gone(&e) && !p.retried => {
                // The idle session died (server restart, timeout): reopen
                // once for this connection.
                self.pending[0].retried = true;
                self.links.clear();
                self.conn = None;
                true
            }
            Err(e) => {
                let p = self.pending.pop_front().expect("front");
                refuse(p, e.message());
                true
            }
            Ok(ch) => {
                let p = self.pending.pop_front().expect("front");
                if let Some(r) = &p.reply {
                    let _ = r.send(Ok(()));
                }
                self.links.push(Link {
                    local: p.local,
                    ch,
                    up: Vec::new(),
                    down: Vec::new(),
                    local_eof: false,
                    eof_sent: false,
                    remote_eof: false,
                    local_shut: false,
                    write_pending: false,
                    closing: None,
                });
                true
            }
        }
    }

    /// Drop links whose channel has closed; if the session itself died,
    /// drop everything on it and reopen on the next connection.
    fn reap(&mut self) -> bool {
        let before = self.links.len();
        let mut dead_session = false;
        self.links.retain_mut(|l| {
            let Some(since) = l.closing else {
                return true;
            };
            if since.elapsed() > CLOSE_LIMIT {
                dead_session = true;
                return false;
            }
            if l.write_pending {
                match l.ch.write(&l.up) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                    _ => l.write_pending = false,
                }
            }
            match l.ch.close() {
                Err(e) if nonblocking::is_again(&e) => true,
                Ok(()) => false,
                Err(e) => {
                    dead_session |= session_gone(&e);
                    false
                }
            }
        });
        if dead_session {
            self.links.clear();
            self.conn = None;
        }
        self.links.len() != before
    }

    fn wait(&self) {
        let mut fds = Vec::with_capacity(2 + self.listeners.len() + self.links.len());
        let pfd = |fd, events| libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        fds.push(pfd(self.wake.as_raw_fd(), libc::POLLIN));
        // The session's socket only while someone will read what arrives:
        // unread data (or a closed idle session) would wake us forever.
        let wants_session = !self.pending.is_empty()
            || self.links.iter().any(|l| {
                l.closing.is_some() || !l.up.is_empty() || (!l.remote_eof && l.down.len() < CAP)
            });
        if let Some(c) = self.conn.as_ref().filter(|_| wants_session) {
            let mut ev = libc::POLLIN;
            if matches!(
                c.sess.block_directions(),
                ssh2::BlockDirections::Outbound | ssh2::BlockDirections::Both
            ) {
                ev |= libc::POLLOUT;
            }
            fds.push(pfd(c.fd(), ev));
        }
        for (l, _, _) in &self.listeners {
            fds.push(pfd(l.as_raw_fd(), libc::POLLIN));
        }
        for l in &self.links {
            let mut ev = 0;
            if l.closing.is_some() {
                continue;
            }
            if !l.local_eof && l.up.len() < CAP {
                ev |= libc::POLLIN;
            }
            if !l.down.is_empty() {
                ev |= libc::POLLOUT;
            }
            // No interest: leave it out, or a hung-up socket (POLLHUP is
            // reported regardless of events) would wake us forever.
            if ev != 0 {
                fds.push(pfd(l.local.fd(), ev));
            }
        }
        nonblocking::poll(&mut fds, Duration::from_millis(500));
    }
}

fn refuse(p: Pending, why: &str) {
    match p.reply {
        Some(r) => {
            let _ = r.send(Err(Refused(why.to_string())));
        }
        None => p.local.reset(),
    }
}

/// libssh2 errors after which the session is unusable.
fn session_gone(e: &ssh2::Error) -> bool {
    // SOCKET_SEND, SOCKET_RECV, SOCKET_DISCONNECT, TIMEOUT.
    matches!(e.code(), ssh2::ErrorCode::Session(-7 | -43 | -13 | -9))
}

/// Move bytes both ways for one tunnel; true if anything moved.
fn pump_link(l: &mut Link, buf: &mut [u8], sess: Option<&Session>) -> bool {
    if l.closing.is_some() {
        return false;
    }
    let mut progress = false;
    let mut broken = false;
    // Local -> far side.
    if !l.local_eof && l.up.len() < CAP {
        match l.local.io().read(buf) {
            Ok(0) => {
                l.local_eof = true;
                progress = true;
            }
            Ok(n) => {
                l.up.extend_from_slice(&buf[..n]);
                progress = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => broken = true,
        }
    }
    if !l.up.is_empty() {
        l.write_pending = false;
        match l.ch.write(&l.up) {
            Ok(n) => {
                l.up.drain(..n);
                progress = true;
            }
            // Blocked on the socket (not on the far side's window): a
            // packet is half sent.
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                l.write_pending = sess.is_some_and(|s| {
                    matches!(
                        s.block_directions(),
                        BlockDirections::Outbound | BlockDirections::Both
                    )
                })
            }
            Err(_) => broken = true,
        }
    }
    if l.local_eof && l.up.is_empty() && !l.eof_sent {
        match l.ch.send_eof() {
            Ok(()) => {
                l.eof_sent = true;
                progress = true;
            }
            Err(e) if nonblocking::is_again(&e) => {}
            Err(_) => broken = true,
        }
    }
    // Far side -> local.
    if !l.remote_eof && l.down.len() < CAP {
        match l.ch.read(buf) {
            Ok(0) => {
                l.remote_eof = true;
                progress = true;
            }
            Ok(n) => {
                l.down.extend_from_slice(&buf[..n]);
                progress = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => broken = true,
        }
    }
    if !l.down.is_empty() {
        match l.local.io().write(&l.down) {
            Ok(n) => {
                l.down.drain(..n);
                progress = true;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => broken = true,
        }
    }
    if l.remote_eof && l.down.is_empty() && !l.local_shut {
        l.local.shutdown_write();
        l.local_shut = true;
        progress = true;
    }
    if broken || (l.eof_sent && l.local_shut) {
        l.closing = Some(Instant::now());
        progress = true;
    }
    progress
}
