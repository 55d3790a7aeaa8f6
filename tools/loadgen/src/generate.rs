//! SGLang's native `POST /generate` (`--endpoint generate`): how its
//! stream's `text` counts and the server's running-request cap (the
//! request body is body.rs's). It is the only SGLang API whose stream
//! carries per-request `meta_info` (`spec_verify_ct`,
//! `completion_tokens`), so the only source of a level's own acceptance on
//! SGLang. Upstream: python/sglang/srt/entrypoints/http_server.py
//! `generate_request` (with `"stream": true` each output is one
//! `data: {json}` line, then `data: [DONE]`; an error is
//! `data: {"error": {"message": ..}}`).

use serde_json::Value;

/// Does each streamed chunk's `text` hold the whole text so far? It does
/// by default; with `--incremental-streaming-output` (a server arg that
/// `/server_info` reports) it holds only what is new
/// (tokenizer_manager_components/output_processor.py: `incremental =
/// self.config.incremental_streaming_output and is_stream`).
pub fn cumulative_text(server_args: Option<&Value>) -> bool {
    server_args
        .and_then(|a| a.get("incremental_streaming_output"))
        .and_then(Value::as_bool)
        != Some(true)
}

/// The server's `max_running_requests` from its `/server_info` (the
/// resolved server args at the top level; `internal_states[]` as well in
/// newer versions). SGLang sets it to 48 when speculation is on and it was
/// not given (server_args.py `ServerArgs._handle_speculative_decoding`:
/// "Max running requests is reset to 48 for speculative decoding").
pub fn max_running_requests(info: &Value) -> Option<u64> {
    let num = |v: &Value| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    };
    info.get("max_running_requests")
        .and_then(num)
        .or_else(|| {
            info.get("internal_states")?
                .as_array()?
                .iter()
                .find_map(|s| s.get("max_running_requests").and_then(num))
        })
        .filter(|&n| n > 0)
}

/// The warning for a closed-loop level above the server's cap, or None.
pub fn over_cap(concurrency: u32, cap: u64) -> Option<String> {
    let c = u64::from(concurrency);
    (c > cap).then(|| {
        format!(
            "concurrency {c} exceeds the server's max_running_requests {cap}: {} requests \
             queue in the server; raise --max-running-requests or expect queueing in TTFT",
            c - cap
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cap_is_read_and_warned_about() {
        assert_eq!(
            max_running_requests(&json!({"max_running_requests": 48})),
            Some(48)
        );
        let nested = json!({"internal_states": [{"max_running_requests": "32"}]});
        assert_eq!(max_running_requests(&nested), Some(32));
        assert_eq!(
            max_running_requests(&json!({"max_running_requests": null})),
            None
        );
        let w = over_cap(64, 48).unwrap();
        assert!(
            w.contains(
                "concurrency 64 exceeds the server's max_running_requests 48: 16 requests queue"
            ),
            "{w}"
        );
        assert_eq!(over_cap(48, 48), None);
        assert!(cumulative_text(None));
        assert!(!cumulative_text(Some(
            &json!({"incremental_streaming_output": true})
        )));
    }
}
