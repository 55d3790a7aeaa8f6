//! One request, start to finish: send over a kept-alive HTTP/1.1 connection
//! (hyper), read the SSE stream, and classify failures by kind.
//!
//! Timing: the connection's driver (hyper's `Connection` future) and the
//! request's own future are polled by the same task, driver first, so a
//! frame reaches the request in the poll that read it off the socket, and
//! its timestamp is when that read's bytes reached the socket (the kernel's
//! receive stamp, [`TimedIo`]), not when the task got round to parsing it. One event loop serves every
//! request in flight: no thread per request, no context switch per chunk.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, Uri};
use hyper_util::rt::TokioIo;
use sweepkit::rxstamp::AtomicInstant;
use tokio::net::TcpStream;
use tokio::time::Sleep;

use crate::sse::{self, Chunk, Line, LineSplitter, MetaInfo, Timings, Usage};

/// Why a request failed. The names are the keys of the record's `errors`.
pub fn kind_name(k: &ErrorKind) -> String {
    match k {
        ErrorKind::Http(s) => format!("http_{s}"),
        ErrorKind::Connect => "connect".into(),
        ErrorKind::Timeout => "timeout".into(),
        ErrorKind::Malformed => "malformed_stream".into(),
        ErrorKind::Cut => "cut_stream".into(),
        ErrorKind::StreamError => "stream_error".into(),
        ErrorKind::Abandoned => "abandoned".into(),
        ErrorKind::Client => "client".into(),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum ErrorKind {
    /// Non-2xx status.
    Http(u16),
    /// Refused, unreachable, DNS: nothing was sent.
    Connect,
    /// `--request-timeout` (total) or `--idle-timeout` (between bytes).
    Timeout,
    /// A data line that is not a JSON object, an unparsable body, or a
    /// response that is not HTTP.
    Malformed,
    /// The connection ended before the response was complete.
    Cut,
    /// The server sent an `error` object inside a 200 stream.
    StreamError,
    /// Still in flight when the level ended (Ctrl-C or level deadline).
    Abandoned,
    /// The client itself failed.
    Client,
}

/// One content chunk: microseconds after send, and the server's running
/// completion-token count when it sent one (`continuous_usage_stats`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChunkMark {
    pub at_us: u32,
    pub text_len: u32,
    pub cum_tokens: Option<u32>,
}

/// What happened to one request.
#[derive(Debug, Clone)]
pub struct Sample {
    pub index: u64,
    pub scheduled: Instant,
    pub sent: Instant,
    pub done: Instant,
    /// When an in-flight slot was free (open loop with a cap); else `scheduled`.
    pub slot: Instant,
    pub error: Option<ErrorKind>,
    pub detail: Option<String>,
    pub chunks: Vec<ChunkMark>,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    pub timings: Option<Timings>,
    pub meta_info: Option<MetaInfo>,
    /// Tokens asked for (max_tokens or the prompt's output_tokens).
    pub asked_tokens: Option<u64>,
    /// Input length we made the prompt (for when usage is missing).
    pub prompt_tokens_hint: u64,
}

impl Sample {
    pub fn new(index: u64, scheduled: Instant, slot: Instant) -> Sample {
        let now = Instant::now();
        Sample {
            index,
            scheduled,
            slot,
            sent: now,
            done: now,
            error: None,
            detail: None,
            chunks: Vec::new(),
            usage: None,
            finish_reason: None,
            timings: None,
            meta_info: None,
            asked_tokens: None,
            prompt_tokens_hint: 0,
        }
    }

    pub fn fail(&mut self, kind: ErrorKind, detail: impl Into<String>) {
        self.done = Instant::now();
        self.error = Some(kind);
        let mut d: String = detail.into();
        d.truncate(300);
        self.detail = Some(d);
    }
}

/// Request bodies share everything but the prompt: prepared once as
/// reference-counted bytes, so a request costs no JSON building or copy.
pub type Body = Bytes;

/// Everything a request needs that does not change between requests, and
/// the idle connections kept alive between levels (warmup to measurement).
pub struct Target {
    addrs: Vec<SocketAddr>,
    /// Origin-form request target (`/v1/completions`).
    path: Uri,
    /// Host, Content-Type, Accept, User-Agent, Authorization (sensitive).
    headers: HeaderMap,
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

    fn request(&self, body: Body) -> Request<Full<Bytes>> {
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

    async fn connect(&self) -> Result<Conn, (ErrorKind, String)> {
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
                        .map_err(|e| (ErrorKind::Client, e.to_string()))?;
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
        Err((
            ErrorKind::Connect,
            last.unwrap_or_else(|| "no address to connect to".into()),
        ))
    }
}

type Driver = http1::Connection<TokioIo<TimedIo>, Full<Bytes>>;

/// One keep-alive HTTP/1.1 connection and the future that drives it.
pub struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    /// None once the connection has ended (closed by either side).
    driver: Option<Pin<Box<Driver>>>,
    /// When the bytes of the last read that returned any arrived (the
    /// kernel's receive stamp, [`sweepkit::rxstamp`], else the clock right
    /// after the read).
    last_read: Arc<AtomicInstant>,
    /// Has it carried a request already (a stale close is then possible)?
    reused: bool,
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
    fn stamp(&self) -> Instant {
        let now = Instant::now();
        self.last_read.load().map_or(now, |t| t.min(now))
    }
}

/// A connection's stream: each read notes when its bytes arrived.
type TimedIo = sweepkit::rxstamp::Stamped<Arc<AtomicInstant>>;

/// Poll the connection's driver, then `fut`, then the timer, in one task;
/// None when the timer fired first.
async fn drive<F: Future>(
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

/// The io::Error under a hyper error, if there is one.
fn io_source(e: &hyper::Error) -> Option<&io::Error> {
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        if let Some(io) = s.downcast_ref::<io::Error>() {
            return Some(io);
        }
        src = s.source();
    }
    None
}

fn error_kind(e: &hyper::Error) -> ErrorKind {
    if e.is_parse() {
        return ErrorKind::Malformed;
    }
    match io_source(e).map(io::Error::kind) {
        Some(io::ErrorKind::TimedOut) => ErrorKind::Timeout,
        _ => ErrorKind::Cut,
    }
}

/// A kept-alive connection the server closed while it sat idle: the
/// request fails before any response byte. llama-server closes its side
/// after a streamed response although it says keep-alive.
fn stale(e: &hyper::Error) -> bool {
    use io::ErrorKind as K;
    e.is_incomplete_message()
        || e.is_canceled()
        || e.is_closed()
        || io_source(e).is_some_and(|io| {
            matches!(
                io.kind(),
                K::UnexpectedEof | K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted
            )
        })
}

/// Retries of a request that met a stale kept-alive connection; the
/// server never saw it, so a retry on a fresh connection is the same request.
const STALE_RETRIES: u32 = 3;

/// How long the body's end may take after `[DONE]`.
const DRAIN: Duration = Duration::from_millis(500);

/// When the next byte must have come by: the request deadline or the idle
/// timeout from `now`, whichever is first.
fn next_deadline(t: &Target, s: &Sample, now: Instant) -> tokio::time::Instant {
    tokio::time::Instant::from_std((s.sent + t.request_timeout).min(now + t.idle_timeout))
}

/// Send `body` on `conn` (or a new connection when it is None or closed)
/// and fill `s` with what came back. Leaves in `conn` the connection when
/// it can carry another request.
pub async fn execute(t: &Target, conn: &mut Option<Conn>, body: Body, s: &mut Sample) {
    let mut attempt = 0;
    loop {
        s.sent = Instant::now();
        let mut c = match conn.take().filter(|c| c.driver.is_some()) {
            Some(c) => c,
            None => match t.connect().await {
                Ok(c) => c,
                Err((kind, msg)) => return s.fail(kind, msg),
            },
        };
        let timer = tokio::time::sleep_until(next_deadline(t, s, s.sent));
        let mut timer = std::pin::pin!(timer);
        let sent = drive(
            &mut c.driver,
            timer.as_mut(),
            c.sender.send_request(t.request(body.clone())),
        )
        .await;
        let resp = match sent {
            None => return s.fail(ErrorKind::Timeout, "no response head before the timeout"),
            Some(Ok(r)) => r,
            Some(Err(e)) if c.reused && attempt < STALE_RETRIES && stale(&e) => {
                attempt += 1;
                continue;
            }
            Some(Err(e)) => return s.fail(error_kind(&e), e.to_string()),
        };
        c.reused = true;
        let complete = read_response(t, &mut c, timer, resp, s).await;
        if complete && c.driver.is_some() && !c.sender.is_closed() {
            *conn = Some(c);
        }
        return;
    }
}

/// Read the response into `s`. True when the body was read to its end
/// (the connection can carry the next request).
async fn read_response(
    t: &Target,
    c: &mut Conn,
    mut timer: Pin<&mut Sleep>,
    resp: Response<Incoming>,
    s: &mut Sample,
) -> bool {
    let status = resp.status();
    let mut body = resp.into_body();
    let mut state = if !status.is_success() {
        Reader::Status(Vec::new())
    } else if t.stream {
        Reader::Stream(StreamState {
            cumulative_text: t.cumulative_text,
            ..StreamState::default()
        })
    } else {
        Reader::Whole(Vec::with_capacity(4096))
    };
    loop {
        let frame = match drive(&mut c.driver, timer.as_mut(), body.frame()).await {
            None => {
                if let Reader::Stream(st) = &state {
                    if let Some(done) = st.done_at {
                        // Complete at [DONE]; only the close is missing.
                        s.done = done;
                        return false;
                    }
                }
                s.fail(ErrorKind::Timeout, "request timeout");
                return false;
            }
            Some(None) => break,
            Some(Some(Err(e))) => {
                if let Reader::Stream(st) = &state {
                    if let Some(done) = st.done_at {
                        s.done = done; // a close after [DONE] is fine
                        return false;
                    }
                }
                s.fail(error_kind(&e), e.to_string());
                return false;
            }
            Some(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        let at = c.stamp();
        match &mut state {
            Reader::Status(buf) | Reader::Whole(buf) => buf.extend_from_slice(&data),
            Reader::Stream(st) => {
                if let Err((kind, msg)) = st.feed(&data, at, s) {
                    s.chunks.clear();
                    s.fail(kind, msg);
                    return false;
                }
            }
        }
        let now = Instant::now();
        let mut next = next_deadline(t, s, now);
        if matches!(&state, Reader::Stream(st) if st.done_at.is_some()) {
            // Complete: wait only briefly for the body's end, so a server
            // that keeps the stream open after [DONE] costs a connection,
            // not an idle timeout per request.
            next = next.min(tokio::time::Instant::from_std(now + DRAIN));
        }
        timer.as_mut().reset(next);
    }
    match state {
        Reader::Status(buf) => {
            s.fail(
                ErrorKind::Http(status.as_u16()),
                String::from_utf8_lossy(&buf).into_owned(),
            );
        }
        Reader::Whole(buf) => {
            let now = c.stamp().max(s.sent);
            whole(&buf, now, s);
        }
        Reader::Stream(st) => st.finish(s),
    }
    true
}

enum Reader {
    /// A non-2xx response: its body is the error's detail.
    Status(Vec<u8>),
    Stream(StreamState),
    Whole(Vec<u8>),
}

/// Fold a parsed chunk's end-of-request fields into the sample.
fn absorb(s: &mut Sample, c: &Chunk) {
    if c.usage.is_some() {
        s.usage = c.usage;
    }
    if c.finish_reason.is_some() {
        s.finish_reason.clone_from(&c.finish_reason);
    }
    if c.timings.is_some() {
        s.timings = c.timings;
    }
    if c.meta_info.is_some() {
        s.meta_info = c.meta_info;
    }
}

/// The SSE reader of one streamed response.
#[derive(Default)]
pub struct StreamState {
    lines: LineSplitter,
    /// When the `[DONE]` line arrived.
    pub done_at: Option<Instant>,
    /// See [`Target::cumulative_text`].
    pub cumulative_text: bool,
    /// Text length so far, when it is cumulative.
    seen_text: usize,
}

impl StreamState {
    /// Take bytes that arrived at `at`. Err ends the request.
    pub fn feed(
        &mut self,
        data: &[u8],
        at: Instant,
        s: &mut Sample,
    ) -> Result<(), (ErrorKind, String)> {
        if self.done_at.is_some() {
            return Ok(()); // drained so the connection can be reused
        }
        let sent = s.sent;
        let done_at = &mut self.done_at;
        let (cumulative, seen) = (self.cumulative_text, &mut self.seen_text);
        self.lines.feed(data, |line| {
            match sse::classify(line) {
                Line::Done => {
                    *done_at = Some(at);
                    return Ok(false);
                }
                Line::Other => {}
                Line::Data(d) => {
                    let mut c = sse::parse_chunk(d).map_err(|e| (ErrorKind::Malformed, e))?;
                    if let Some(err) = &c.error {
                        return Err((ErrorKind::StreamError, err.clone()));
                    }
                    if cumulative {
                        let whole = c.text_len;
                        c.text_len = whole.saturating_sub(*seen);
                        *seen = (*seen).max(whole);
                    }
                    if c.generated() {
                        let us = at.saturating_duration_since(sent).as_micros();
                        s.chunks.push(ChunkMark {
                            at_us: us.min(u32::MAX as u128) as u32,
                            text_len: c.text_len.min(u32::MAX as usize) as u32,
                            cum_tokens: c
                                .usage
                                .and_then(|u| u.completion_tokens)
                                .map(|x| x.min(u32::MAX as u64) as u32),
                        });
                    }
                    absorb(s, &c);
                }
            }
            Ok(true)
        })
    }

    /// The body ended: complete at `[DONE]`, or without it when the server
    /// said why it finished and left no partial line.
    pub fn finish(self, s: &mut Sample) {
        match self.done_at {
            Some(t) => s.done = t,
            None if s.finish_reason.is_some() && self.lines.rest().trim_ascii().is_empty() => {
                s.done = Instant::now();
            }
            None => s.fail(ErrorKind::Cut, "stream ended before [DONE]"),
        }
    }
}

/// A whole (non-streamed) response body that arrived complete at `now`.
fn whole(body: &[u8], now: Instant, s: &mut Sample) {
    match sse::parse_chunk(body) {
        Err(e) => s.fail(ErrorKind::Malformed, e),
        Ok(c) if c.error.is_some() => s.fail(ErrorKind::StreamError, c.error.unwrap_or_default()),
        Ok(c) => {
            s.done = now;
            s.chunks.push(ChunkMark {
                at_us: now.duration_since(s.sent).as_micros().min(u32::MAX as u128) as u32,
                text_len: c.text_len.min(u32::MAX as usize) as u32,
                cum_tokens: None,
            });
            absorb(s, &c);
        }
    }
}

/// The runtime the load runs on: one thread by default, so requests cost
/// no cross-thread wakeups; more when one core cannot keep up.
pub fn runtime(threads: usize) -> io::Result<tokio::runtime::Runtime> {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("loadgen")
            .enable_all()
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_state_stamps_chunks_and_ends_at_done() {
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        s.sent = t0;
        let mut st = StreamState::default();
        let a = t0 + Duration::from_millis(5);
        st.feed(
            b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n",
            a,
            &mut s,
        )
        .unwrap();
        assert_eq!(s.chunks.len(), 1, "the role chunk is not a token");
        assert_eq!(s.chunks[0].at_us, 5000);
        let b = t0 + Duration::from_millis(9);
        st.feed(
            b"data: {\"choices\":[{\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\ndata: [DO",
            b,
            &mut s,
        )
        .unwrap();
        let d = t0 + Duration::from_millis(10);
        st.feed(b"NE]\n\n", d, &mut s).unwrap();
        st.finish(&mut s);
        assert!(s.error.is_none());
        assert_eq!(s.done, d);
        assert_eq!(s.finish_reason.as_deref(), Some("length"));
    }

    #[test]
    fn cumulative_text_counts_only_what_grew() {
        // SGLang /generate: each chunk's text is the whole text so far.
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        let mut st = StreamState {
            cumulative_text: true,
            ..StreamState::default()
        };
        st.feed(
            b"data: {\"text\":\"ab\",\"meta_info\":{\"completion_tokens\":1}}\n\n\
              data: {\"text\":\"ab\",\"meta_info\":{\"completion_tokens\":1}}\n\n\
              data: {\"text\":\"abcde\",\"meta_info\":{\"completion_tokens\":3}}\n\n",
            t0,
            &mut s,
        )
        .unwrap();
        let lens: Vec<u32> = s.chunks.iter().map(|c| c.text_len).collect();
        assert_eq!(lens, [2, 3], "a chunk that added nothing is no token");
        assert_eq!(s.chunks[1].cum_tokens, Some(3));
    }

    #[test]
    fn stream_without_done_or_reason_is_cut() {
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        let mut st = StreamState::default();
        st.feed(b"data: {\"choices\":[{\"text\":\"x\"}]}\n\n", t0, &mut s)
            .unwrap();
        st.finish(&mut s);
        assert_eq!(s.error, Some(ErrorKind::Cut));
    }

    #[test]
    fn malformed_and_error_chunks_end_the_request() {
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        let mut st = StreamState::default();
        let e = st.feed(b"data: {oops\n\n", t0, &mut s).unwrap_err();
        assert_eq!(e.0, ErrorKind::Malformed);
        let mut st = StreamState::default();
        let e = st
            .feed(b"data: {\"error\":{\"message\":\"boom\"}}\n\n", t0, &mut s)
            .unwrap_err();
        assert_eq!(e, (ErrorKind::StreamError, "boom".into()));
    }

    /// The design's claim: a chunk's time is when it reached the socket,
    /// even when the event loop is busy elsewhere at that moment.
    #[test]
    #[cfg(target_os = "linux")] // kernel receive stamps
    fn a_blocked_event_loop_does_not_delay_chunk_timestamps() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf).unwrap();
            let chunk = |c: &mut std::net::TcpStream, s: &str| {
                write!(c, "{:x}\r\n{s}\r\n", s.len()).unwrap();
            };
            c.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
                .unwrap();
            std::thread::sleep(Duration::from_millis(20));
            chunk(&mut c, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n");
            std::thread::sleep(Duration::from_millis(300));
            chunk(&mut c, "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n");
            c.write_all(b"0\r\n\r\n").unwrap();
        });
        let rt = runtime(1).unwrap();
        let d = Duration::from_secs(10);
        let t = Target::new(
            &format!("http://{addr}/v1/completions"),
            None,
            true,
            d,
            d,
            d,
        )
        .unwrap();
        // The kernel turns stamping on a moment after the first ask.
        std::thread::sleep(Duration::from_millis(200));
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        rt.block_on(async {
            // Hogs the only thread from 5 ms to 205 ms after the send; the
            // first chunk arrives at about 20 ms, in the middle of it.
            tokio::spawn(async {
                tokio::time::sleep(Duration::from_millis(5)).await;
                std::thread::sleep(Duration::from_millis(200));
            });
            let mut conn = None;
            execute(&t, &mut conn, Bytes::from_static(b"{}"), &mut s).await;
        });
        server.join().unwrap();
        assert!(s.error.is_none(), "{:?} {:?}", s.error, s.detail);
        assert_eq!(s.chunks.len(), 2);
        let first = s.chunks[0].at_us;
        assert!(
            (15_000..150_000).contains(&first),
            "first chunk stamped at {first} us; the loop was blocked until 205 ms"
        );
        assert!(s.chunks[1].at_us >= 300_000);
    }

    #[test]
    fn a_stream_left_open_after_done_completes_without_waiting_for_the_idle_timeout() {
        use std::io::{Read, Write};
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf).unwrap();
            let body = "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
            write!(
                c,
                "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n",
                body.len()
            )
            .unwrap();
            // Never the terminating chunk; hold the connection open.
            std::thread::sleep(Duration::from_secs(2));
        });
        let rt = runtime(1).unwrap();
        let long = Duration::from_secs(30);
        let t = Target::new(&format!("http://{addr}/x"), None, true, long, long, long).unwrap();
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        let mut conn = None;
        rt.block_on(execute(&t, &mut conn, Bytes::from_static(b"{}"), &mut s));
        assert!(s.error.is_none(), "{:?}", s.detail);
        assert_eq!(s.chunks.len(), 1);
        assert!(
            t0.elapsed() < Duration::from_millis(1500),
            "{:?}",
            t0.elapsed()
        );
        assert!(
            conn.is_none(),
            "an unfinished body cannot carry another request"
        );
        server.join().unwrap();
    }

    #[test]
    fn target_parses_urls_and_hides_the_key() {
        let d = Duration::from_secs(1);
        let t = Target::new(
            "http://127.0.0.1:8000/v1/completions",
            Some("Bearer sk-secret"),
            true,
            d,
            d,
            d,
        )
        .unwrap();
        assert_eq!(t.path, "/v1/completions");
        assert_eq!(t.headers[header::HOST], "127.0.0.1:8000");
        assert!(t.headers[header::AUTHORIZATION].is_sensitive());
        assert!(!format!("{:?}", t.headers).contains("sk-secret"));
        let t = Target::new("http://[::1]:9/x", None, true, d, d, d).unwrap();
        assert_eq!(t.addrs[0].port(), 9);
        assert!(Target::new("https://a/x", None, true, d, d, d).is_err());
    }
}
