//! Server-sent events: a minimal line splitter fed straight from the socket
//! (no line-length cap: aiohttp's 64 KB readline limit is what collapsed
//! vLLM's client at long contexts) and the parser of one OpenAI-style chunk,
//! including the speculative-decoding fields servers attach (llama.cpp and
//! llm-sim `timings`, SGLang `meta_info`). Pure code: unit-tested on
//! fixtures copied from the servers' real responses.

use serde::Deserialize;

/// Splits bytes read off the socket into lines (without `\r\n`/`\n`).
/// Complete lines are handed out straight from the bytes just read; only
/// an unterminated tail is copied, to wait for the rest of its line.
#[derive(Default)]
pub struct LineSplitter {
    /// The unterminated tail of earlier reads.
    buf: Vec<u8>,
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl LineSplitter {
    /// Call `f` on every line completed by `data`, in order; keep the
    /// unterminated rest. `f` returns false to stop early (the bytes after
    /// that line are dropped).
    pub fn feed<E>(
        &mut self,
        mut data: &[u8],
        mut f: impl FnMut(&[u8]) -> Result<bool, E>,
    ) -> Result<(), E> {
        if !self.buf.is_empty() {
            let Some(i) = memchr::memchr(b'\n', data) else {
                self.buf.extend_from_slice(data);
                return Ok(());
            };
            self.buf.extend_from_slice(&data[..i]);
            data = &data[i + 1..];
            let more = f(strip_cr(&self.buf))?;
            self.buf.clear();
            if !more {
                return Ok(());
            }
        }
        while let Some(i) = memchr::memchr(b'\n', data) {
            if !f(strip_cr(&data[..i]))? {
                return Ok(());
            }
            data = &data[i + 1..];
        }
        self.buf.extend_from_slice(data);
        Ok(())
    }

    /// Bytes after the last newline (an unterminated tail at EOF).
    pub fn rest(&self) -> &[u8] {
        &self.buf
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

/// SGLang's per-request `meta_info` (native `/generate`), the fields we
/// use. Built in the tokenizer manager's `_handle_batch_output`
/// (python/sglang/srt/managers/tokenizer_manager.py; newer versions:
/// tokenizer_manager_components/output_processor.py): every chunk carries
/// the running `completion_tokens` and `prompt_tokens`; the last one adds
/// `spec_verify_ct` and the draft counts (`_calculate_spec_decoding_metrics`,
/// newer `spec_decoding_meta.fill_spec_decoding_meta`) when the server
/// speculates. The OpenAI adapters (serving_completions.py,
/// serving_chat.py) build their chunks without it.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct MetaInfo {
    pub spec_verify_ct: Option<u64>,
    pub completion_tokens: Option<u64>,
    pub prompt_tokens: Option<u64>,
    /// Accepted draft tokens: `spec_accept_token_num` (older) or
    /// `spec_num_correct_drafts` (newer).
    pub spec_accept_token_num: Option<u64>,
    /// Draft tokens proposed: `spec_draft_token_num` (older) or
    /// `spec_num_proposed_drafts` (newer).
    pub spec_draft_token_num: Option<u64>,
}

/// `meta_info.finish_reason`: an object such as `{"type": "length",
/// "length": 7}` (SGLang's `FINISH_LENGTH.to_json`), or null while running.
#[derive(Deserialize)]
#[serde(untagged)]
enum FinishReason {
    Text(String),
    Typed {
        #[serde(rename = "type")]
        kind: String,
    },
    Other(serde::de::IgnoredAny),
}

/// `meta_info` as sent; both spellings of the draft counts are separate
/// fields (newer SGLang sends old and new names side by side, which a
/// serde alias would reject as a duplicate).
#[derive(Deserialize, Default)]
struct RawMeta {
    #[serde(default)]
    spec_verify_ct: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    spec_accept_token_num: Option<u64>,
    #[serde(default)]
    spec_draft_token_num: Option<u64>,
    #[serde(default)]
    spec_num_correct_drafts: Option<u64>,
    #[serde(default)]
    spec_num_proposed_drafts: Option<u64>,
    #[serde(default)]
    finish_reason: Option<FinishReason>,
}

impl RawMeta {
    fn meta(&self) -> MetaInfo {
        MetaInfo {
            spec_verify_ct: self.spec_verify_ct,
            completion_tokens: self.completion_tokens,
            prompt_tokens: self.prompt_tokens,
            spec_accept_token_num: self.spec_accept_token_num.or(self.spec_num_correct_drafts),
            spec_draft_token_num: self.spec_draft_token_num.or(self.spec_num_proposed_drafts),
        }
    }

    fn finish(&self) -> Option<String> {
        match self.finish_reason.as_ref()? {
            FinishReason::Text(s) => Some(s.clone()),
            FinishReason::Typed { kind } => Some(kind.clone()),
            FinishReason::Other(_) => None,
        }
    }
}

/// The byte length of a JSON string (after unescaping), read without
/// copying it or checking its UTF-8: only the length is needed.
#[derive(Default, Clone, Copy)]
struct TextLen(usize);

impl<'de> Deserialize<'de> for TextLen {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = TextLen;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_bytes<E>(self, b: &[u8]) -> Result<TextLen, E> {
                Ok(TextLen(b.len()))
            }
            fn visit_str<E>(self, s: &str) -> Result<TextLen, E> {
                Ok(TextLen(s.len()))
            }
        }
        d.deserialize_bytes(V)
    }
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<TextLen>,
    #[serde(default)]
    reasoning_content: Option<TextLen>,
    #[serde(default)]
    reasoning: Option<TextLen>,
    #[serde(default)]
    tool_calls: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    text: Option<TextLen>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    message: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    meta_info: Option<RawMeta>,
}

#[derive(Deserialize)]
struct RawChunk {
    #[serde(default)]
    choices: Vec<Choice>,
    /// SGLang `/generate`: the text so far (or since the last chunk with
    /// `--incremental-streaming-output`).
    #[serde(default)]
    text: Option<TextLen>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(default)]
    meta_info: Option<RawMeta>,
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

fn len_of(s: &Option<TextLen>) -> usize {
    s.map_or(0, |t| t.0)
}

/// Parse one chunk's JSON. Err on anything that is not a JSON object.
pub fn parse_chunk(data: &[u8]) -> Result<Chunk, String> {
    let raw: RawChunk = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let mut c = Chunk {
        text_len: len_of(&raw.text),
        usage: raw.usage,
        timings: raw.timings,
        meta_info: raw.meta_info.as_ref().map(RawMeta::meta),
        finish_reason: raw.meta_info.as_ref().and_then(RawMeta::finish),
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
            c.meta_info = ch.meta_info.as_ref().map(RawMeta::meta);
        }
    }
    // SGLang's `/generate` has no `usage`: its `meta_info` counts are the
    // server's own (cumulative on every chunk, like vLLM's
    // continuous_usage_stats).
    if c.usage.is_none() {
        if let Some(m) = c.meta_info.filter(|m| m.completion_tokens.is_some()) {
            c.usage = Some(Usage {
                prompt_tokens: m.prompt_tokens,
                completion_tokens: m.completion_tokens,
            });
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitter_handles_split_and_long_lines() {
        fn feed(s: &mut LineSplitter, data: &[u8]) -> Vec<Vec<u8>> {
            let mut out = Vec::new();
            s.feed::<()>(data, |l| {
                out.push(l.to_vec());
                Ok(true)
            })
            .unwrap();
            out
        }
        let mut s = LineSplitter::default();
        assert!(feed(&mut s, b"data: {\"a\"").is_empty());
        assert_eq!(
            feed(&mut s, b":1}\r\n\r\ndata: [DONE]\nda"),
            [&b"data: {\"a\":1}"[..], b"", b"data: [DONE]"]
        );
        assert_eq!(s.rest(), b"da");
        assert_eq!(feed(&mut s, b"ta: x\r"), Vec::<Vec<u8>>::new());
        assert_eq!(feed(&mut s, b"\n"), [b"data: x"]);
        assert!(s.rest().is_empty());
        // A line far longer than any read (no 64 KB cap).
        let long = vec![b'x'; 200_000];
        assert!(feed(&mut s, &long).is_empty());
        assert_eq!(feed(&mut s, b"\n")[0].len(), 200_000);
        // Stopping early drops the rest.
        let mut n = 0;
        s.feed::<()>(b"a\nb\nc", |_| {
            n += 1;
            Ok(false)
        })
        .unwrap();
        assert_eq!((n, s.rest()), (1, &b""[..]));
    }

    #[test]
    fn text_length_counts_unescaped_bytes() {
        let c = parse_chunk(br#"{"choices":[{"text":"a\"b\u00e9"}]}"#).unwrap();
        assert_eq!(c.text_len, 5); // a, ", b and a 2-byte e-acute
        assert!(parse_chunk(br#"{"choices":[{"text":5}]}"#).is_err());
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
