//! What one request produced: the sample a level collects, and the kinds
//! of failure (their names are the keys of a bench record's `errors`).

use std::time::Instant;

use crate::sse::{MetaInfo, Timings, Usage};

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

/// Why one request failed: the kind that is counted (the record's `errors`
/// key) and the detail line kept beside it. One value rather than an
/// `(ErrorKind, String)` pair, so `?` carries both and the kind cannot be
/// dropped on the way to `Sample::fail_with`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}: {detail}", kind_name(kind))]
pub struct RequestError {
    pub kind: ErrorKind,
    pub detail: String,
}

impl RequestError {
    pub fn new(kind: ErrorKind, detail: impl Into<String>) -> Self {
        RequestError {
            kind,
            detail: detail.into(),
        }
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
    /// Cancelled on purpose (`--cancel-rate`): not a failure, no tokens.
    pub cancelled: bool,
    /// `--sessions`: which session and turn this request is.
    pub turn: Option<TurnId>,
    /// `--sessions`: the reply's text, gathered when this is Some (the
    /// next turn sends it back); None leaves the text unread.
    pub reply: Option<String>,
}

/// A request's place in a multi-turn session (`--sessions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnId {
    /// The session's number in the file.
    pub session: u32,
    /// The turn's number in its session; 0 is the first.
    pub turn: u32,
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
            cancelled: false,
            turn: None,
            reply: None,
        }
    }

    /// Record `e` as this request's failure.
    pub fn fail_with(&mut self, e: RequestError) {
        self.fail(e.kind, e.detail);
    }

    pub fn fail(&mut self, kind: ErrorKind, detail: impl Into<String>) {
        self.done = Instant::now();
        self.error = Some(kind);
        let mut d: String = detail.into();
        d.truncate(300);
        self.detail = Some(d);
    }
}
