//! What each personality says about itself: SGLang's `/server_info`, vLLM's
//! developer-mode `/server_info` and `/version`, model lists.
//!
//! SGLang: `python/sglang/srt/entrypoints/http_server.py` `get_server_info`
//! returns `{**dataclasses.asdict(server_args), **scheduler_info,
//! "internal_states": [...], "version": ...}`; each internal state carries
//! the server args again (so `api_key` appears twice, as seen on SGLang
//! 0.5.23) and `avg_spec_accept_length`, a lifetime average. vLLM:
//! `vllm/entrypoints/serve/instrumentator/server_info.py`
//! `show_server_info`, mounted only with `VLLM_SERVER_DEV_MODE=1`.

use std::sync::atomic::Ordering::Relaxed;

use serde_json::{json, Map, Value};

use crate::cli::Mode;
use crate::state::State;

/// vLLM's version string in `/version` (the CPU build seen here).
pub const VLLM_VERSION: &str = "0.32.0";

/// SGLang's resolved server args, under SGLang's field names, plus the
/// knobs of llm-sim's performance model.
fn sglang_args(s: &State) -> Map<String, Value> {
    let a = &s.args;
    let r = &s.spec;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let v = json!({
        "model_path": format!("simulated/{}", a.model_name),
        "tokenizer_path": format!("simulated/{}", a.model_name),
        "served_model_name": a.model_name,
        "host": a.host,
        "port": s.port,
        "api_key": a.api_key,
        "admin_api_key": a.admin_api_key,
        "ssl_keyfile_password": a.ssl_keyfile_password,
        "enable_metrics": a.enable_metrics,
        "speculative_algorithm": r.algorithm,
        "speculative_num_steps": r.num_steps,
        "speculative_eagle_topk": r.topk,
        "speculative_num_draft_tokens": r.draft_tokens,
        "speculative_adaptive": r.adaptive.is_some(),
        "speculative_adaptive_config": r.adaptive.as_ref().and_then(|c| c.0.path.clone()),
        "max_running_requests": r.max_running,
        "context_length": a.context_length,
        "random_seed": s.seed,
        "speculative_accept_rate": a.speculative_accept_rate,
        "speculative_draft_horizon": a.speculative_draft_horizon,
        "speculative_kv_per_step": a.speculative_kv_per_step,
        "kv_capacity_tokens": a.kv_capacity_tokens,
        "step_time_ms": ms(a.step_time),
        "per_seq_time_ms": ms(a.per_seq_time),
        "draft_step_time_ms": ms(a.draft_step_time),
        "prefill_per_token_ms": ms(a.prefill_per_token),
        "eos_prob": a.eos_prob,
        "load_time_s": a.load_time.as_secs_f64(),
        "warmup_time_s": a.warmup_time.as_secs_f64(),
        "health_probe_time_s": a.health_probe_time.as_secs_f64(),
        "simulated_cuda_visible_devices": given_gpus(),
        "mode": match s.mode {
            Mode::Model => "model",
            Mode::ZeroDelay => "zero-delay",
            Mode::Exact { .. } => "exact",
        },
        "faults": {
            "crash_after_s": a.crash_after.map(|d| d.as_secs_f64()),
            "crash_after_requests": a.crash_after_requests,
            "ignore_sigterm_s": a.ignore_sigterm.map(|d| d.as_secs_f64()),
            "error_rate": a.error_rate,
            "cut_stream_rate": a.cut_stream_rate,
            "malformed_sse_rate": a.malformed_sse_rate,
            "stall_rate": a.stall_rate,
            "stall_s": a.stall.as_secs_f64(),
        },
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("a JSON object literal"),
    }
}

/// The `CUDA_VISIBLE_DEVICES` llm-sim was started with (a simulator uses
/// no GPU; it reports the list so a test sees which GPUs a sweep's slot
/// gave its server); None when unset.
fn given_gpus() -> Option<String> {
    std::env::var("CUDA_VISIBLE_DEVICES").ok()
}

/// SGLang's `/server_info` (and `/get_server_info`).
pub fn sglang_server_info(s: &State) -> Value {
    let args = sglang_args(s);
    let mut top = args.clone();
    top.insert(
        "max_total_num_tokens".into(),
        json!(s.args.kv_capacity_tokens),
    );
    top.insert("max_req_input_len".into(), json!(s.args.context_length));
    let mut internal = args;
    internal.insert(
        "avg_spec_accept_length".into(),
        json!(s.metrics.avg_accept_length()),
    );
    internal.insert(
        "memory_usage".into(),
        json!({"kvcache": s.metrics.kv_used.load(Relaxed), "simulated": true}),
    );
    top.insert("internal_states".into(), json!([internal]));
    top.insert(
        "version".into(),
        json!(concat!("llm-sim ", env!("CARGO_PKG_VERSION"))),
    );
    top.insert("simulated".into(), json!(true));
    top.insert("uptime_s".into(), json!(s.started.elapsed().as_secs_f64()));
    let ready = s.ready.load(Relaxed);
    top.insert(
        "status".into(),
        json!(if ready { "ready" } else { "warming_up" }),
    );
    Value::Object(top)
}

/// vLLM's developer-mode `/server_info`: `vllm_config` as `str(config)`
/// unless `?config_format=json`.
pub fn vllm_server_info(s: &State, json_format: bool) -> Value {
    let a = &s.args;
    let spec = s.spec.spec_config.clone().unwrap_or(Value::Null);
    let config = json!({
        "model_config": {"model": format!("simulated/{}", a.model_name),
            "served_model_name": a.model_name, "max_model_len": a.context_length},
        "scheduler_config": {"max_num_seqs": s.spec.max_running},
        "cache_config": {"num_gpu_blocks": a.kv_capacity_tokens, "block_size": 1},
        "speculative_config": spec,
        "simulated": true,
    });
    let text = format!(
        "model='simulated/{}', speculative_config={}, max_seq_len={}, \
         served_model_name={}, simulated=True",
        a.model_name,
        if spec.is_null() {
            "None".to_string()
        } else {
            spec.to_string()
        },
        a.context_length,
        a.model_name
    );
    json!({
        "vllm_config": if json_format { config } else { Value::String(text) },
        "vllm_env": {"VLLM_SERVER_DEV_MODE": true},
        "system_env": {"simulated": true, "os": "llm-sim",
            "CUDA_VISIBLE_DEVICES": given_gpus()},
        "simulated": true,
    })
}

/// OpenAI `/v1/models`.
pub fn models(s: &State) -> Value {
    json!({
        "object": "list",
        "data": [{
            "id": s.args.model_name, "object": "model", "created": unix_now(),
            "owned_by": "llm-sim (simulated)", "root": format!("simulated/{}", s.args.model_name),
            "max_model_len": s.args.context_length, "simulated": true,
        }],
        "simulated": true,
    })
}

/// llama-server's `/props` (the fields clients read).
pub fn llama_props(s: &State) -> Value {
    json!({
        "default_generation_settings": {"n_ctx": s.args.context_length,
            "speculative.n_max": s.spec.steps},
        "total_slots": s.spec.max_running,
        "model_path": format!("simulated/{}", s.args.model_name),
        "simulated": true,
    })
}

/// llama-server's `/slots`: one entry per slot, busy ones first.
pub fn llama_slots(s: &State) -> Value {
    let busy = s.metrics.running.load(Relaxed) as usize;
    let slots: Vec<Value> = (0..s.spec.max_running)
        .map(|id| json!({"id": id, "n_ctx": s.args.context_length, "is_processing": id < busy}))
        .collect();
    Value::Array(slots)
}

pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
