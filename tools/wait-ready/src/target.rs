//! Probe targets: parsing `http(s)://` and `tcp://` arguments, and the
//! server presets that turn a base URL into the endpoint that really means
//! "ready" for that server (and know each server's traps).

use sweepkit::api;
use url::Url;

use crate::check::{Expect, StatusSet};
use crate::cli::ServerKind;

/// Where a probe goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Addr {
    Http(Url),
    Tcp { host: String, port: u16 },
}

/// One thing that must pass.
#[derive(Debug, Clone)]
pub struct Target {
    /// As shown in records and messages (the URL, or tcp://host:port).
    pub label: String,
    pub addr: Addr,
    pub expect: Expect,
}

impl Target {
    pub fn host_port(&self) -> (String, u16) {
        match &self.addr {
            Addr::Http(u) => (
                u.host_str()
                    .unwrap_or("")
                    .trim_matches(['[', ']'])
                    .to_string(),
                u.port_or_known_default().unwrap_or(80),
            ),
            Addr::Tcp { host, port } => (host.clone(), *port),
        }
    }

    /// The base URL (scheme, host, port) of an HTTP target.
    pub fn base_url(&self) -> Option<Url> {
        match &self.addr {
            Addr::Http(u) => {
                let mut b = u.clone();
                b.set_path("");
                b.set_query(None);
                b.set_fragment(None);
                Some(b)
            }
            Addr::Tcp { .. } => None,
        }
    }
}

/// A TARGET argument that is no address wait-ready can probe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("target '{target}': {why}")]
pub struct BadTarget {
    pub target: String,
    pub why: String,
}

/// Parse one TARGET argument.
pub fn parse_addr(s: &str) -> Result<Addr, BadTarget> {
    let bad = |why: &str| BadTarget {
        target: s.to_string(),
        why: why.to_string(),
    };
    if let Some(rest) = s.strip_prefix("tcp://") {
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| bad("want tcp://HOST:PORT"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| bad(&format!("port '{port}' is not a number")))?;
        let host = host.trim_matches(['[', ']']);
        if host.is_empty() || port == 0 {
            return Err(bad("want tcp://HOST:PORT"));
        }
        return Ok(Addr::Tcp {
            host: host.to_string(),
            port,
        });
    }
    let url = Url::parse(s).map_err(|e| bad(&e.to_string()))?;
    match url.scheme() {
        "http" => {}
        "https" if cfg!(feature = "tls") => {}
        "https" => return Err(bad("https needs wait-ready built with --features tls")),
        other => return Err(bad(&format!("unknown scheme '{other}' (http, https, tcp)"))),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(Addr::Http(url))
}

/// The path that says "ready" for each server.
pub fn health_paths(kind: ServerKind, deep: bool) -> Vec<&'static str> {
    match kind {
        // /v1/models answers during warm-up; /health waits for it.
        ServerKind::Sglang if deep => vec!["/health", "/health_generate"],
        ServerKind::Sglang => vec!["/health"],
        // vLLM refuses connections while loading, then /health 200.
        ServerKind::Vllm => vec!["/health"],
        // llama-server answers 503 "Loading model" on every route while loading.
        ServerKind::LlamaCpp => vec!["/health"],
        ServerKind::LlmSim => vec!["/health"],
        ServerKind::Openai => vec!["/v1/models"],
    }
}

/// `url` with the path `root` then `path`.
fn at(url: &Url, root: &str, path: &str) -> Url {
    let mut u = url.clone();
    u.set_path(&format!("{root}{path}"));
    u
}

/// Build the targets from the arguments, completing base URLs from the
/// preset. `user` checks apply to the user's own URLs; endpoints a preset
/// adds only need a 2xx.
pub fn build(
    args: &[String],
    preset: Option<ServerKind>,
    deep: bool,
    user: &Expect,
) -> Result<Vec<Target>, BadTarget> {
    let mut out: Vec<Target> = Vec::new();
    let mut push = |addr: Addr, expect: Expect| {
        let label = match &addr {
            Addr::Http(u) => u.to_string(),
            Addr::Tcp { host, port } => format!("tcp://{host}:{port}"),
        };
        if !out.iter().any(|t| t.label == label) {
            out.push(Target {
                label,
                addr,
                expect,
            });
        }
    };
    for a in args {
        let addr = parse_addr(a)?;
        let Addr::Http(url) = &addr else {
            push(addr, user.clone());
            continue;
        };
        // `http://HOST:PORT/v1`, the OpenAI API base: the health paths
        // hang off the server root before it; with no preset, its model
        // list is the one path every such server has (issue 46), and the
        // root's /health must not say 503: SGLang (and llm-sim) list their
        // models while still warming up, when completions get 503.
        let api_root = api::root_of(url.path()).map(str::to_string);
        let Some(kind) = preset else {
            match api_root {
                Some(root) => {
                    push(Addr::Http(at(url, &root, api::MODELS)), user.clone());
                    let health = at(url, &root, "/health");
                    push(
                        Addr::Http(health),
                        Expect::status_only(StatusSet::not_unavailable()),
                    );
                }
                None => push(addr, user.clone()),
            }
            continue;
        };
        let bare = matches!(url.path(), "" | "/");
        if bare || api_root.is_some() {
            let root = api_root.unwrap_or_default();
            for p in health_paths(kind, deep) {
                push(Addr::Http(at(url, &root, p)), user.clone());
            }
        } else {
            push(addr.clone(), user.clone());
            // The SGLang trap: /v1/models is 200 before the server can serve.
            if matches!(kind, ServerKind::Sglang | ServerKind::LlmSim)
                && url.path().starts_with("/v1/")
            {
                for p in health_paths(kind, deep) {
                    let mut u = url.clone();
                    u.set_path(p);
                    u.set_query(None);
                    push(Addr::Http(u), Expect::status_only(StatusSet::success()));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(args: &[&str], preset: Option<ServerKind>, deep: bool) -> Vec<String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let e = Expect::status_only(StatusSet::success());
        build(&args, preset, deep, &e)
            .unwrap()
            .into_iter()
            .map(|t| t.label)
            .collect()
    }

    #[test]
    fn parses_tcp_and_http() {
        assert_eq!(
            parse_addr("tcp://127.0.0.1:8000").unwrap(),
            Addr::Tcp {
                host: "127.0.0.1".into(),
                port: 8000
            }
        );
        assert_eq!(
            parse_addr("tcp://[::1]:80").unwrap(),
            Addr::Tcp {
                host: "::1".into(),
                port: 80
            }
        );
        assert!(matches!(parse_addr("http://h:1/x"), Ok(Addr::Http(_))));
        for bad in [
            "tcp://nohost",
            "tcp://h:port",
            "tcp://:80",
            "http//x",
            "ftp://h/",
            "localhost:8000",
            "http://:80/",
        ] {
            let e = parse_addr(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("target '{bad}'")), "{e}");
        }
    }

    #[test]
    fn presets_complete_base_urls() {
        let sg = Some(ServerKind::Sglang);
        assert_eq!(
            labels(&["http://h:30000"], sg, false),
            ["http://h:30000/health"]
        );
        assert_eq!(
            labels(&["http://h:30000/"], sg, true),
            ["http://h:30000/health", "http://h:30000/health_generate"]
        );
        assert_eq!(
            labels(&["http://h:1"], Some(ServerKind::Openai), false),
            ["http://h:1/v1/models"]
        );
        assert_eq!(labels(&["http://h:1"], None, false), ["http://h:1/"]);
    }

    /// Issue 46: `--url http://HOST:PORT/v1`, the OpenAI API base every
    /// client library takes, was probed as a path (HTTP 404, "give
    /// --server KIND" to a user who had).
    #[test]
    fn an_api_base_url_probes_the_server_root_s_health() {
        let vllm = Some(ServerKind::Vllm);
        for base in ["http://h:8000/v1", "http://h:8000/v1/"] {
            assert_eq!(labels(&[base], vllm, false), ["http://h:8000/health"]);
            assert_eq!(
                labels(&[base], Some(ServerKind::Sglang), true),
                ["http://h:8000/health", "http://h:8000/health_generate"]
            );
            assert_eq!(
                labels(&[base], Some(ServerKind::Openai), false),
                ["http://h:8000/v1/models"]
            );
            // No preset: the model list, and the root's /health not 503
            // (SGLang lists its models while it still warms up).
            assert_eq!(
                labels(&[base], None, false),
                ["http://h:8000/v1/models", "http://h:8000/health"]
            );
        }
        assert_eq!(
            labels(&["http://h/proxy/v1"], vllm, false),
            ["http://h/proxy/health"]
        );
    }

    #[test]
    fn sglang_models_endpoint_also_needs_health() {
        assert_eq!(
            labels(
                &["http://h:30000/v1/models"],
                Some(ServerKind::Sglang),
                false
            ),
            ["http://h:30000/v1/models", "http://h:30000/health"]
        );
        // Without the preset the user's URL is taken as is.
        assert_eq!(
            labels(&["http://h:30000/v1/models"], None, false),
            ["http://h:30000/v1/models"]
        );
    }
}
