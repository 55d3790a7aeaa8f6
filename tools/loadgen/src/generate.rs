//! SGLang's native `POST /generate` (`--endpoint generate`): the request
//! body and how its stream's `text` counts. It is the only SGLang API whose
//! stream carries per-request `meta_info` (`spec_verify_ct`,
//! `completion_tokens`), so the only source of a level's own acceptance on
//! SGLang. Upstream: python/sglang/srt/entrypoints/http_server.py
//! `generate_request` (with `"stream": true` each output is one
//! `data: {json}` line, then `data: [DONE]`; an error is
//! `data: {"error": {"message": ..}}`); the body is
//! python/sglang/srt/managers/io_struct.py `GenerateReqInput` (`text`,
//! `sampling_params`, `stream`) and sampling_params.py `SamplingParams`
//! (`max_new_tokens`, `min_new_tokens`, `temperature`, `ignore_eos`).

use serde_json::{json, Value};

use crate::prompts::{BodySpec, Prompt};

/// The `/generate` body. `GenerateReqInput` has no `model` (one server,
/// one model); `--extra-body` fields are merged at the top level and win,
/// as for the OpenAI bodies (`{"sampling_params": {..}}` replaces ours).
pub fn body(spec: &BodySpec, p: &Prompt) -> Vec<u8> {
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
    if let Some(extra) = spec.extra {
        for (k, v) in extra {
            b.insert(k.clone(), v.clone());
        }
    }
    serde_json::to_vec(&Value::Object(b)).unwrap_or_default()
}

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

    #[test]
    fn body_is_sglang_generate_req_input() {
        let spec = BodySpec {
            model: "m",
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
        };
        let v: Value = serde_json::from_slice(&body(&spec, &p)).unwrap();
        assert_eq!(
            v,
            json!({"text": "hi", "stream": true, "sampling_params":
                {"max_new_tokens": 8, "min_new_tokens": 8, "ignore_eos": true, "temperature": 0.0}})
        );
    }

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
