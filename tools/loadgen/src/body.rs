//! The request body for a prompt: an OpenAI completions or chat body
//! (model, prompt or messages, sampling fields, stream options), or
//! SGLang's native `/generate` body (`--endpoint generate`:
//! python/sglang/srt/managers/io_struct.py `GenerateReqInput` with `text`,
//! `sampling_params`, `stream`; sampling_params.py `SamplingParams` with
//! `max_new_tokens`, `min_new_tokens`, `temperature`, `ignore_eos`);
//! `--extra-body` fields go over everything.

use serde_json::{json, Value};

use crate::client::Body;
use crate::prompts::Prompt;

/// A prepared request: body bytes and what it asks for.
pub struct Prepared {
    pub body: Body,
    pub asked_tokens: Option<u64>,
    pub input_tokens: u64,
}

/// How every request body is made: one spec, and the output length each
/// asks for. Shared by the prepared prompts and the sessions' turns.
#[derive(Debug, Clone)]
pub struct Bodies {
    pub spec: BodySpec,
    /// An `--extra-body` max_tokens: it wins over the flag, so early stops
    /// are judged against what was really asked.
    extra_max: Option<u64>,
}

impl Bodies {
    /// Bodies of `spec`, asking `spec.max_tokens` unless a prompt or
    /// `spec.extra` says otherwise.
    pub fn new(spec: BodySpec) -> Bodies {
        let extra_max = spec
            .extra
            .as_ref()
            .and_then(|m| {
                m.get("max_tokens")
                    .or_else(|| m.get("max_completion_tokens"))
            })
            .and_then(Value::as_u64);
        Bodies { spec, extra_max }
    }

    /// The request for prompt `p`.
    pub fn prepare(&self, p: &Prompt) -> Prepared {
        Prepared {
            body: body(&self.spec, p).into(),
            asked_tokens: self.extra_max.or(p.output_tokens).or(self.spec.max_tokens),
            input_tokens: p.input_tokens,
        }
    }
}

/// The request body for `prompt`: model, prompt or messages, sampling
/// fields, stream options, then `--extra-body` fields over everything.
/// Owned, so a session can build its turns' bodies as it goes.
#[derive(Debug, Clone)]
pub struct BodySpec {
    pub model: String,
    pub chat: bool,
    /// SGLang's native `/generate` instead of an OpenAI API.
    pub native: bool,
    pub stream: bool,
    pub continuous_usage: bool,
    pub max_tokens: Option<u64>,
    pub ignore_eos: bool,
    pub temperature: Option<f64>,
    pub extra: Option<serde_json::Map<String, Value>>,
}

/// The body `spec` asks for with prompt `p`.
pub fn body(spec: &BodySpec, p: &Prompt) -> Vec<u8> {
    if spec.native {
        return native(spec, p);
    }
    let mut b = serde_json::Map::new();
    b.insert("model".into(), json!(spec.model));
    if let (true, Some(m)) = (spec.chat, &p.messages) {
        b.insert("messages".into(), m.clone());
    } else if spec.chat {
        b.insert(
            "messages".into(),
            json!([{"role": "user", "content": p.text}]),
        );
    } else {
        b.insert("prompt".into(), json!(p.text));
    }
    if let Some(m) = p.output_tokens.or(spec.max_tokens) {
        b.insert("max_tokens".into(), json!(m));
    }
    if spec.ignore_eos {
        // vLLM, SGLang and llama.cpp read `ignore_eos`; `min_tokens` makes
        // servers that ignore it still generate the full length.
        b.insert("ignore_eos".into(), json!(true));
        if let Some(m) = p.output_tokens.or(spec.max_tokens) {
            b.insert("min_tokens".into(), json!(m));
        }
    }
    if let Some(t) = spec.temperature {
        b.insert("temperature".into(), json!(t));
    }
    b.insert("stream".into(), json!(spec.stream));
    if spec.stream {
        let mut so = json!({"include_usage": true});
        if spec.continuous_usage {
            so["continuous_usage_stats"] = json!(true);
        }
        b.insert("stream_options".into(), so);
    }
    if let Some(extra) = &spec.extra {
        for (k, v) in extra {
            b.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&Value::Object(b)).unwrap_or_default()
}

/// The `/generate` body. `GenerateReqInput` has no `model` (one server,
/// one model); `--extra-body` fields are merged at the top level and win,
/// as for the OpenAI bodies (`{"sampling_params": {..}}` replaces ours).
fn native(spec: &BodySpec, p: &Prompt) -> Vec<u8> {
    let mut sp = serde_json::Map::new();
    let max = p.output_tokens.or(spec.max_tokens);
    if let Some(m) = max {
        sp.insert("max_new_tokens".into(), json!(m));
    }
    if spec.ignore_eos {
        sp.insert("ignore_eos".into(), json!(true));
        if let Some(m) = max {
            sp.insert("min_new_tokens".into(), json!(m));
        }
    }
    if let Some(t) = spec.temperature {
        sp.insert("temperature".into(), json!(t));
    }
    let mut b = serde_json::Map::new();
    b.insert("text".into(), json!(p.text));
    b.insert("sampling_params".into(), Value::Object(sp));
    b.insert("stream".into(), json!(spec.stream));
    if let Some(extra) = &spec.extra {
        for (k, v) in extra {
            b.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&Value::Object(b)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_usage_request_and_extra_fields_win() {
        let extra: serde_json::Map<String, Value> =
            serde_json::from_str(r#"{"top_k":5,"temperature":0.5}"#).unwrap();
        let spec = BodySpec {
            model: "m".into(),
            chat: true,
            native: false,
            stream: true,
            continuous_usage: true,
            max_tokens: Some(8),
            ignore_eos: true,
            temperature: Some(0.0),
            extra: Some(extra),
        };
        let p = Prompt {
            text: "hello".into(),
            input_tokens: 1,
            output_tokens: None,
            messages: None,
        };
        let v: Value = serde_json::from_slice(&body(&spec, &p)).unwrap();
        assert_eq!(v["messages"][0]["content"], "hello");
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["max_tokens"], 8);
        assert_eq!(v["temperature"], 0.5);
        assert_eq!(v["top_k"], 5);
    }

    #[test]
    fn body_is_sglang_generate_req_input() {
        let spec = BodySpec {
            model: "m".into(),
            chat: false,
            native: true,
            stream: true,
            continuous_usage: true,
            max_tokens: Some(8),
            ignore_eos: true,
            temperature: Some(0.0),
            extra: None,
        };
        let p = Prompt {
            text: "hi".into(),
            input_tokens: 1,
            output_tokens: None,
            messages: None,
        };
        let v: Value = serde_json::from_slice(&body(&spec, &p)).unwrap();
        assert_eq!(
            v,
            json!({"text": "hi", "stream": true, "sampling_params":
                {"max_new_tokens": 8, "min_new_tokens": 8, "ignore_eos": true, "temperature": 0.0}})
        );
    }
}
