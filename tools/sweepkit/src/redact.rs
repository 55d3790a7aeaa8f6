//! Secrets never leave a tool: one redaction for JSON values (records,
//! server info), command lines (argv, ExecStart) and free text (stderr
//! lines, log tails), applied where records are serialized (`io`, `flat`)
//! and where messages are printed (`diag`), so no call site can forget.
//!
//! Servers report their own secrets: SGLang's `/server_info` returns the
//! resolved `ServerArgs` with `api_key`, `admin_api_key` and
//! `ssl_keyfile_password` in clear, twice (top level and
//! `internal_states[0]`; sgl-project/sglang
//! `python/sglang/srt/entrypoints/http_server.py` `get_server_info`, which
//! returns `dataclasses.asdict(server_args)`; sglang issues 30166, 37457),
//! and logs `server_args=ServerArgs(... api_key='...' ...)` at start-up.

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde_json::Value;

/// What a secret is replaced with.
pub const REDACTED: &str = "<redacted>";

/// Secret values seen so far (replaced under a secret key, or given to a
/// tool as `--api-key`): scrubbed from every string written afterwards,
/// wherever they turn up (a log line, an error message).
static KNOWN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Shorter values are too likely to be ordinary text ("1", "yes").
const MIN_KNOWN_LEN: usize = 6;

/// Remember `secret` so it is scrubbed from all later output.
pub fn remember(secret: &str) {
    let s = secret.trim();
    if s.len() >= MIN_KNOWN_LEN && s != REDACTED {
        KNOWN
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(s.to_string());
    }
}

/// Is this key or flag name (`api_key`, `--admin-api-key`, `HF_TOKEN`,
/// `ssl_keyfile_password`) a secret's? Token *counts* are not:
/// `max_total_tokens`, `num_speculative_tokens`, `bos_token`.
pub fn is_secret_key(name: &str) -> bool {
    let n = name
        .trim_start_matches('-')
        .to_ascii_lowercase()
        .replace('-', "_");
    if ["password", "passwd", "passphrase", "secret", "credential"]
        .iter()
        .any(|w| n.contains(w))
    {
        return true;
    }
    if matches!(
        n.as_str(),
        "authorization" | "apikey" | "key" | "token" | "keys"
    ) {
        return true;
    }
    let words: Vec<&str> = n.split('_').filter(|w| !w.is_empty()).collect();
    let (Some(last), prev) = (words.last(), words.len().checked_sub(2).map(|i| words[i])) else {
        return false;
    };
    match *last {
        "key" | "keys" | "apikey" => !matches!(
            prev,
            // `ssh_key` (sweepkit's own target block and flag) holds paths
            // to identity files, never key material.
            Some("sort" | "cache" | "hash" | "partition" | "routing" | "group" | "public" | "ssh")
        ),
        // Special tokens of a tokenizer (llama.cpp's /props) are text.
        "token" => !matches!(
            prev,
            Some("bos" | "eos" | "pad" | "unk" | "sep" | "cls" | "mask" | "start" | "end")
        ),
        _ => false,
    }
}

/// Text mode is stricter: a bare `KEY` or `token` in prose ("want
/// KEY=VALUE") is a placeholder, not a secret's name; `Authorization:` is
/// left to the `Bearer` rule, which redacts the token and not the scheme.
fn is_secret_name_in_text(name: &str) -> bool {
    let n = name.trim_start_matches('-');
    let l = n.to_ascii_lowercase();
    (n.contains(['_', '-']) && is_secret_key(n))
        || l == "apikey"
        || ["password", "passwd", "passphrase", "secret"]
            .iter()
            .any(|w| l.contains(w))
}

/// Values that say "no secret set"; keeping them keeps the record honest.
fn is_unset(v: &str) -> bool {
    matches!(v, "" | "None" | "null" | "none" | REDACTED)
}

/// Redact `v` in place: values under secret keys at any depth (arrays
/// included), secret flags in string arrays (argv), and secrets in text.
pub fn value(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let about_secret = names_a_secret(m);
            for (k, x) in m.iter_mut() {
                let secret =
                    is_secret_key(k) || (about_secret && !NAME_FIELDS.contains(&k.as_str()));
                if secret && !matches!(x, Value::Null | Value::Bool(_)) {
                    if let Value::String(s) = x {
                        if is_unset(s) {
                            continue;
                        }
                        remember(s);
                    }
                    *x = Value::String(REDACTED.into());
                } else {
                    value(x);
                }
            }
        }
        Value::Array(a) => {
            let mut after_flag = false;
            for x in a.iter_mut() {
                if let Value::String(s) = x {
                    if after_flag && !s.starts_with("--") {
                        remember(s);
                        *s = REDACTED.into();
                        after_flag = false;
                        continue;
                    }
                    after_flag = s.starts_with('-') && is_secret_key(s) && !s.contains('=');
                    *s = text(s);
                } else {
                    after_flag = false;
                    value(x);
                }
            }
        }
        Value::String(s) => *s = text(s),
        _ => {}
    }
}

/// Fields that name a setting rather than hold its value.
const NAME_FIELDS: [&str; 3] = ["flag", "name", "key"];

/// An object that describes a secret setting by name, like svc-swap's
/// change `{"flag": "--api-key", "old": "...", "new": "..."}`: all its
/// other values are the secret's.
fn names_a_secret(m: &serde_json::Map<String, Value>) -> bool {
    NAME_FIELDS
        .iter()
        .any(|f| m.get(*f).and_then(Value::as_str).is_some_and(is_secret_key))
}

/// A redacted copy of `v`.
pub fn redacted(mut v: Value) -> Value {
    value(&mut v);
    v
}

/// A redacted copy of a command line split into words (ExecStart, argv):
/// `--api-key X`, `--api-key=X`, `HF_TOKEN=X`.
pub fn argv<S: AsRef<str>>(words: &[S]) -> Vec<String> {
    let mut v = Value::Array(
        words
            .iter()
            .map(|w| Value::String(w.as_ref().to_string()))
            .collect(),
    );
    value(&mut v);
    match v {
        Value::Array(a) => a
            .into_iter()
            .map(|x| x.as_str().unwrap_or_default().to_string())
            .collect(),
        _ => unreachable!("an array stays an array"),
    }
}

/// Redact secrets in free text: `--api-key X`, `--hf-token=X`,
/// `HF_TOKEN=X`, `api_key='X'` (Python repr), `"api_key": "X"` (JSON in
/// text), `Bearer X`, and every remembered secret value.
pub fn text(s: &str) -> String {
    let mut out = scan(s);
    let known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    for k in known.iter() {
        if out.contains(k.as_str()) {
            out = out.replace(k.as_str(), REDACTED);
        }
    }
    out
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// One pass over `s`, copying it and replacing the values that follow a
/// secret name or `Bearer`.
fn scan(s: &str) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        if !is_name_char(b[i]) || (i > 0 && is_name_char(b[i - 1])) {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && is_name_char(b[i]) {
            i += 1;
        }
        let name: String = b[start..i].iter().collect();
        out.push_str(&name);
        let flag = name.starts_with("--");
        let bearer = name.eq_ignore_ascii_case("bearer");
        if !bearer && !is_secret_name_in_text(&name) {
            continue;
        }
        if let Some((sep_end, val_end)) = value_after(&b, i, flag || bearer) {
            let val: String = b[sep_end..val_end].iter().collect();
            let (q, inner) = unquote(&val);
            out.extend(&b[i..sep_end]);
            if is_unset(inner) || (flag && inner.starts_with("--")) {
                out.push_str(&val);
            } else {
                out.push_str(&format!("{q}{REDACTED}{q}"));
            }
            i = val_end;
        }
    }
    out
}

/// After a name at `i`: the separator (`=`, `:`, `": "`, or spaces when
/// `spaced`) and the value's end. None when no value follows.
fn value_after(b: &[char], mut i: usize, spaced: bool) -> Option<(usize, usize)> {
    // A closing quote of a JSON key: `"api_key": "X"`.
    if b.get(i) == Some(&'"') || b.get(i) == Some(&'\'') {
        i += 1;
    }
    let ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == ' ' || b[*i] == '\t') {
            *i += 1;
        }
    };
    let before = i;
    ws(&mut i);
    match b.get(i) {
        Some('=') | Some(':') => {
            i += 1;
            ws(&mut i);
        }
        _ if spaced && i > before => {}
        _ => return None,
    }
    let start = i;
    let end = match b.get(i) {
        Some(&q @ ('"' | '\'')) => {
            let mut j = i + 1;
            while j < b.len() && b[j] != q {
                j += if b[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(b.len())
        }
        Some(_) => {
            let mut j = i;
            while j < b.len() && !b[j].is_whitespace() && !",;)}]&".contains(b[j]) {
                j += 1;
            }
            j
        }
        None => return None,
    };
    (end > start).then_some((start, end))
}

/// The quote character (or "") and the text inside.
fn unquote(v: &str) -> (&str, &str) {
    for q in ["\"", "'"] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return (q, &v[1..v.len() - 1]);
        }
    }
    ("", v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_keys_and_token_counts() {
        for k in [
            "api_key",
            "admin_api_key",
            "ssl_keyfile_password",
            "hf_token",
            "HF_TOKEN",
            "--api-key",
            "OPENAI_API_KEY",
            "client_secret",
            "Authorization",
            "access_token",
            "token",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "max_total_tokens",
            "num_speculative_tokens",
            "speculative_num_draft_tokens",
            "max_tokens",
            "output_tokens",
            "tokenizer_path",
            "ssl_keyfile",
            "ssh_key",
            "--ssh-key",
            "bos_token",
            "tokens_per_chunk",
            "token_usage",
            "max_running_requests",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn sglang_server_info_shape_is_redacted_at_any_depth() {
        let v = redacted(json!({
            "api_key": "sk-top", "admin_api_key": "adm-1", "hf_token": "hf_x1",
            "ssl_keyfile_password": "pw-1", "max_total_tokens": 32768,
            "num_speculative_tokens": 3, "ssl_keyfile": null, "tokenizer_path": "t",
            "internal_states": [{"api_key": "sk-top", "avg_spec_accept_length": 2.5}],
            "version": "0.5.23"
        }));
        assert_eq!(v["api_key"], REDACTED);
        assert_eq!(v["admin_api_key"], REDACTED);
        assert_eq!(v["hf_token"], REDACTED);
        assert_eq!(v["ssl_keyfile_password"], REDACTED);
        assert_eq!(v["internal_states"][0]["api_key"], REDACTED);
        assert_eq!(v["internal_states"][0]["avg_spec_accept_length"], 2.5);
        assert_eq!(v["max_total_tokens"], 32768);
        assert_eq!(v["num_speculative_tokens"], 3);
        assert_eq!(v["ssl_keyfile"], Value::Null);
        assert_eq!(v["version"], "0.5.23");
        // Unset secrets stay visibly unset.
        assert_eq!(redacted(json!({"api_key": null}))["api_key"], Value::Null);
    }

    #[test]
    fn a_change_of_a_secret_flag_is_redacted() {
        let v = redacted(json!({"changes": [
            {"flag": "--api-key", "old": "sk-old-1", "new": "sk-new-1"},
            {"flag": "--max-running-requests", "old": "8", "new": "16"},
            {"flag": "--hf-token", "old": null, "new": "hf_abcd"}
        ]}));
        let c = &v["changes"];
        assert_eq!(
            c[0],
            json!({"flag": "--api-key", "old": REDACTED, "new": REDACTED})
        );
        assert_eq!(c[1]["new"], "16");
        assert_eq!(c[2]["old"], Value::Null);
        assert_eq!(c[2]["new"], REDACTED);
    }

    #[test]
    fn command_lines_are_redacted() {
        let got = argv(&[
            "HF_TOKEN=hf_abcd",
            "python",
            "--api-key",
            "sk-argv-1",
            "--admin-api-key=adm-argv",
            "--max-total-tokens",
            "4096",
            "--hf-token",
            "--port",
        ]);
        assert_eq!(
            got,
            [
                "HF_TOKEN=<redacted>",
                "python",
                "--api-key",
                "<redacted>",
                "--admin-api-key=<redacted>",
                "--max-total-tokens",
                "4096",
                "--hf-token",
                "--port"
            ]
        );
    }

    #[test]
    fn free_text_is_redacted() {
        let cases = [
            (
                "ExecStart=/bin/srv --api-key k-text-1 --port 1",
                "ExecStart=/bin/srv --api-key <redacted> --port 1",
            ),
            (
                "server_args=ServerArgs(api_key='k-py-1', max_total_tokens=5)",
                "server_args=ServerArgs(api_key='<redacted>', max_total_tokens=5)",
            ),
            (
                r#"{"admin_api_key": "k-json-1", "max_tokens": 3}"#,
                r#"{"admin_api_key": "<redacted>", "max_tokens": 3}"#,
            ),
            (
                "Authorization: Bearer k-bear-1",
                "Authorization: Bearer <redacted>",
            ),
            ("api_key=None, hf_token=None", "api_key=None, hf_token=None"),
            ("want KEY=VALUE", "want KEY=VALUE"),
            ("--hf-token --port 3", "--hf-token --port 3"),
        ];
        for (input, want) in cases {
            assert_eq!(scan(input), want, "{input}");
        }
        assert_eq!(scan("x Bearer abc.def y"), "x Bearer <redacted> y");
    }

    #[test]
    fn remembered_values_are_scrubbed_everywhere() {
        let _ = redacted(json!({"api_key": "sk-remember-me-42"}));
        assert_eq!(
            text("log: loaded with sk-remember-me-42 ok"),
            "log: loaded with <redacted> ok"
        );
    }
}
