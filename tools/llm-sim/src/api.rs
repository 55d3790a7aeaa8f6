//! OpenAI-compatible request parsing and response shapes (completions and
//! chat completions, streamed chunks and whole responses), plus the
//! llama.cpp-shaped `timings` object with the speculative stats.

use serde_json::{json, Value};

use crate::tokenize;

/// A parsed generation request.
#[derive(Debug, Clone)]
pub struct GenReq {
    pub chat: bool,
    pub prompt_tokens: u64,
    pub max_tokens: u64,
    pub ignore_eos: bool,
    pub temperature: f64,
    pub stream: bool,
    pub include_usage: bool,
    /// vLLM's `stream_options.continuous_usage_stats`: usage in every chunk.
    pub continuous_usage: bool,
    /// What the prompt says, for the prefix cache and content acceptance.
    pub content: Content,
}

/// The prompt's token ids and first word.
#[derive(Debug, Clone, Default)]
pub struct Content {
    pub ids: Vec<u32>,
    /// The first word (`--speculative-accept-by` keys on it).
    pub lead: Option<String>,
}

impl Content {
    /// The content of prompt text.
    pub fn of(text: &str) -> Content {
        Content {
            ids: tokenize::tokenize(text),
            lead: text.split_whitespace().next().map(str::to_string),
        }
    }
}

/// The prompt, walked and tokenized once: the text of a completions
/// `prompt` or of chat `messages` (their contents in order), or token ids
/// as given. Its token count is `ids.len()`.
fn content(chat: bool, v: &Value) -> Result<Content, ApiError> {
    if chat {
        return messages_content(&v["messages"]);
    }
    match &v["prompt"] {
        Value::String(s) => Ok(Content::of(s)),
        Value::Array(a) if a.iter().all(Value::is_u64) => Ok(Content {
            ids: a
                .iter()
                .filter_map(|x| x.as_u64())
                .map(|x| x as u32)
                .collect(),
            lead: None,
        }),
        Value::Array(a) if a.len() == 1 && a[0].is_string() => {
            Ok(Content::of(a[0].as_str().unwrap_or("")))
        }
        Value::Null => Err(ApiError::bad("prompt is required")),
        _ => Err(ApiError::bad(
            "prompt must be a string, one string in an array, or token ids",
        )),
    }
}

/// Chat `messages`' contents in order, a space after each message and
/// each part, so no two words run together.
fn messages_content(m: &Value) -> Result<Content, ApiError> {
    let msgs = m
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ApiError::bad("messages must be a non-empty array"))?;
    let mut text = String::new();
    for msg in msgs {
        match &msg["content"] {
            Value::String(s) => text.push_str(s),
            Value::Array(parts) => {
                for p in parts {
                    text.push_str(p["text"].as_str().unwrap_or(""));
                    text.push(' ');
                }
            }
            Value::Null => {}
            _ => return Err(ApiError::bad("message content must be a string or parts")),
        }
        text.push(' ');
    }
    Ok(Content::of(&text))
}

/// An HTTP error answer: status and OpenAI-style error JSON.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub kind: &'static str,
    pub message: String,
}

impl ApiError {
    pub fn bad(message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            kind: "BadRequestError",
            message: message.into(),
        }
    }

    pub fn body(&self) -> Value {
        json!({
            "object": "error",
            "error": {"message": self.message, "type": self.kind, "code": self.status},
            "message": self.message,
            "type": self.kind,
            "code": self.status,
            "simulated": true,
        })
    }
}

/// Parse a `/v1/completions` (chat = false) or `/v1/chat/completions` body.
pub fn parse(chat: bool, body: &[u8], context_length: u64) -> Result<GenReq, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad(format!("request body is not JSON: {e}")))?;
    if !v.is_object() {
        return Err(ApiError::bad("request body must be a JSON object"));
    }
    let content = content(chat, &v)?;
    let prompt_tokens = content.ids.len() as u64;
    let max_tokens = match v
        .get("max_completion_tokens")
        .or_else(|| v.get("max_tokens"))
    {
        None | Some(Value::Null) if chat => context_length.saturating_sub(prompt_tokens),
        None | Some(Value::Null) => 16,
        Some(m) => m
            .as_u64()
            .ok_or_else(|| ApiError::bad("max_tokens must be a non-negative integer"))?,
    };
    if max_tokens == 0 {
        return Err(ApiError::bad("max_tokens must be at least 1"));
    }
    if prompt_tokens + max_tokens > context_length {
        return Err(ApiError::bad(format!(
            "This model's maximum context length is {context_length} tokens. However, you \
             requested {} tokens ({prompt_tokens} in the messages, {max_tokens} in the \
             completion).",
            prompt_tokens + max_tokens
        )));
    }
    let flag = |k: &str| v[k].as_bool().unwrap_or(false);
    let temperature = match &v["temperature"] {
        Value::Null => 1.0, // OpenAI's and vLLM's default
        t => t
            .as_f64()
            .filter(|t| *t >= 0.0)
            .ok_or_else(|| ApiError::bad("temperature must be a non-negative number"))?,
    };
    Ok(GenReq {
        chat,
        prompt_tokens,
        max_tokens,
        ignore_eos: flag("ignore_eos"),
        temperature,
        stream: flag("stream"),
        include_usage: v["stream_options"]["include_usage"]
            .as_bool()
            .unwrap_or(false),
        continuous_usage: v["stream_options"]["continuous_usage_stats"]
            .as_bool()
            .unwrap_or(false),
        content,
    })
}

/// Per-request totals for usage and timings.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub draft_n: u64,
    pub draft_n_accepted: u64,
    pub ttft_ms: f64,
    pub decode_ms: f64,
}

impl Stats {
    pub fn usage(&self) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        })
    }

    /// SGLang's `UsageInfo` (`python/sglang/srt/entrypoints/openai/protocol.py`):
    /// the OpenAI fields plus `prompt_tokens_details` and `reasoning_tokens`.
    fn sglang_usage(&self) -> Value {
        let mut u = self.usage();
        u["prompt_tokens_details"] = Value::Null;
        u["reasoning_tokens"] = json!(0);
        u
    }

    /// llama.cpp's `timings` object, with its speculative counters.
    pub fn timings(&self) -> Value {
        let per_s = if self.decode_ms > 0.0 {
            self.completion_tokens.saturating_sub(1) as f64 * 1000.0 / self.decode_ms
        } else {
            0.0
        };
        json!({
            "prompt_n": self.prompt_tokens,
            "prompt_ms": self.ttft_ms,
            "predicted_n": self.completion_tokens,
            "predicted_ms": self.decode_ms,
            "predicted_per_second": per_s,
            "draft_n": self.draft_n,
            "draft_n_accepted": self.draft_n_accepted,
        })
    }
}

/// Identity shared by all chunks of one response.
#[derive(Debug, Clone)]
pub struct Ids {
    pub id: String,
    pub created: u64,
    pub model: String,
    pub chat: bool,
    /// SGLang's shapes: completion chunks with `"usage": null`, richer usage.
    pub sglang: bool,
}

impl Ids {
    fn object(&self, stream: bool) -> &'static str {
        match (self.chat, stream) {
            (true, true) => "chat.completion.chunk",
            (true, false) => "chat.completion",
            (false, _) => "text_completion",
        }
    }

    fn envelope(&self, stream: bool, choices: Value) -> Value {
        json!({
            "id": self.id, "object": self.object(stream), "created": self.created,
            "model": self.model, "choices": choices, "simulated": true,
        })
    }

    /// The first chat chunk: the role, empty content (as vLLM sends it).
    pub fn role_chunk(&self) -> Value {
        let choice = json!({"index": 0, "delta": {"role": "assistant", "content": ""},
            "logprobs": null, "finish_reason": null});
        self.envelope(true, json!([choice]))
    }

    /// A streamed chunk with `text`; the finishing one carries `timings`.
    pub fn chunk(&self, text: &str, finish: Option<&str>, stats: Option<&Stats>) -> Value {
        let choice = if self.chat {
            json!({"index": 0, "delta": {"content": text}, "logprobs": null,
                "finish_reason": finish})
        } else {
            json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish})
        };
        let mut v = self.envelope(true, json!([choice]));
        // SGLang 0.5.23's completion chunks carry `"usage": null`, its chat
        // chunks no usage key at all (tests/fixtures/real/sglang, recorded
        // from the real server; checked by tests/tests/sim_fidelity.rs).
        if self.sglang && !self.chat {
            v["usage"] = Value::Null;
        }
        if let Some(s) = stats {
            v["timings"] = s.timings();
        }
        v
    }

    /// SGLang's chat finish chunk: an empty delta and the finish reason.
    pub fn finish_chunk(&self, finish: &str, stats: &Stats) -> Value {
        let choice = json!({"index": 0, "delta": {}, "logprobs": null,
            "finish_reason": finish});
        let mut v = self.envelope(true, json!([choice]));
        v["timings"] = stats.timings();
        v
    }

    /// SGLang's usage; its completions leave out `prompt_tokens_details`
    /// (tests/fixtures/real/sglang: serving_completions.py dumps the final
    /// usage chunk with exclude_none).
    fn usage_of(&self, stats: &Stats) -> Value {
        if self.sglang {
            let mut u = stats.sglang_usage();
            if !self.chat {
                u.as_object_mut().map(|o| o.remove("prompt_tokens_details"));
            }
            u
        } else {
            stats.usage()
        }
    }

    /// The `stream_options.include_usage` chunk: no choices, usage, timings.
    pub fn usage_chunk(&self, stats: &Stats) -> Value {
        let mut v = self.envelope(true, json!([]));
        v["usage"] = self.usage_of(stats);
        v["timings"] = stats.timings();
        v
    }

    /// A whole (non-streamed) response.
    pub fn full(&self, text: &str, finish: &str, stats: &Stats) -> Value {
        let choice = if self.chat {
            json!({"index": 0, "message": {"role": "assistant", "content": text},
                "logprobs": null, "finish_reason": finish})
        } else {
            json!({"index": 0, "text": text, "logprobs": null, "finish_reason": finish})
        };
        let mut v = self.envelope(false, json!([choice]));
        v["usage"] = self.usage_of(stats);
        v["timings"] = stats.timings();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_completion_and_chat() {
        let r = parse(
            false,
            br#"{"prompt":"a b c","max_tokens":5,"stream":true,
            "stream_options":{"include_usage":true},"ignore_eos":true,"temperature":0}"#,
            100,
        )
        .unwrap();
        assert_eq!(
            (r.prompt_tokens, r.max_tokens, r.stream, r.include_usage),
            (3, 5, true, true)
        );
        assert!(r.ignore_eos && r.temperature == 0.0);
        let r = parse(
            true,
            br#"{"messages":[{"role":"user","content":"x y"}]}"#,
            100,
        )
        .unwrap();
        assert_eq!((r.prompt_tokens, r.max_tokens, r.temperature), (2, 98, 1.0));
    }

    #[test]
    fn rejects_bad_requests() {
        assert!(parse(false, b"{", 100)
            .unwrap_err()
            .message
            .contains("not JSON"));
        assert!(parse(false, br#"{"prompt":"a","max_tokens":200}"#, 100).is_err());
        assert!(parse(true, br#"{"messages":[]}"#, 100).is_err());
        assert!(parse(false, br#"{"prompt":"a","max_tokens":-1}"#, 100).is_err());
    }
}
