//! SGLang's native `POST /generate`: cumulative `text` and `output_ids`
//! with a `meta_info` that carries per-request speculative counters.
//!
//! Shapes from `python/sglang/srt/entrypoints/http_server.py`
//! `generate_request` (`data: {json}\n\n` per output, then `data: [DONE]`)
//! and `python/sglang/srt/managers/tokenizer_manager.py`
//! `_handle_batch_output` (`meta_info`: `id`, `finish_reason`,
//! `prompt_tokens`, `completion_tokens`, `cached_tokens`, `e2e_latency` at
//! the end, and, when a speculative algorithm is set,
//! `_calculate_spec_decoding_metrics`' `spec_verify_ct` (one per verify
//! step), `spec_accept_length` (`completion_tokens / spec_verify_ct`) and
//! `spec_accept_rate`). Text is cumulative: `stream_output` is off by
//! default.

use std::sync::Arc;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{json, Value};

use crate::api::{ApiError, Content, GenReq, Stats};
use crate::generation::{admit, source};
use crate::model::{Chunk, Finish};
use crate::reply::{body_bytes, error, json_resp, respond};
use crate::state::State;
use crate::stream::{self, account, sse, HttpBody, Source};
use crate::tokenize::detokenize;
use crate::wire::Wire;

/// SGLang's default `max_new_tokens` (`SamplingParams`).
const DEFAULT_MAX_NEW_TOKENS: u64 = 128;

/// Parse a `/generate` body into the common request.
fn parse(body: &[u8], context_length: u64) -> Result<GenReq, ApiError> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad(format!("request body is not JSON: {e}")))?;
    // The text is tokenized once: its count is its ids'.
    let (prompt_tokens, content) = match (&v["text"], &v["input_ids"]) {
        (Value::String(s), _) => {
            let c = Content::of(s);
            (c.ids.len() as u64, c)
        }
        (_, Value::Array(ids)) => (ids.len() as u64, Content::default()),
        _ => return Err(ApiError::bad("give \"text\" or \"input_ids\"")),
    };
    let sp = &v["sampling_params"];
    let max_tokens = match &sp["max_new_tokens"] {
        Value::Null => DEFAULT_MAX_NEW_TOKENS,
        m => m
            .as_u64()
            .filter(|m| *m > 0)
            .ok_or_else(|| ApiError::bad("max_new_tokens must be a positive integer"))?,
    };
    if prompt_tokens + max_tokens > context_length {
        return Err(ApiError::bad(format!(
            "Requested token count exceeds the model's maximum context length of \
             {context_length} tokens."
        )));
    }
    Ok(GenReq {
        chat: false,
        prompt_tokens,
        max_tokens,
        ignore_eos: sp["ignore_eos"].as_bool().unwrap_or(false),
        temperature: sp["temperature"].as_f64().unwrap_or(1.0).max(0.0),
        stream: v["stream"].as_bool().unwrap_or(false),
        include_usage: false,
        continuous_usage: false,
        content,
    })
}

/// One request's running output.
struct Out {
    rid: String,
    text: String,
    ids: Vec<u32>,
    verify_ct: u64,
    spec: bool,
    stats: Stats,
    first_at: Option<Instant>,
    t0: Instant,
}

impl Out {
    fn add(&mut self, c: &Chunk, state: &State) {
        account(&mut self.stats, &mut self.first_at, self.t0, c, state);
        self.text.push_str(&detokenize(&c.tokens));
        self.ids.extend_from_slice(&c.tokens);
        if c.drafted > 0 {
            self.verify_ct += 1;
        }
    }

    fn json(&self, finish: Option<Finish>) -> Value {
        let mut meta = json!({
            "id": self.rid,
            "finish_reason": finish.map(|f| match f {
                Finish::Length => json!({"type": "length", "length": self.stats.completion_tokens}),
                Finish::Stop => json!({"type": "stop", "matched": 2}),
            }),
            "prompt_tokens": self.stats.prompt_tokens,
            "completion_tokens": self.stats.completion_tokens,
            "cached_tokens": 0,
        });
        if self.spec {
            // `_calculate_spec_decoding_metrics`: zeros until a verify ran.
            let (len, rate) = match self.verify_ct {
                0 => (0.0, 0.0),
                v => (
                    self.stats.completion_tokens as f64 / v as f64,
                    self.stats.draft_n_accepted as f64 / self.stats.draft_n.max(1) as f64,
                ),
            };
            meta["spec_verify_ct"] = json!(self.verify_ct);
            meta["spec_accept_length"] = json!(len);
            meta["spec_accept_rate"] = json!(rate);
        }
        if finish.is_some() {
            meta["e2e_latency"] = json!(self.t0.elapsed().as_secs_f64());
        }
        json!({"text": self.text, "output_ids": self.ids, "meta_info": meta, "simulated": true})
    }
}

/// `POST /generate`.
pub async fn generate(
    state: Arc<State>,
    req: Request<Incoming>,
    wire: Arc<Wire>,
) -> Response<HttpBody> {
    let body = match body_bytes(req).await {
        Ok(b) => b,
        Err(e) => return error(&e),
    };
    let now = Instant::now();
    let t0 = wire.arrived().filter(|t| *t <= now).unwrap_or(now);
    let r = match parse(&body, state.args.context_length) {
        Ok(r) => r,
        Err(e) => return error(&e),
    };
    let (n, _faults, gen) = match admit(&state, &r) {
        Ok(x) => x,
        Err(e) => return error(&e),
    };
    let out = Out {
        rid: format!("sim-{n:032x}"),
        text: String::new(),
        ids: Vec::new(),
        verify_ct: 0,
        spec: state.spec.algorithm.is_some(),
        stats: Stats {
            prompt_tokens: r.prompt_tokens,
            ..Stats::default()
        },
        first_at: None,
        t0,
    };
    let src = source(&state, &r, gen, t0);
    if r.stream {
        let body = stream::channel_body(move |tx| async move {
            let (mut out, mut src) = (out, src);
            while let Some(c) = src.next().await {
                out.add(&c, &state);
                if tx.send(Ok(sse(&out.json(c.finish)))).await.is_err() {
                    return;
                }
                if c.finish.is_some() {
                    break;
                }
            }
            finished(&state);
            let _ = tx
                .send(Ok(bytes::Bytes::from_static(b"data: [DONE]\n\n")))
                .await;
        });
        return respond(200, "text/event-stream", body);
    }
    json_resp(200, &whole(&state, out, src).await)
}

async fn whole(state: &State, mut out: Out, mut src: Source) -> Value {
    let mut finish = None;
    while let Some(c) = src.next().await {
        out.add(&c, state);
        if c.finish.is_some() {
            finish = c.finish;
            break;
        }
    }
    finished(state);
    out.json(finish)
}

fn finished(state: &State) {
    state
        .metrics
        .requests_success
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}
