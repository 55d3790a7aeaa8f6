//! The server kinds wait-ready knows a health path for (`--server KIND`):
//! one list for sweep's flag and for the messages of both tools that say
//! which to give. wait-ready's own `ServerKind` is held to it by a test.

/// Each kind's name as `--server` takes it.
pub const NAMES: [&str; 5] = ["sglang", "vllm", "llama.cpp", "openai", "llm-sim"];

/// `sglang, vllm, llama.cpp, openai, llm-sim`, for a message.
pub fn list() -> String {
    NAMES.join(", ")
}
