//! Server-sent events: a minimal line splitter fed straight from the socket
//! (no line-length cap: aiohttp's 64 KB readline limit is what collapsed
//! vLLM's client at long contexts) and the parser of one OpenAI-style chunk,
//! including the speculative-decoding fields servers attach (llama.cpp and
//! llm-sim `timings`, SGLang `meta_info`). Pure code: unit-tested on
//! fixtures copied from the servers' real responses.

use serde::Deserialize;

/// Accumulates bytes and yields complete lines (without `\r\n`/`\n`).
#[derive(Default)]
pub struct LineSplitter {
    buf: Vec<u8>,
    /// Start of the first unconsumed byte.
    start: usize,
    /// Where to resume the newline search (bytes before it have none).
    scan: usize,
}

impl LineSplitter {
    pub fn with_capacity(n: usize) -> Self {
        LineSplitter {
            buf: Vec::with_capacity(n),
            start: 0,
            scan: 0,
        }
    }

    /// Append bytes just read. Consumed lines are dropped first, so the
    /// buffer only grows when one line is longer than it.
    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// The next complete line, if any.
    pub fn next_line(&mut self) -> Option<&[u8]> {
        let hay = &self.buf[self.scan..];
        match hay.iter().position(|&b| b == b'\n') {
            None => {
                self.scan = self.buf.len();
                None
            }
            Some(i) => {
                let end = self.scan + i;
                let s = self.start;
                self.start = end + 1;
                self.scan = end + 1;
                let mut line = &self.buf[s..end];
                if line.last() == Some(&b'\r') {
                    line = &line[..line.len() - 1];
                }
                Some(line)
            }
        }
    }

    /// Bytes after the last newline (an unterminated tail at EOF).
    pub fn rest(&self) -> &[u8] {
        &self.buf[self.start..]
    }
}

/// What one SSE line is.
#[derive(Debug, PartialEq)]
pub enum Line<'a> {
    /// `data: {...}` payload.
    Data(&'a [u8]),
    /// `data: [DONE]`.
    Done,
    /// Blank line, comment, `event:`/`id:`/`retry:` field: nothing to do.
    Other,
}

pub fn classify(line: &[u8]) -> Line<'_> {
    let Some(rest) = line.strip_prefix(b"data:") else {
        return Line::Other;
    };
    let rest = rest.strip_prefix(b" ").unwrap_or(rest);
    if rest.trim_ascii() == b"[DONE]" {
        Line::Done
    } else {
        Line::Data(rest)
    }
}

/// Token usage as the OpenAI API reports it.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

/// llama.cpp's (and llm-sim's) per-request timings, the fields we use.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq)]
pub struct Timings {
    #[serde(default)]
    pub draft_n: Option<u64>,
    #[serde(default)]
    pub draft_n_accepted: Option<u64>,
    /// Prompt processing time as the server measured it (llama.cpp); in
    /// llm-sim, its own TTFT, which lets the bench separate client error
    /// from server lateness.
    #[serde(default)]
    pub prompt_ms: Option<f64>,
}

/// SGLang's per-request `meta_info`, the speculative fields.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq)]
pub struct MetaInfo {
    #[serde(default)]
    pub spec_verify_ct: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub spec_accept_token_num: Option<u64>,
    #[serde(default)]
    pub spec_draft_token_num: Option<u64>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default, borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default, borrow)]
    message: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    meta_info: Option<MetaInfo>,
}

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(default)]
    meta_info: Option<MetaInfo>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// One parsed chunk (streamed) or whole response (non-streamed).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Chunk {
    /// Bytes of generated text (content, reasoning content, text): the
    /// first chunk with any is the first token (a role-only or empty chunk
    /// is not, vLLM PR 3768; reasoning counts, guidellm issue 737).
    pub text_len: usize,
    /// Tool-call deltas count as generated output too.
    pub has_tool_call: bool,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    pub timings: Option<Timings>,
    pub meta_info: Option<MetaInfo>,
    /// An `error` object inside the stream (vLLM and SGLang send these).
    pub error: Option<String>,
}

impl Chunk {
    pub fn generated(&self) -> bool {
        self.text_len > 0 || self.has_tool_call
    }
}

fn len_of(s: &Option<std::borrow::Cow<'_, str>>) -> usize {
    s.as_ref().map_or(0, |s| s.len())
}

/// Parse one chunk's JSON. Err on anything that is not a JSON object.
pub fn parse_chunk(data: &[u8]) -> Result<Chunk, String> {
    let raw: RawChunk = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let mut c = Chunk {
        usage: raw.usage,
        timings: raw.timings,
        meta_info: raw.meta_info,
        error: raw.error.map(|e| match e {
            serde_json::Value::String(s) => s,
            other => other
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
                .unwrap_or_else(|| other.to_string()),
        }),
        ..Chunk::default()
    };
    for ch in &raw.choices {
        c.text_len += len_of(&ch.text);
        for d in [&ch.delta, &ch.message].into_iter().flatten() {
            c.text_len += len_of(&d.content) + len_of(&d.reasoning_content) + len_of(&d.reasoning);
            c.has_tool_call |= d.tool_calls.is_some();
        }
        if ch.finish_reason.is_some() {
            c.finish_reason.clone_from(&ch.finish_reason);
        }
        if c.meta_info.is_none() {
            c.meta_info = ch.meta_info;
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitter_handles_split_and_long_lines() {
        let mut s = LineSplitter::with_capacity(8);
        s.push(b"data: {\"a\"");
        assert!(s.next_line().is_none());
        s.push(b":1}\r\n\r\ndata: [DONE]\n");
        assert_eq!(s.next_line(), Some(&b"data: {\"a\":1}"[..]));
        assert_eq!(s.next_line(), Some(&b""[..]));
        assert_eq!(s.next_line(), Some(&b"data: [DONE]"[..]));
        assert!(s.next_line().is_none());
        // A line far longer than the buffer (no 64 KB cap).
        let long = vec![b'x'; 200_000];
        s.push(&long);
        s.push(b"\n");
        assert_eq!(s.next_line().unwrap().len(), 200_000);
    }

    #[test]
    fn classify_lines() {
        assert_eq!(classify(b"data: [DONE]"), Line::Done);
        assert_eq!(classify(b"data:{}"), Line::Data(b"{}"));
        assert_eq!(classify(b": ping"), Line::Other);
        assert_eq!(classify(b"event: x"), Line::Other);
    }

    #[test]
    fn role_chunk_is_not_generated_text() {
        let c =
            parse_chunk(br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#)
                .unwrap();
        assert!(!c.generated());
        let c = parse_chunk(br#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#).unwrap();
        assert!(c.generated());
    }

    #[test]
    fn malformed_chunk_is_an_error() {
        assert!(parse_chunk(b"{not json").is_err());
        assert!(parse_chunk(b"[1,2]").is_err());
    }
}
