//! Routing per personality: which endpoints exist, what they answer before
//! ready, and which need the API key.
//!
//! SGLang (`python/sglang/srt/entrypoints/http_server.py`): `/health` and
//! `/health_generate` are one handler, `health_generate`, 503 while the
//! server status is Starting, then one generated token (a 1 s sleep loop);
//! `/v1/models`, `/get_model_info` and `/server_info` answer as soon as
//! uvicorn listens; `/metrics` only with `--enable-metrics`. Its API-key
//! middleware (`python/sglang/srt/utils/common.py`
//! `add_api_key_middleware`) lets `/health*` and `/metrics` through and
//! answers 401 `{"error": "Unauthorized"}` elsewhere. vLLM
//! (`vllm/entrypoints/openai/api_server.py`): `/health`, `/version`,
//! `/metrics`, `/v1/*`; its key guards `/v1` paths only. llama.cpp
//! (`tools/server/server.cpp`): every route 503 "Loading model" while
//! loading; public `/health` and `/v1/models` even with a key.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, Response};
use serde_json::{json, Value};

use crate::api::ApiError;
use crate::cli::Personality;
use crate::generation;
use crate::info;
use crate::reply::{body_bytes, error, json_resp, respond};
use crate::state::State;
use crate::stream::{self, HttpBody};
use crate::tokenize;
use crate::wire::Wire;

/// Answer one request the way the chosen server would.
pub async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
    wire: Arc<Wire>,
) -> Response<HttpBody> {
    let path = req.uri().path().to_string();
    if let Some(denied) = auth(&state, &req, &path) {
        return denied;
    }
    let method = req.method().clone();
    let ready = state.ready.load(Relaxed);
    match state.personality {
        Personality::LlamaCpp if !ready => loading(),
        Personality::Sglang => sglang(state, req, wire, &method, &path).await,
        Personality::Vllm => vllm(state, req, wire, &method, &path).await,
        Personality::LlamaCpp => llama(state, req, wire, &method, &path).await,
    }
}

/// The API-key check, or None when the request may pass.
fn auth(state: &State, req: &Request<Incoming>, path: &str) -> Option<Response<HttpBody>> {
    let key = state.args.api_key.as_deref()?;
    let exempt = match state.personality {
        Personality::Sglang => path.starts_with("/health") || path.starts_with("/metrics"),
        Personality::Vllm => !path.starts_with("/v1"),
        Personality::LlamaCpp => {
            matches!(path, "/health" | "/v1/health" | "/models" | "/v1/models")
        }
    };
    let given = req
        .headers()
        .get("authorization")
        .and_then(|h| h.to_str().ok());
    if exempt || given == Some(format!("Bearer {key}").as_str()) {
        return None;
    }
    let body = match state.personality {
        Personality::LlamaCpp => json!({"error": {"code": 401,
            "message": "Invalid API Key", "type": "authentication_error"}}),
        _ => json!({"error": "Unauthorized"}),
    };
    Some(json_resp(401, &body))
}

fn loading() -> Response<HttpBody> {
    json_resp(
        503,
        &json!({"error": {"code": 503, "message": "Loading model",
            "type": "unavailable_error"}, "simulated": true}),
    )
}

fn not_found(method: &Method, path: &str) -> Response<HttpBody> {
    error(&ApiError {
        status: 404,
        kind: "NotFoundError",
        message: format!("no route {method} {path}"),
    })
}

fn warming_up() -> Response<HttpBody> {
    error(&ApiError {
        status: 503,
        kind: "ServiceUnavailableError",
        message: "server is warming up (simulated)".into(),
    })
}

fn ok() -> Response<HttpBody> {
    json_resp(200, &json!({"status": "ok", "simulated": true}))
}

fn metrics(state: &State, names: Personality) -> Response<HttpBody> {
    let a = &state.args;
    let m = &state.metrics;
    let text = match names {
        Personality::Vllm => m.render(&a.model_name, state.spec.steps, a.kv_capacity_tokens),
        Personality::Sglang => m.render_sglang(&a.model_name, a.kv_capacity_tokens),
        Personality::LlamaCpp => m.render_llamacpp(),
    };
    respond(200, "text/plain; version=0.0.4", stream::full(text))
}

/// llama-server without `--metrics` (`tools/server/server-context.cpp`):
/// 501, its error JSON naming the flag.
fn llama_metrics_off() -> Response<HttpBody> {
    error(&ApiError {
        status: 501,
        kind: "not_supported_error",
        message: "This server does not support metrics endpoint. Start it with `--metrics`".into(),
    })
}

async fn sglang(
    state: Arc<State>,
    req: Request<Incoming>,
    wire: Arc<Wire>,
    method: &Method,
    path: &str,
) -> Response<HttpBody> {
    let ready = state.ready.load(Relaxed);
    match (method, path) {
        (&Method::GET, "/health" | "/health_generate") if ready => {
            // health_generate: one token, then `await asyncio.sleep(1)`
            // until the scheduler answered.
            tokio::time::sleep(state.args.health_probe_time).await;
            generation::health_generate(&state).await
        }
        (&Method::GET, "/health" | "/health_generate") => {
            respond(503, "text/plain", stream::full(""))
        }
        (&Method::GET, "/v1/models") => json_resp(200, &info::models(&state)),
        (&Method::GET, "/get_model_info") => json_resp(
            200,
            &json!({"model_path": format!("simulated/{}", state.args.model_name),
                "is_generation": true, "simulated": true}),
        ),
        (&Method::GET, "/server_info" | "/get_server_info") => {
            json_resp(200, &info::sglang_server_info(&state))
        }
        (&Method::GET, "/metrics") if state.args.enable_metrics => {
            metrics(&state, Personality::Sglang)
        }
        (&Method::POST, "/tokenize") => tokenize_route(&state, req).await,
        (&Method::POST, "/v1/completions" | "/v1/chat/completions" | "/generate") if !ready => {
            warming_up()
        }
        (&Method::POST, "/generate") => crate::native::generate(state, req, wire).await,
        (&Method::POST, "/v1/completions") => generation::generate(state, req, false, wire).await,
        (&Method::POST, "/v1/chat/completions") => {
            generation::generate(state, req, true, wire).await
        }
        _ => not_found(method, path),
    }
}

async fn vllm(
    state: Arc<State>,
    req: Request<Incoming>,
    wire: Arc<Wire>,
    method: &Method,
    path: &str,
) -> Response<HttpBody> {
    match (method, path) {
        (&Method::GET, "/health") => respond(200, "application/json", stream::full("")),
        (&Method::GET, "/version") => json_resp(
            200,
            &json!({"version": info::VLLM_VERSION, "simulated": true}),
        ),
        (&Method::GET, "/v1/models") => json_resp(200, &info::models(&state)),
        (&Method::GET, "/metrics") => metrics(&state, Personality::Vllm),
        (&Method::GET, "/server_info") if dev_mode() => {
            let json_format = req
                .uri()
                .query()
                .is_some_and(|q| q.split('&').any(|kv| kv == "config_format=json"));
            json_resp(200, &info::vllm_server_info(&state, json_format))
        }
        (&Method::POST, "/tokenize") => tokenize_route(&state, req).await,
        (&Method::POST, "/v1/completions") => generation::generate(state, req, false, wire).await,
        (&Method::POST, "/v1/chat/completions") => {
            generation::generate(state, req, true, wire).await
        }
        _ => json_resp(404, &json!({"detail": "Not Found"})),
    }
}

/// vLLM mounts its developer endpoints only with `VLLM_SERVER_DEV_MODE`
/// set to a true value (`vllm/envs.py`: `bool(int(...))`).
fn dev_mode() -> bool {
    std::env::var("VLLM_SERVER_DEV_MODE").is_ok_and(|v| v.trim() == "1")
}

async fn llama(
    state: Arc<State>,
    req: Request<Incoming>,
    wire: Arc<Wire>,
    method: &Method,
    path: &str,
) -> Response<HttpBody> {
    match (method, path) {
        (&Method::GET, "/health" | "/v1/health") => ok(),
        (&Method::GET, "/v1/models" | "/models") => json_resp(200, &info::models(&state)),
        (&Method::GET, "/props") => json_resp(200, &info::llama_props(&state)),
        (&Method::GET, "/slots") => json_resp(200, &info::llama_slots(&state)),
        (&Method::GET, "/metrics") if state.args.enable_metrics => {
            metrics(&state, Personality::LlamaCpp)
        }
        (&Method::GET, "/metrics") => llama_metrics_off(),
        (&Method::POST, "/tokenize") => tokenize_route(&state, req).await,
        (&Method::POST, "/v1/completions" | "/completion") => {
            generation::generate(state, req, false, wire).await
        }
        (&Method::POST, "/v1/chat/completions") => {
            generation::generate(state, req, true, wire).await
        }
        _ => not_found(method, path),
    }
}

/// `/tokenize`: the simulated tokenizer's tokens for `content`, `prompt` or
/// `messages`.
async fn tokenize_route(state: &State, req: Request<Incoming>) -> Response<HttpBody> {
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
