//! Once ready: what the server says about itself (SGLang's /server_info or
//! /get_server_info, llama.cpp's /props, llm-sim's SGLang-shaped copy), for
//! the record's `server` and for `--expect-config` checks.

use std::time::Duration;

use serde_json::Value;
use sweepkit::records::ServerInfo;
use url::Url;

use crate::check::{json_matches, JsonPath};
use crate::cli::ServerKind;
use crate::probe::{http, RequestSpec};

/// `--expect-config KEY=VALUE`.
#[derive(Debug, Clone)]
pub struct ConfigExpect {
    pub key: String,
    pub value: String,
}

impl ConfigExpect {
    pub fn parse(s: &str) -> Result<Self, String> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| format!("--expect-config '{s}': want KEY=VALUE"))?;
        let k = k.trim().trim_start_matches("--");
        if k.is_empty() {
            return Err(format!("--expect-config '{s}': empty key"));
        }
        if k.contains(['.', '[']) {
            JsonPath::parse(k).map_err(|e| format!("--expect-config: {e}"))?;
        }
        Ok(ConfigExpect {
            key: k.to_string(),
            value: v.to_string(),
        })
    }

    /// None when the live args agree, else why not.
    pub fn check(&self, args: &Value) -> Option<String> {
        let found = if self.key.contains(['.', '[']) {
            JsonPath::parse(&self.key).ok()?.get(args).cloned()
        } else {
            find_key(args, &norm(&self.key), 0).cloned()
        };
        match found {
            None => Some(format!("{} not reported by the server", self.key)),
            Some(v) if json_matches(&v, &self.value) => None,
            Some(v) => Some(format!("{} is {v}, want {}", self.key, self.value)),
        }
    }
}

fn norm(k: &str) -> String {
    k.replace('-', "_").to_ascii_lowercase()
}

/// The value of `key` (normalized) at the top level, else in nested
/// objects (llama.cpp keeps its settings in `default_generation_settings`).
fn find_key<'v>(v: &'v Value, key: &str, depth: usize) -> Option<&'v Value> {
    let obj = v.as_object()?;
    if let Some((_, v)) = obj.iter().find(|(k, _)| norm(k) == key) {
        return Some(v);
    }
    if depth >= 4 {
        return None;
    }
    obj.values()
        .filter(|v| v.is_object())
        .find_map(|v| find_key(v, key, depth + 1))
}

/// The endpoints that describe each server, most specific first.
fn info_paths(kind: Option<ServerKind>) -> &'static [&'static str] {
    match kind {
        Some(ServerKind::LlamaCpp) => &["/props"],
        Some(ServerKind::Openai) => &[],
        _ => &["/server_info", "/get_server_info", "/props"],
    }
}

/// Ask the server about itself; every failure just leaves fields empty.
pub fn fetch(base: &Url, kind: Option<ServerKind>, req: &RequestSpec, t: Duration) -> ServerInfo {
    let get_req = RequestSpec {
        method: "GET".into(),
        body: None,
        ..req.clone()
    };
    let get = |path: &str| -> Option<Value> {
        let mut u = base.clone();
        u.set_path(path);
        match http(u.as_str(), &get_req, t, true) {
            Ok((200, body)) => serde_json::from_str(&body).ok(),
            _ => None,
        }
    };
    let mut info = ServerInfo {
        kind: kind.map(|k| k.name().to_string()),
        base_url: Some(base.as_str().trim_end_matches('/').to_string()),
        ..Default::default()
    };
    for p in info_paths(kind) {
        let Some(v) = get(p) else { continue };
        if !v.is_object() {
            continue;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
        info.simulated = v.get("simulated").and_then(Value::as_bool) == Some(true);
        info.model = s("served_model_name")
            .or_else(|| s("model_alias"))
            .or_else(|| s("model_path"))
            .or_else(|| s("model"));
        info.version = s("version");
        if info.kind.is_none() {
            info.kind = Some(
                if info.simulated {
                    "llm-sim"
                } else if *p == "/props" {
                    "llama.cpp"
                } else {
                    "sglang"
                }
                .to_string(),
            );
        }
        info.args = Some(v);
        break;
    }
    // llm-sim imitating a preset's server is still llm-sim.
    if info.simulated {
        info.kind = Some("llm-sim".into());
    }
    if info.model.is_none() {
        if let Some(m) = get("/v1/models") {
            info.model = m
                .pointer("/data/0/id")
                .and_then(Value::as_str)
                .map(String::from);
            if m.get("simulated").and_then(Value::as_bool) == Some(true) {
                info.simulated = true;
            }
        }
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_match_with_dashes_or_underscores_and_nested() {
        let args = json!({"speculative_num_steps": 4, "served_model_name": "m",
            "default_generation_settings": {"n_ctx": 4096, "speculative": {"n_max": 8}}});
        let ok = |s: &str| ConfigExpect::parse(s).unwrap().check(&args);
        assert_eq!(ok("speculative-num-steps=4"), None);
        assert_eq!(ok("--speculative_num_steps=4"), None);
        assert_eq!(ok("n-ctx=4096"), None);
        assert_eq!(ok("default_generation_settings.speculative.n_max=8"), None);
        assert_eq!(
            ok("speculative-num-steps=5").unwrap(),
            "speculative-num-steps is 4, want 5"
        );
        assert!(ok("tp-size=2").unwrap().contains("not reported"));
        assert!(ConfigExpect::parse("novalue").is_err());
        assert!(ConfigExpect::parse("a..b=1").is_err());
    }
}
