//! Response parsing: the SSE reader of a streamed response (chunk marks
//! stamped when their bytes arrived) and the reader of a whole body.

use std::time::Instant;

use super::{ChunkMark, ErrorKind, RequestError, Sample};
use crate::sse::{self, Chunk, Line, LineSplitter};

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
    /// See [`super::Target::cumulative_text`].
    pub cumulative_text: bool,
    /// Text length so far, when it is cumulative.
    seen_text: usize,
}

impl StreamState {
    /// A reader for one response; see [`super::Target::cumulative_text`].
    pub fn new(cumulative_text: bool) -> StreamState {
        StreamState {
            cumulative_text,
            ..StreamState::default()
        }
    }

    /// Take bytes that arrived at `at`. Err ends the request.
    pub fn feed(&mut self, data: &[u8], at: Instant, s: &mut Sample) -> Result<(), RequestError> {
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
                    let mut c = sse::parse_chunk(d)
                        .map_err(|e| RequestError::new(ErrorKind::Malformed, e))?;
                    if let Some(err) = &c.error {
                        return Err(RequestError::new(ErrorKind::StreamError, err.clone()));
                    }
                    if let Some(r) = s.reply.as_mut() {
                        crate::reply_text::gather(r, d, cumulative);
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
pub(super) fn whole(body: &[u8], now: Instant, s: &mut Sample) {
    match sse::parse_chunk(body) {
        Err(e) => s.fail(ErrorKind::Malformed, e),
        Ok(c) if c.error.is_some() => s.fail(ErrorKind::StreamError, c.error.unwrap_or_default()),
        Ok(c) => {
            if let Some(r) = s.reply.as_mut() {
                *r = crate::reply_text::of_chunk(body);
            }
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
