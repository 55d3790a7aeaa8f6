//! One request on a connection: send it, retry a stale kept-alive close,
//! read the response under the request and idle deadlines, and classify
//! what went wrong.

use std::io;
use std::pin::Pin;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::Response;
use tokio::time::Sleep;

use super::conn::{drive, Conn, Target};
use super::stream::{whole, StreamState};
use super::{Body, ErrorKind, Sample};

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
                Err(e) => return s.fail_with(e),
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
        Reader::Stream(StreamState::new(t.cumulative_text))
    } else {
        Reader::Whole(Vec::with_capacity(4096))
    };
    loop {
        let frame = match drive(&mut c.driver, timer.as_mut(), body.frame()).await {
            None => return cut(&state, s, ErrorKind::Timeout, "request timeout".into()),
            Some(None) => break,
            Some(Some(Err(e))) => return cut(&state, s, error_kind(&e), e.to_string()),
            Some(Some(Ok(f))) => f,
        };
        let Ok(data) = frame.into_data() else {
            continue; // trailers
        };
        let at = c.stamp();
        match &mut state {
            Reader::Status(buf) | Reader::Whole(buf) => buf.extend_from_slice(&data),
            Reader::Stream(st) => {
                if let Err(e) = st.feed(&data, at, s) {
                    s.chunks.clear();
                    s.fail_with(e);
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

/// The body stopped before its end (timer or error). A stream already
/// complete at `[DONE]` only misses its close, which is fine; anything
/// else fails. False: the connection cannot carry another request.
fn cut(state: &Reader, s: &mut Sample, kind: ErrorKind, msg: String) -> bool {
    match state {
        Reader::Stream(StreamState {
            done_at: Some(done),
            ..
        }) => s.done = *done,
        _ => s.fail(kind, msg),
    }
    false
}

enum Reader {
    /// A non-2xx response: its body is the error's detail.
    Status(Vec<u8>),
    Stream(StreamState),
    Whole(Vec<u8>),
}
