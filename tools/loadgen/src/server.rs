//! Talking to the server outside the load: the model list, server info
//! (kind, live args), `/tokenize`, and `/metrics` scrapes. These use a
//! separate agent with short timeouts and no pooling, so a probe never
//! rides a connection the load is using.

use std::time::Duration;

use serde_json::{json, Value};
use sweepkit::records::{ServerInfo, ServerKind};

use crate::prompts::Tokenizer;

/// Why `/v1/models` named no model.
#[derive(Debug)]
pub enum ModelsError {
    /// HTTP 401 or 403: the server wants an API key (or another one).
    Key(u16),
    /// Not reachable, another status, no model: a transport failure.
    Other(String),
}

pub struct Probe {
    agent: ureq::Agent,
    base: String,
    auth: Option<String>,
}

impl Probe {
    pub fn new(base: &str, auth: Option<String>) -> Probe {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(10))
            .max_idle_connections(0)
            .try_proxy_from_env(false)
            .build();
        Probe {
            agent,
            base: base.trim_end_matches('/').to_string(),
            auth,
        }
    }

    fn get(&self, path: &str) -> Result<ureq::Response, Box<ureq::Error>> {
        let mut r = self.agent.get(&format!("{}{path}", self.base));
        if let Some(a) = &self.auth {
            r = r.set("Authorization", a);
        }
        r.call().map_err(Box::new)
    }

    /// GET a JSON document; None on any failure.
    pub fn get_json(&self, path: &str) -> Option<Value> {
        self.get(path).ok()?.into_json().ok()
    }

    pub fn get_text(&self, path: &str) -> Option<String> {
        self.get(path).ok()?.into_string().ok()
    }

    /// Whether requests carry a key.
    pub fn has_key(&self) -> bool {
        self.auth.is_some()
    }

    /// The first model `/v1/models` lists, and its `owned_by`.
    pub fn first_model(&self) -> Result<(String, Option<String>), ModelsError> {
        const WHAT: &str = "GET /v1/models";
        let resp = self.get(sweepkit::api::MODELS).map_err(|e| match *e {
            ureq::Error::Status(c, _) if sweepkit::api::is_key_refusal(c) => ModelsError::Key(c),
            ureq::Error::Status(c, _) => ModelsError::Other(format!("{WHAT}: HTTP {c}")),
            ureq::Error::Transport(t) => ModelsError::Other(format!("{WHAT}: {t}")),
        })?;
        let v: Value = resp
            .into_json()
            .map_err(|e| ModelsError::Other(format!("{WHAT}: not JSON: {e}")))?;
        let first = v.get("data").and_then(|d| d.get(0));
        let id = first
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .ok_or_else(|| ModelsError::Other(format!("{WHAT}: no model listed (use --model)")))?;
        let owner = first
            .and_then(|m| m.get("owned_by"))
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok((id.to_string(), owner))
    }

    /// SGLang's `/server_info` (old name `/get_server_info`), when present.
    pub fn server_info(&self) -> Option<Value> {
        self.get_json("/server_info")
            .or_else(|| self.get_json("/get_server_info"))
            .filter(Value::is_object)
    }

    pub fn base(&self) -> &str {
        &self.base
    }
}

/// Fill in what we know about the server: kind from `/server_info`
/// (SGLang, llm-sim) or `owned_by` (vLLM, llama.cpp).
pub fn describe(
    base: &str,
    model: &str,
    owner: Option<&str>,
    info: Option<&Value>,
    prior: Option<ServerInfo>,
) -> ServerInfo {
    let mut s = prior.unwrap_or_default();
    s.base_url.get_or_insert_with(|| base.to_string());
    s.model = Some(model.to_string());
    let simulated = info
        .and_then(|i| i.get("simulated"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    s.simulated |= simulated;
    if s.kind.is_none() {
        s.kind = Some(if simulated {
            ServerKind::LlmSim
        } else if info.is_some_and(|i| i.get("internal_states").is_some()) {
            // SGLang's /server_info carries internal_states; a
            // /server_info alone does not make a server SGLang.
            ServerKind::Sglang
        } else {
            match owner {
                Some("vllm") => ServerKind::Vllm,
                Some("llamacpp") => ServerKind::LlamaCpp,
                Some("sglang") => ServerKind::Sglang,
                _ => ServerKind::Openai,
            }
        });
    }
    if s.version.is_none() {
        s.version = info
            .and_then(|i| i.get("version"))
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if s.args.is_none() {
        // The shared redaction (io redacts again on writing; this keeps the
        // in-memory copy clean too).
        s.args = info.cloned().map(sweepkit::redact::redacted);
    }
    if s.max_running_requests.is_none() {
        // The live /server_info, else the args the ready record carried.
        s.max_running_requests = info
            .or(s.args.as_ref())
            .and_then(crate::generate::max_running_requests);
    }
    s
}

/// The server's tokenizer over `/tokenize`: vLLM (`prompt` -> `count`),
/// llama.cpp (`content` -> `tokens`), SGLang and llm-sim (either).
pub struct RemoteTokenizer<'a> {
    pub probe: &'a Probe,
    pub model: &'a str,
}

impl Tokenizer for RemoteTokenizer<'_> {
    fn count(&self, text: &str) -> Option<u64> {
        let body = json!({"model": self.model, "prompt": text, "content": text,
                          "add_special_tokens": false});
        let mut r = self
            .probe
            .agent
            .post(&format!("{}/tokenize", self.probe.base));
        if let Some(a) = &self.probe.auth {
            r = r.set("Authorization", a);
        }
        let v: Value = r.send_json(body).ok()?.into_json().ok()?;
        v.get("count").and_then(Value::as_u64).or_else(|| {
            v.get("tokens")
                .and_then(Value::as_array)
                .map(|a| a.len() as u64)
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn server_args_secrets_are_redacted() {
        let v = serde_json::json!({"api_key": "sk-1", "admin_api_key": "a", "hf_token": "h",
            "tokenizer_path": "t", "max_total_num_tokens": 5, "nested": [{"ssl_keyfile_password": "p"}]});
        let r = sweepkit::redact::redacted(v);
        assert_eq!(r["api_key"], "<redacted>");
        assert_eq!(r["admin_api_key"], "<redacted>");
        assert_eq!(r["hf_token"], "<redacted>");
        assert_eq!(r["nested"][0]["ssl_keyfile_password"], "<redacted>");
        assert_eq!(r["tokenizer_path"], "t");
        assert_eq!(r["max_total_num_tokens"], 5);
    }
}
