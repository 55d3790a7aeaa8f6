//! Once ready: what the server says about itself (SGLang's /server_info or
//! /get_server_info, llama.cpp's /props, llm-sim's SGLang-shaped copy,
//! vLLM's /version), for the record's `server` and for `--expect-config`.

use std::time::Duration;

use serde_json::Value;
use sweepkit::exit::Exit;
use sweepkit::records::{ServerInfo, ServerKind as RecordKind};
use url::Url;

use crate::check::{json_matches, JsonPath, Step};
use crate::cli::{usage, ServerKind};
use crate::probe::{http, RequestSpec};

/// `--expect-config KEY=VALUE`. KEY is a flag name (dashes or
/// underscores), optionally followed by a path into its value:
/// `speculative-config.num_speculative_tokens=3` reads vLLM's JSON-valued
/// `--speculative-config '{"num_speculative_tokens":3}'` (a string in argv
/// and in some reports, an object in others).
#[derive(Debug, Clone)]
pub struct ConfigExpect {
    pub key: String,
    pub value: String,
    path: JsonPath,
}

impl ConfigExpect {
    pub fn parse(s: &str) -> Result<Self, Exit> {
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| usage(format!("--expect-config '{s}': want KEY=VALUE")))?;
        let k = k.trim().trim_start_matches("--");
        if k.is_empty() {
            return Err(usage(format!("--expect-config '{s}': empty key")));
        }
        let path = JsonPath::parse(k).map_err(|e| usage(format!("--expect-config: {e}")))?;
        if !matches!(path.steps.first(), Some(Step::Key(_))) {
            return Err(usage(format!(
                "--expect-config '{s}': KEY must start with a name"
            )));
        }
        Ok(ConfigExpect {
            key: k.to_string(),
            value: v.to_string(),
            path,
        })
    }

    /// None when the live args agree, else why not. `source` says where
    /// `args` came from, for the message (`the server`, `PID 42's argv`).
    pub fn check(&self, args: &Value, source: &str) -> Option<String> {
        let found = match self.lookup(args) {
            Ok(v) => v,
            Err(why) => return Some(format!("{}: {why} in {source}", self.key)),
        };
        if json_matches(&found, &self.value) {
            None
        } else {
            Some(format!("{} is {found}, want {}", self.key, self.value))
        }
    }

    /// The flag's name, normalized (`speculative_num_steps`).
    pub fn name(&self) -> String {
        match self.path.steps.first() {
            Some(Step::Key(k)) => norm(k),
            _ => String::new(),
        }
    }

    /// The live value, when the server reports one.
    pub fn reported(&self, args: &Value) -> Option<Value> {
        self.lookup(args).ok()
    }

    /// The first step is found by name anywhere (normalized); the rest
    /// walks into the value, parsing a JSON string on the way.
    fn lookup(&self, args: &Value) -> Result<Value, Unreported> {
        let Some((Step::Key(first), rest)) = self.path.steps.split_first() else {
            return Err(Unreported::NotAName);
        };
        let mut v = find_key(args, &norm(first), 0)
            .cloned()
            .ok_or(Unreported::Missing)?;
        for step in rest {
            if let Value::String(text) = &v {
                v = serde_json::from_str(text).map_err(|_| Unreported::NotJson(text.clone()))?;
            }
            let next = match step {
                Step::Key(k) => v.as_object().and_then(|o| o.get(k)),
                Step::Index(i) => v.as_array().and_then(|a| a.get(*i)),
            };
            v = next.cloned().ok_or(Unreported::Missing)?;
        }
        Ok(v)
    }
}

/// Why the server's report holds no value for a key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum Unreported {
    #[error("not a name")]
    NotAName,
    #[error("not reported")]
    Missing,
    /// A string on the way that does not parse as JSON.
    #[error("value {0:?} is not JSON")]
    NotJson(String),
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

/// The endpoints that describe each server, most specific first. vLLM's
/// `/server_info` exists only with `VLLM_SERVER_DEV_MODE=1` and then is
/// text unless `?config_format=json`: its args come from argv instead.
fn info_paths(kind: Option<ServerKind>) -> &'static [&'static str] {
    match kind {
        Some(ServerKind::LlamaCpp) => &["/props"],
        Some(ServerKind::Openai | ServerKind::Vllm) => &[],
        _ => &["/server_info", "/get_server_info", "/props"],
    }
}

/// Which server answered `path` with `v`. Having a `/server_info` does not
/// make a server SGLang (vLLM has one in dev mode, llm-sim and proxies
/// imitate it): SGLang's carries `internal_states` next to its
/// `ServerArgs` (sgl-project/sglang
/// `python/sglang/srt/entrypoints/http_server.py` `get_server_info`).
fn kind_of(path: &str, v: &Value) -> Option<&'static str> {
    let has = |k: &str| v.get(k).is_some();
    if v.get("simulated").and_then(Value::as_bool) == Some(true) {
        Some("llm-sim")
    } else if path == "/props" && has("default_generation_settings") {
        Some("llama.cpp")
    } else if has("internal_states") || (has("tp_size") && has("chunked_prefill_size")) {
        Some("sglang")
    } else {
        None
    }
}

/// `owned_by` of `/v1/models`: vLLM says `vllm` (the default of
/// `ModelCard.owned_by` in vllm `vllm/entrypoints/openai/protocol.py`),
/// llama.cpp `llamacpp`, SGLang `sglang`.
fn kind_of_owner(owner: &str) -> Option<&'static str> {
    match owner {
        "vllm" => Some("vllm"),
        "sglang" => Some("sglang"),
        "llamacpp" => Some("llama.cpp"),
        _ => None,
    }
}

/// Fill `info` from the server's report of itself, kept whole as `args`.
fn take_report(info: &mut ServerInfo, v: Value) {
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    info.simulated = v.get("simulated").and_then(Value::as_bool) == Some(true);
    info.model = s("served_model_name")
        .or_else(|| s("model_alias"))
        .or_else(|| s("model_path"))
        .or_else(|| s("model"));
    info.version = s("version");
    info.args = Some(v);
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
        kind: kind.map(|k| RecordKind::from(k.name())),
        base_url: Some(base.as_str().trim_end_matches('/').to_string()),
        ..Default::default()
    };
    let seen = info_paths(kind)
        .iter()
        .find_map(|p| Some((*p, get(p).filter(Value::is_object)?)))
        .and_then(|(p, v)| {
            let seen = kind_of(p, &v);
            take_report(&mut info, v);
            seen
        });
    let models = get("/v1/models");
    let first = models.as_ref().and_then(|m| m.pointer("/data/0"));
    if info.model.is_none() {
        info.model = first
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .map(String::from);
    }
    if models.as_ref().and_then(|m| m.get("simulated")) == Some(&Value::Bool(true)) {
        info.simulated = true;
    }
    let owner = first
        .and_then(|m| m.get("owned_by"))
        .and_then(Value::as_str);
    if info.kind.is_none() {
        info.kind = seen.or(owner.and_then(kind_of_owner)).map(RecordKind::from);
    }
    // llm-sim imitating a preset's server is still llm-sim.
    if info.simulated {
        info.kind = Some(RecordKind::LlmSim);
    }
    if info.version.is_none() {
        // vLLM always serves `/version` -> {"version": ...} (vllm
        // `vllm/entrypoints/openai/api_server.py` `show_version`).
        info.version = get("/version")
            .and_then(|v| v.get("version").and_then(Value::as_str).map(String::from));
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
        let ok = |s: &str| ConfigExpect::parse(s).unwrap().check(&args, "the server");
        assert_eq!(ok("speculative-num-steps=4"), None);
        assert_eq!(ok("--speculative_num_steps=4"), None);
        assert_eq!(ok("n-ctx=4096"), None);
        assert_eq!(ok("default_generation_settings.speculative.n_max=8"), None);
        assert_eq!(
            ok("speculative-num-steps=5").unwrap(),
            "speculative-num-steps is 4, want 5"
        );
        testkit::assert_contains(&ok("tp-size=2").unwrap(), "not reported in the server");
        assert!(ConfigExpect::parse("novalue").is_err());
        assert!(ConfigExpect::parse("a..b=1").is_err());
        assert!(ConfigExpect::parse("[0]=1").is_err());
    }

    #[test]
    fn a_server_info_alone_does_not_make_sglang() {
        assert_eq!(kind_of("/server_info", &json!({"vllm_config": "x"})), None);
        let sg = json!({"model_path": "m", "internal_states": [{}], "version": "0.5.23"});
        assert_eq!(kind_of("/server_info", &sg), Some("sglang"));
        let sim = json!({"simulated": true, "internal_states": []});
        assert_eq!(kind_of("/server_info", &sim), Some("llm-sim"));
        let lc = json!({"default_generation_settings": {}});
        assert_eq!(kind_of("/props", &lc), Some("llama.cpp"));
        assert_eq!(kind_of_owner("vllm"), Some("vllm"));
        assert_eq!(kind_of_owner("system"), None);
    }

    #[test]
    fn json_valued_flags_are_read_as_json() {
        // argv form: the flag's value is JSON text.
        let argv =
            json!({"speculative_config": r#"{"method":"eagle","num_speculative_tokens":3}"#});
        // report form: already an object.
        let info = json!({"speculative_config": {"method": "eagle", "num_speculative_tokens": 3}});
        for args in [&argv, &info] {
            let c = |s: &str| ConfigExpect::parse(s).unwrap().check(args, "x");
            assert_eq!(c("speculative-config.num_speculative_tokens=3"), None);
            assert_eq!(c("speculative_config.method=eagle"), None);
            assert_eq!(
                c("speculative-config.num_speculative_tokens=4").unwrap(),
                "speculative-config.num_speculative_tokens is 3, want 4"
            );
            testkit::assert_contains(&c("speculative-config.model=d").unwrap(), "not reported");
        }
        let bad = json!({"speculative_config": "{not json"});
        let e = ConfigExpect::parse("speculative-config.method=eagle")
            .unwrap()
            .check(&bad, "x")
            .unwrap();
        assert!(e.contains("not JSON"), "{e}");
    }
}
