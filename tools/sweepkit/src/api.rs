//! The OpenAI-compatible API as the tools meet it (issue 46): its base in a
//! `--url`, and its key.
//!
//! `http://HOST:PORT/v1` (or `/v1/`), as every client library and
//! `OPENAI_BASE_URL` write it, is the API base: wait-ready, loadgen and
//! sweep's pre-flight take its server root (what precedes `/v1`) for the
//! health paths and the base for the API's endpoints.
//!
//! A server that wants a key answers HTTP 401 (none, or a wrong one) or 403
//! (refused): no retry can change that, so wait-ready and loadgen stop at
//! once ([`crate::exit::AUTH_REFUSED`]) with [`key_refused`]'s line.

/// The API's model list, under the server root: what wait-ready probes at
/// an API base given without `--server` (the one path every
/// OpenAI-compatible server has).
pub const MODELS: &str = "/v1/models";

/// The server root of `s` (a URL or its path) when `s` ends in the API
/// base `/v1` (one trailing `/` allowed): `http://h:1/v1/` gives
/// `http://h:1`, `/v1` gives the empty root, `/proxy/v1` gives `/proxy`.
/// Any other URL or path (`/v1/models`, `/`) is no API base: None.
pub fn root_of(s: &str) -> Option<&str> {
    s.strip_suffix('/').unwrap_or(s).strip_suffix("/v1")
}

/// The environment variable every tool reads the key from.
pub const KEY_ENV: &str = "SWEEPKIT_API_KEY";
/// The OpenAI client libraries' variable (loadgen reads it, and wait-ready
/// with `--server openai`).
pub const OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";

/// Whether `word` of a command line gives an API key: `--api-key` (its
/// value the next word) or `--api-key=KEY`. `--admin-api-key` is not one.
pub fn is_key_flag(word: &str) -> bool {
    word == "--api-key" || word.starts_with("--api-key=")
}

/// An HTTP status that says the request wants (another) API key.
pub fn is_key_refusal(status: u16) -> bool {
    matches!(status, 401 | 403)
}

/// The line for a 401 or 403 at `what` (`GET /v1/models`, a probe URL):
/// what to set, naming OPENAI_API_KEY too when `openai` (`--server
/// openai`); with `key_given`, the key sent was refused.
pub fn key_refused(what: &str, status: u16, key_given: bool, openai: bool) -> String {
    let name = match status {
        401 => "unauthorized",
        _ => "forbidden",
    };
    let vars = match openai {
        true => format!("{KEY_ENV} (or {OPENAI_KEY_ENV})"),
        false => KEY_ENV.to_string(),
    };
    match key_given {
        false => format!(
            "{what}: HTTP {status} ({name}): the server wants an API key; \
             set {vars} in the environment"
        ),
        true => format!(
            "{what}: HTTP {status} ({name}): the server refused the API key given; \
             set the server's key in {vars}"
        ),
    }
}

/// Whether the environment holds a key a sweep's tools would send:
/// SWEEPKIT_API_KEY (every tool) or OPENAI_API_KEY (loadgen), not empty.
pub fn key_in_env() -> bool {
    [KEY_ENV, OPENAI_KEY_ENV]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|k| !k.is_empty()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_base_and_its_root() {
        assert_eq!(root_of("http://h:1/v1"), Some("http://h:1"));
        assert_eq!(root_of("http://h:1/v1/"), Some("http://h:1"));
        assert_eq!(root_of("/v1"), Some(""));
        assert_eq!(root_of("/v1/"), Some(""));
        assert_eq!(root_of("/proxy/v1"), Some("/proxy"));
        for not in ["/", "", "/v1/models", "/v1//", "/v10", "http://h:1"] {
            assert_eq!(root_of(not), None, "{not}");
        }
    }

    #[test]
    fn a_refused_key_says_what_to_set() {
        let none = key_refused("GET /v1/models", 401, false, false);
        assert_eq!(
            none,
            "GET /v1/models: HTTP 401 (unauthorized): the server wants an API key; \
             set SWEEPKIT_API_KEY in the environment"
        );
        let wrong = key_refused("http://h/v1/models", 403, true, true);
        assert!(wrong.contains("HTTP 403 (forbidden)"), "{wrong}");
        assert!(wrong.contains("refused the API key given"), "{wrong}");
        assert!(
            wrong.contains("SWEEPKIT_API_KEY (or OPENAI_API_KEY)"),
            "{wrong}"
        );
        assert!(is_key_refusal(401) && is_key_refusal(403) && !is_key_refusal(404));
    }
}
