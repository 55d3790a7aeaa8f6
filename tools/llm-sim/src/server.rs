//! The HTTP side: accept loop, response helpers, and the generation
//! handler that picks a request's chunk source and faults (routing per
//! personality lives in routes.rs).

use std::convert::Infallible;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rand::Rng;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::api::{self, ApiError, GenReq, Ids};
use crate::cli::Mode;
use crate::engine::Job as EngineJob;
use crate::model::Gen;
use crate::state::{crash, State, CRASH_LINE, SALT_FAULT, SALT_GEN};
use crate::stream::{self, Faults, HttpBody, Job, Source};
use crate::tokenize;
use crate::wire::{Wire, WireIo};

/// Serve connections until the process exits.
pub async fn serve(listener: TcpListener, state: Arc<State>) {
    // Kernel receive stamps on from the start (see sweepkit::rxstamp): the
    // kernel turns them on a moment after the first socket asks.
    let _stamping = sweepkit::rxstamp::keep_on();
    loop {
        let (tcp, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                // Out of descriptors and the like: back off, keep serving.
                eprintln!("llm-sim: warning: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        state.metrics.connections.fetch_add(1, Relaxed);
        let state = state.clone();
        tokio::spawn(async move {
            let wire = Wire::new();
            let io = WireIo::new(tcp, wire.clone());
            let svc = hyper::service::service_fn(move |req| {
                let (state, wire) = (state.clone(), wire.clone());
                async move { Ok::<_, Infallible>(crate::routes::handle(state, req, wire).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(io), svc)
                .await;
        });
    }
}

pub fn respond(status: u16, ctype: &str, body: HttpBody) -> Response<HttpBody> {
    Response::builder()
        .status(status)
        .header("content-type", ctype)
        .header("x-simulated", "llm-sim")
        .body(body)
        .expect("valid response")
}

pub fn json_resp(status: u16, v: &Value) -> Response<HttpBody> {
    respond(status, "application/json", stream::full(v.to_string()))
}

pub fn error(e: &ApiError) -> Response<HttpBody> {
    json_resp(e.status, &e.body())
}

pub async fn body_bytes(req: Request<Incoming>) -> Result<Bytes, ApiError> {
    req.into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .map_err(|e| ApiError::bad(format!("reading body: {e}")))
}

pub async fn tokenize_route(state: &State, req: Request<Incoming>) -> Response<HttpBody> {
    let body = match body_bytes(req).await {
        Ok(b) => b,
        Err(e) => return error(&e),
    };
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => return error(&ApiError::bad(format!("request body is not JSON: {e}"))),
    };
    let text = match (&v["content"], &v["prompt"], &v["messages"]) {
        (Value::String(s), _, _) | (_, Value::String(s), _) => s.clone(),
        (_, _, Value::Array(m)) => m
            .iter()
            .filter_map(|m| m["content"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => {
            return error(&ApiError::bad(
                "give \"content\", \"prompt\" or \"messages\"",
            ))
        }
    };
    let tokens = tokenize::tokenize(&text);
    json_resp(
        200,
        &json!({
            "tokens": tokens, "count": tokens.len(),
            "max_model_len": state.args.context_length, "simulated": true,
        }),
    )
}

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
    let gen = Gen::new(
        state.rng(n, SALT_GEN).gen(),
        r.max_tokens,
        r.ignore_eos,
        state.model.accept_prob(r.temperature),
    );
    Ok((n, faults, gen))
}

pub fn source(state: &Arc<State>, req: &GenReq, gen: Gen, t0: Instant) -> Source {
    let (model, schedule) = match state.mode {
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
        schedule,
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
