//! The connection side: where requests go (`Target`, with its idle pool of
//! kept-alive connections), one HTTP/1.1 connection (`Conn`), and `drive`,
//! which polls a connection's driver and a request in the same task.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_util::rt::TokioIo;
use sweepkit::rxstamp::AtomicInstant;
use tokio::net::TcpStream;
use tokio::time::Sleep;

use super::{Body, ErrorKind, RequestError};

/// Everything a request needs that does not change between requests, and
/// the idle connections kept alive between levels (warmup to measurement).
pub struct Target {
    pub(super) addrs: Vec<SocketAddr>,
    /// Origin-form request target (`/v1/completions`).
    pub(super) path: Uri,
    /// Host, Content-Type, Accept, User-Agent, Authorization (sensitive).
    pub(super) headers: HeaderMap,
    pub stream: bool,
    pub request_timeout: Duration,
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    /// Each chunk's text is the whole text so far (SGLang `/generate`),
    /// not the new part: a chunk's own text is what grew.
    pub cumulative_text: bool,
    idle: Mutex<Vec<Conn>>,
    /// A socket with kernel stamping on from the start: the kernel turns
    /// stamping on a moment after the first socket asks, and keeps it on
    /// while one does, so the first requests are stamped too.
    _stamping: Option<std::net::UdpSocket>,
}

impl Target {
    /// `url`: the full endpoint URL (`http://host:port/v1/completions`);
    /// `auth`: the `Authorization` header value, never printed.
    pub fn new(
        url: &str,
        auth: Option<&str>,
        stream: bool,
        request_timeout: Duration,
        idle_timeout: Duration,
        connect_timeout: Duration,
    ) -> Result<Target, String> {
        let uri: Uri = url.parse().map_err(|e| format!("URL '{url}': {e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err(format!("URL '{url}': only http:// is supported"));
        }
        let authority = uri
            .authority()
            .ok_or_else(|| format!("URL '{url}': no host"))?;
        let host = authority.host();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let port = authority.port_u16().unwrap_or(80);
        let addrs: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(host, port))
            .map_err(|e| format!("URL '{url}': cannot resolve '{host}': {e}"))?
            .collect();
        let path: Uri = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e| format!("URL '{url}': {e}"))?;
        let mut headers = HeaderMap::new();
        let value = |v: &str| {
            HeaderValue::from_str(v).map_err(|_| format!("invalid header value in {url}"))
        };
        headers.insert(header::HOST, value(authority.as_str())?);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            header::ACCEPT,
            HeaderValue::from_static(if stream {
                "text/event-stream"
            } else {
                "application/json"
            }),
        );
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static(concat!("sweepkit-loadgen/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(a) = auth {
            let mut v = HeaderValue::from_str(a)
                .map_err(|_| "the API key holds characters a header cannot carry".to_string())?;
            v.set_sensitive(true);
            headers.insert(header::AUTHORIZATION, v);
        }
        Ok(Target {
            addrs,
            path,
            headers,
            stream,
            request_timeout,
            idle_timeout,
            connect_timeout,
            cumulative_text: false,
            idle: Mutex::new(Vec::new()),
            _stamping: sweepkit::rxstamp::keep_on(),
        })
    }

    pub(super) fn request(&self, body: Body) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = self.path.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// An idle kept-alive connection, if one is still open.
    pub fn take_idle(&self) -> Option<Conn> {
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(mut c) = idle.pop() {
            if c.usable() {
                return Some(c);
            }
        }
        None
    }

    /// Keep a connection for the next request or level.
    pub fn put_idle(&self, c: Option<Conn>) {
        if let Some(mut c) = c {
            if c.usable() {
                self.idle.lock().unwrap_or_else(|e| e.into_inner()).push(c);
            }
        }
    }

    pub(super) async fn connect(&self) -> Result<Conn, RequestError> {
        let mut last = None;
        for addr in &self.addrs {
            match tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr)).await {
                Ok(Ok(tcp)) => {
                    let _ = tcp.set_nodelay(true);
                    let last_read = Arc::new(AtomicInstant::default());
                    let io = TimedIo::new(tcp, last_read.clone());
                    let (sender, driver) = http1::Builder::new()
                        .handshake(TokioIo::new(io))
                        .await
                        .map_err(|e| RequestError::new(ErrorKind::Client, e.to_string()))?;
                    return Ok(Conn {
                        sender,
                        driver: Some(Box::pin(driver)),
                        last_read,
                        reused: false,
                    });
                }
                Ok(Err(e)) => last = Some(format!("connect {addr}: {e}")),
                Err(_) => last = Some(format!("connect {addr}: timed out")),
            }
        }
        Err(RequestError::new(
            ErrorKind::Connect,
            last.unwrap_or_else(|| "no address to connect to".into()),
        ))
    }
}

pub(super) type Driver = http1::Connection<TokioIo<TimedIo>, Full<Bytes>>;

/// One keep-alive HTTP/1.1 connection and the future that drives it.
pub struct Conn {
    pub(super) sender: http1::SendRequest<Full<Bytes>>,
    /// None once the connection has ended (closed by either side).
    pub(super) driver: Option<Pin<Box<Driver>>>,
    /// When the bytes of the last read that returned any arrived (the
    /// kernel's receive stamp, [`sweepkit::rxstamp`], else the clock right
    /// after the read).
    last_read: Arc<AtomicInstant>,
    /// Has it carried a request already (a stale close is then possible)?
    pub(super) reused: bool,
}

impl Conn {
    /// Open and ready for a request: poll the driver once so a close the
    /// server made while the connection sat idle is seen now.
    fn usable(&mut self) -> bool {
        if let Some(d) = self.driver.as_mut() {
            let mut cx = Context::from_waker(std::task::Waker::noop());
            if d.as_mut().poll(&mut cx).is_ready() {
                self.driver = None;
            }
        }
        self.driver.is_some() && !self.sender.is_closed()
    }

    /// When the bytes just handed over arrived (never later than now).
    pub(super) fn stamp(&self) -> Instant {
        let now = Instant::now();
        self.last_read.load().map_or(now, |t| t.min(now))
    }
}

/// A connection's stream: each read notes when its bytes arrived.
type TimedIo = sweepkit::rxstamp::Stamped<Arc<AtomicInstant>>;

/// Poll the connection's driver, then `fut`, then the timer, in one task;
/// None when the timer fired first.
pub(super) async fn drive<F: Future>(
    driver: &mut Option<Pin<Box<Driver>>>,
    mut timer: Pin<&mut Sleep>,
    fut: F,
) -> Option<F::Output> {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        if let Some(d) = driver.as_mut() {
            if d.as_mut().poll(cx).is_ready() {
                // Closed (cleanly or not): what it delivered stays readable.
                *driver = None;
            }
        }
        if let Poll::Ready(v) = fut.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        Poll::Pending
    })
    .await
}
