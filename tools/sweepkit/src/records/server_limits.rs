//! The capacity a server started with, as it reports it once ready: how
//! many tokens its KV cache holds and how many requests it runs at once.
//! The reference campaign watched these across speculative depths: each
//! extra step reserves KV, so fewer requests fit.

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Read by loadgen when it connects (`server.limits`): SGLang's
/// `/server_info`, vLLM's `vllm:cache_config_info` on `/metrics`,
/// llama.cpp's `/props`. Absent figures were not reported.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ServerLimits {
    /// The fields read, e.g. `/server_info max_total_num_tokens,
    /// max_running_requests` or `/metrics vllm:cache_config_info
    /// num_gpu_blocks, block_size`.
    pub origin: String,
    /// Tokens the KV cache holds: SGLang `max_total_num_tokens`; vLLM
    /// `num_gpu_blocks` x `block_size`.
    pub kv_tokens: Option<u64>,
    /// vLLM's KV blocks (`num_gpu_blocks`).
    pub kv_blocks: Option<u64>,
    /// vLLM's tokens per KV block (`block_size`).
    pub block_size: Option<u64>,
    /// Most requests the server runs at once: SGLang's
    /// `max_running_requests` (else the effective value its scheduler
    /// reports); llama.cpp's slots.
    pub max_running_requests: Option<u64>,
    /// llama.cpp's slots (`total_slots`).
    pub slots: Option<u64>,
    /// llama.cpp: each slot's context (`default_generation_settings.n_ctx`),
    /// tokens.
    pub slot_ctx_tokens: Option<u64>,
}
