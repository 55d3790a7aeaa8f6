//! The generation handlers: admission (the request count, the crash and
//! error faults, the request's faults and generator), the chunk source
//! (the engine, or a local generator with its timing), the OpenAI
//! completions and chat handler, and SGLang's `/health_generate`.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use hyper::body::Incoming;
use hyper::{Request, Response};
use rand::Rng;
use serde_json::json;
use tokio::sync::mpsc;

use crate::api::{self, ApiError, GenReq, Ids};
use crate::cli::Mode;
use crate::engine::Job as EngineJob;
use crate::model::Gen;
use crate::reply::{body_bytes, error, json_resp, respond};
use crate::state::{crash, State, CRASH_LINE, SALT_FAULT, SALT_GEN};
use crate::stream::{self, Faults, HttpBody, Job, Source};
use crate::wire::Wire;

/// SGLang's /health_generate: one token through the engine.
pub async fn health_generate(state: &Arc<State>) -> Response<HttpBody> {
    let req = GenReq {
        chat: false,
        prompt_tokens: 1,
        max_tokens: 1,
        ignore_eos: true,
        temperature: 0.0,
        stream: false,
        include_usage: false,
        continuous_usage: false,
        content: Default::default(),
    };
    let gen = Gen::new(0, 1, true, 1.0);
    let mut source = source(state, &req, gen, Instant::now());
    let mut n = 0;
    if let Source::Engine(rx) = &mut source {
        while let Some(c) = rx.recv().await {
            n += c.tokens.len();
        }
    } else {
        n = 1;
    }
    json_resp(
        200,
        &json!({"status": "ok", "generated_tokens": n, "simulated": true}),
    )
}

/// Count a parsed generation request, apply the crash and error faults,
/// and draw its faults and generator: (request number, faults, generator).
pub fn admit(state: &State, r: &GenReq) -> Result<(u64, Faults, Gen), ApiError> {
    let n = state.counter.fetch_add(1, Relaxed) + 1;
    let m = &state.metrics;
    m.requests_received.fetch_add(1, Relaxed);
    if state
        .args
        .crash_after_requests
        .is_some_and(|limit| n >= limit)
    {
        crash(CRASH_LINE, &format!("--crash-after-requests, request {n}"));
    }
    let mut frng = state.rng(n, SALT_FAULT);
    let a = &state.args;
    let is_error = frng.gen_bool(a.error_rate);
    let faults = Faults {
        cut: frng.gen_bool(a.cut_stream_rate),
        malformed: frng.gen_bool(a.malformed_sse_rate),
        stall: frng.gen_bool(a.stall_rate),
    };
    if is_error {
        m.requests_error.fetch_add(1, Relaxed);
        return Err(ApiError {
            status: 500,
            kind: "InternalServerError",
            message: "simulated internal error (--error-rate)".into(),
        });
    }
    m.prompt_tokens.fetch_add(r.prompt_tokens, Relaxed);
    let hit = state.prefix_cache.lookup(&r.content.ids);
    m.prefix_cache_queries
        .fetch_add(r.content.ids.len() as u64, Relaxed);
    m.prefix_cache_hits.fetch_add(hit, Relaxed);
    let rate = state.accept_rate_for(r.content.lead.as_deref());
    let gen = Gen::new(
        state.rng(n, SALT_GEN).gen(),
        r.max_tokens,
        r.ignore_eos,
        state.model.accept_prob_at(rate, r.temperature),
    );
    Ok((n, faults, gen))
}

pub fn source(state: &Arc<State>, req: &GenReq, gen: Gen, t0: Instant) -> Source {
    let (model, timing) = match state.mode {
        Mode::ZeroDelay => (state.model.clone(), None),
        Mode::Exact { ttft, itl } => (
            state.plain_model.clone(),
            Some((state.timer.clone(), t0, ttft, itl)),
        ),
        Mode::Model => {
            let (tx, rx) = mpsc::unbounded_channel();
            let kv = state.model.kv_need(req.prompt_tokens, req.max_tokens);
            state.engine.submit(EngineJob {
                prompt_tokens: req.prompt_tokens,
                kv,
                gen,
                tx,
            });
            return Source::Engine(rx);
        }
    };
    Source::Local {
        gen: Box::new(gen),
        model,
        timing,
        sent: 0,
        done: false,
    }
}

pub async fn generate(
    state: Arc<State>,
    req: Request<Incoming>,
    chat: bool,
    wire: Arc<Wire>,
) -> Response<HttpBody> {
    let body = match body_bytes(req).await {
        Ok(b) => b,
        Err(e) => return error(&e),
    };
    // The request is whole: it arrived when its last bytes reached the
    // socket, which may be a little before this task ran.
    let now = Instant::now();
    let t0 = wire.arrived().filter(|t| *t <= now).unwrap_or(now);
    let r = match api::parse(chat, &body, state.args.context_length) {
        Ok(r) => r,
        Err(e) => return error(&e),
    };
    let (n, faults, gen) = match admit(&state, &r) {
        Ok(x) => x,
        Err(e) => return error(&e),
    };
    let ids = Ids {
        id: format!("{}-sim-{n}", if chat { "chatcmpl" } else { "cmpl" }),
        created: crate::info::unix_now(),
        model: state.args.model_name.clone(),
        chat,
        sglang: state.personality == crate::cli::Personality::Sglang,
    };
    let source = source(&state, &r, gen, t0);
    let stream = r.stream;
    let job = Job {
        state,
        req: r,
        ids,
        source,
        faults,
        t0,
        wire,
    };
    if stream {
        return respond(200, "text/event-stream", stream::streaming(job));
    }
    match stream::whole(job).await {
        Ok(v) => json_resp(200, &v),
        Err(()) => respond(200, "application/json", stream::aborted()),
    }
}
