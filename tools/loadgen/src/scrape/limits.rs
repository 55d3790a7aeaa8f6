//! The capacity a server reports once ready (`server.limits`), read by
//! loadgen when it connects, not by wait-ready: vLLM publishes its KV
//! blocks only on `/metrics`, which loadgen reads anyway (one place that
//! parses Prometheus text), the bench records summarize compares carry
//! it whether or not wait-ready ran, and the server is ready by then.
//! Only numbers are copied: never a server's argument dump, which holds
//! its API keys.
//!
//! - SGLang `/server_info` (`python/sglang/srt/entrypoints/http_server.py`
//!   `get_server_info`): `max_total_num_tokens` (the scheduler's KV token
//!   pool, `scheduler.py`), `max_running_requests` when set, else
//!   `internal_states[].effective_max_running_requests_per_dp` times
//!   `dp_size` (seen on SGLang 0.5.23, tests/fixtures/real/sglang).
//! - vLLM `/metrics` `vllm:cache_config_info` (`vllm/v1/metrics/loggers.py`
//!   `log_metrics_info`: an info gauge whose labels are `CacheConfig`'s
//!   fields): `num_gpu_blocks`, `block_size`; `--max-num-seqs` from the
//!   server's argv when wait-ready read it.
//! - llama.cpp `/props` (`tools/server/server-context.cpp`
//!   `get_res_props`): `total_slots`, `default_generation_settings.n_ctx`
//!   (each slot's context).

use serde_json::Value;
use sweepkit::records::ServerLimits;

fn num(v: &Value) -> Option<u64> {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|x| *x >= 0.0).map(|x| x as u64))
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        .filter(|&n| n > 0)
}

/// SGLang's (or llm-sim's SGLang-shaped) `/server_info`.
pub fn from_server_info(info: &Value) -> Option<ServerLimits> {
    let state = info
        .get("internal_states")
        .and_then(Value::as_array)
        .and_then(|a| a.first());
    let mut read = Vec::new();
    let kv = info.get("max_total_num_tokens").and_then(num);
    if kv.is_some() {
        read.push("max_total_num_tokens");
    }
    let running = match info.get("max_running_requests").and_then(num) {
        Some(n) => {
            read.push("max_running_requests");
            Some(n)
        }
        None => state
            .and_then(|s| s.get("effective_max_running_requests_per_dp"))
            .and_then(num)
            .map(|n| {
                read.push("internal_states[0].effective_max_running_requests_per_dp");
                n * info.get("dp_size").and_then(num).unwrap_or(1)
            }),
    };
    (!read.is_empty()).then(|| ServerLimits {
        origin: format!("/server_info {}", read.join(", ")),
        kv_tokens: kv,
        max_running_requests: running,
        ..ServerLimits::default()
    })
}

/// vLLM's `vllm:cache_config_info` in a `/metrics` text; `argv`: the
/// server's own argument vector, for `--max-num-seqs`.
pub fn from_cache_config(text: &str, argv: Option<&[String]>) -> Option<ServerLimits> {
    let s = sweepkit::prom::samples(text).find(|s| s.name == "vllm:cache_config_info")?;
    let label = |k: &str| {
        s.label(k)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&n| n > 0)
    };
    let (blocks, size) = (label("num_gpu_blocks"), label("block_size"));
    blocks?;
    let seqs = argv.and_then(max_num_seqs);
    let mut origin = "/metrics vllm:cache_config_info num_gpu_blocks, block_size".to_string();
    if seqs.is_some() {
        origin += "; argv --max-num-seqs";
    }
    Some(ServerLimits {
        origin,
        kv_tokens: blocks.zip(size).map(|(b, s)| b * s),
        kv_blocks: blocks,
        block_size: size,
        max_running_requests: seqs,
        ..ServerLimits::default()
    })
}

/// `--max-num-seqs N` or `--max-num-seqs=N` in an argv.
fn max_num_seqs(argv: &[String]) -> Option<u64> {
    argv.iter().enumerate().find_map(|(i, a)| {
        let v = match a.strip_prefix("--max-num-seqs") {
            Some("") => argv.get(i + 1)?.as_str(),
            Some(rest) => rest.strip_prefix('=')?,
            None => return None,
        };
        v.parse().ok()
    })
}

/// llama.cpp's `/props`.
pub fn from_props(props: &Value) -> Option<ServerLimits> {
    let slots = props.get("total_slots").and_then(num);
    let ctx = props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(num);
    (slots.is_some() || ctx.is_some()).then(|| ServerLimits {
        origin: "/props total_slots, default_generation_settings.n_ctx".into(),
        slots,
        slot_ctx_tokens: ctx,
        max_running_requests: slots,
        ..ServerLimits::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sglang_effective_running_requests_when_unset() {
        let info = json!({"max_total_num_tokens": 32768, "max_running_requests": null,
            "api_key": "sk-secret", "dp_size": 1,
            "internal_states": [{"effective_max_running_requests_per_dp": 4096}]});
        let l = from_server_info(&info).unwrap();
        assert_eq!(l.kv_tokens, Some(32768));
        assert_eq!(l.max_running_requests, Some(4096));
        assert!(!serde_json::to_string(&l).unwrap().contains("sk-secret"));
        let spec = json!({"max_total_num_tokens": 41000, "max_running_requests": 48});
        assert_eq!(
            from_server_info(&spec).unwrap().max_running_requests,
            Some(48)
        );
        assert_eq!(from_server_info(&json!({"model": "m"})), None);
    }

    #[test]
    fn vllm_blocks_times_block_size() {
        let t =
            "vllm:cache_config_info{block_size=\"128\",engine=\"0\",num_gpu_blocks=\"5461\"} 1.0\n";
        let argv: Vec<String> = ["vllm", "serve", "m", "--max-num-seqs", "8"]
            .map(String::from)
            .to_vec();
        let l = from_cache_config(t, Some(&argv)).unwrap();
        assert_eq!(
            (l.kv_blocks, l.block_size, l.kv_tokens),
            (Some(5461), Some(128), Some(699008))
        );
        assert_eq!(l.max_running_requests, Some(8));
        let none = "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"None\"} 1.0\n";
        assert_eq!(from_cache_config(none, None), None);
        assert_eq!(max_num_seqs(&["--max-num-seqs=4".to_string()]), Some(4));
    }

    #[test]
    fn llama_slots_and_context() {
        let p = json!({"total_slots": 4, "default_generation_settings": {"n_ctx": 4096}});
        let l = from_props(&p).unwrap();
        assert_eq!((l.slots, l.slot_ctx_tokens), (Some(4), Some(4096)));
    }
}
