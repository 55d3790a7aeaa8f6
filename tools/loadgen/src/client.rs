//! One request, start to finish, on the calling thread: send, read the SSE
//! stream with a timestamp taken right after each socket read returns, and
//! classify failures by kind. Blocking I/O on a thread per in-flight
//! request keeps the clock next to the socket: no event loop stands
//! between a chunk's arrival and its timestamp.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::sse::{self, Chunk, Line, LineSplitter, MetaInfo, Timings, Usage};

/// Everything a request needs that does not change between requests.
pub struct Target {
    pub agent: ureq::Agent,
    /// Full endpoint URL (`.../v1/completions`).
    pub url: String,
    /// `Bearer ...` header value; never printed.
    pub auth: Option<String>,
    pub stream: bool,
    pub request_timeout: Duration,
}

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
    /// A data line that is not a JSON object, or an unparsable body.
    Malformed,
    /// The connection ended before the response was complete.
    Cut,
    /// The server sent an `error` object inside a 200 stream.
    StreamError,
    /// Still in flight when the level ended (Ctrl-C or level deadline).
    Abandoned,
    /// The client itself failed (could not start a thread).
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

fn io_kind(e: &std::io::Error) -> ErrorKind {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::TimedOut | K::WouldBlock => ErrorKind::Timeout,
        _ => ErrorKind::Cut,
    }
}

/// A pooled keep-alive connection the server closed while idle: the
/// request fails before any response byte with EOF or reset. llama-server
/// closes its side after a streamed response although it says keep-alive.
fn stale_connection(tr: &ureq::Transport) -> bool {
    use std::io::ErrorKind as K;
    let io = std::error::Error::source(tr).and_then(|e| e.downcast_ref::<std::io::Error>());
    match io {
        Some(e) => matches!(
            e.kind(),
            K::UnexpectedEof | K::ConnectionReset | K::BrokenPipe | K::ConnectionAborted
        ),
        None => tr.to_string().contains("Unexpected EOF"),
    }
}

/// Retries of a request that met a stale pooled connection; the server
/// never saw it, so a retry on a fresh connection is the same request.
const STALE_RETRIES: u32 = 3;

/// Send `body` and fill `s` with what came back.
pub fn execute(t: &Target, body: &[u8], s: &mut Sample) {
    let mut attempt = 0;
    let resp = loop {
        let mut req = t
            .agent
            .post(&t.url)
            .set("Content-Type", "application/json")
            .set(
                "Accept",
                if t.stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            );
        if let Some(a) = &t.auth {
            req = req.set("Authorization", a);
        }
        s.sent = Instant::now();
        match req.send_bytes(body) {
            Ok(r) => break r,
            Err(ureq::Error::Status(code, r)) => {
                let text = r.into_string().unwrap_or_default();
                return s.fail(ErrorKind::Http(code), text);
            }
            Err(ureq::Error::Transport(tr)) if attempt < STALE_RETRIES && stale_connection(&tr) => {
                attempt += 1;
            }
            Err(ureq::Error::Transport(tr)) => {
                let kind = match tr.kind() {
                    ureq::ErrorKind::ConnectionFailed | ureq::ErrorKind::Dns => ErrorKind::Connect,
                    _ => match std::error::Error::source(&tr)
                        .and_then(|e| e.downcast_ref::<std::io::Error>())
                    {
                        Some(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
                            ErrorKind::Connect
                        }
                        Some(io) => io_kind(io),
                        None => ErrorKind::Cut,
                    },
                };
                return s.fail(kind, tr.to_string());
            }
        }
    };
    let deadline = s.sent + t.request_timeout;
    let reader = resp.into_reader();
    if t.stream {
        read_stream(reader, s, deadline);
    } else {
        read_whole(reader, s, deadline);
    }
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

fn read_stream(mut reader: Box<dyn Read + Send + Sync>, s: &mut Sample, deadline: Instant) {
    let mut buf = [0u8; 8192];
    let mut lines = LineSplitter::with_capacity(8192);
    let mut done_at: Option<Instant> = None;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(n) => n,
            Err(e) if done_at.is_some() => {
                // The response was complete; a close after [DONE] is fine.
                let _ = e;
                break;
            }
            Err(e) => return s.fail(io_kind(&e), e.to_string()),
        };
        // The timestamp for every line in these bytes: they arrived together.
        let now = Instant::now();
        if n == 0 {
            break;
        }
        if done_at.is_some() {
            continue; // drain to EOF so the connection returns to the pool
        }
        lines.push(&buf[..n]);
        while let Some(line) = lines.next_line() {
            match sse::classify(line) {
                Line::Done => done_at = Some(now),
                Line::Other => {}
                Line::Data(d) => {
                    let c = match sse::parse_chunk(d) {
                        Ok(c) => c,
                        Err(e) => {
                            s.chunks.clear();
                            return s.fail(ErrorKind::Malformed, e);
                        }
                    };
                    if let Some(err) = &c.error {
                        return s.fail(ErrorKind::StreamError, err.clone());
                    }
                    if c.generated() {
                        let us = now.duration_since(s.sent).as_micros();
                        s.chunks.push(crate::client::ChunkMark {
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
        }
        if done_at.is_none() && now >= deadline {
            return s.fail(ErrorKind::Timeout, "request timeout");
        }
    }
    match done_at {
        Some(t) => s.done = t,
        None => {
            // No [DONE]: complete only if the server said why it finished.
            if s.finish_reason.is_some() && lines.rest().trim_ascii().is_empty() {
                s.done = Instant::now();
            } else {
                s.fail(ErrorKind::Cut, "stream ended before [DONE]");
            }
        }
    }
}

fn read_whole(mut reader: Box<dyn Read + Send + Sync>, s: &mut Sample, deadline: Instant) {
    let mut body = Vec::with_capacity(4096);
    let mut buf = [0u8; 8192];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) => return s.fail(io_kind(&e), e.to_string()),
        }
        if Instant::now() >= deadline {
            return s.fail(ErrorKind::Timeout, "request timeout");
        }
    }
    let now = Instant::now();
    match sse::parse_chunk(&body) {
        Err(e) => s.fail(ErrorKind::Malformed, e),
        Ok(c) if c.error.is_some() => s.fail(ErrorKind::StreamError, c.error.unwrap_or_default()),
        Ok(c) => {
            s.done = now;
            s.chunks.push(ChunkMark {
                at_us: now.duration_since(s.sent).as_micros().min(u32::MAX as u128) as u32,
                text_len: c.text_len as u32,
                cum_tokens: None,
            });
            absorb(s, &c);
        }
    }
}

/// The shared HTTP agent: keep-alive pool as large as the concurrency (the
/// default per-host pool of 1 would open a connection per request), idle
/// timeout between bytes, no proxy lookups.
pub fn agent(pool: usize, idle: Duration, connect: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .max_idle_connections(pool.max(1))
        .max_idle_connections_per_host(pool.max(1))
        .timeout_read(idle)
        .timeout_write(idle)
        .timeout_connect(connect)
        .user_agent(concat!("sweepkit-loadgen/", env!("CARGO_PKG_VERSION")))
        .try_proxy_from_env(false)
        .build()
}

/// Request bodies share everything but the prompt: keep them as shared
/// bytes so a request costs no JSON building at send time.
pub type Body = Arc<[u8]>;
