//! The live process's own argument vector, for `--expect-config` when the
//! server reports no arguments: vLLM serves `/server_info` only with
//! `VLLM_SERVER_DEV_MODE=1` (vllm-project/vllm
//! `vllm/entrypoints/openai/api_server.py`, the dev-mode router), and
//! llama.cpp's `/props` holds only some settings. `/proc/PID/cmdline` is
//! what the kernel started, read through the same transport as the
//! watchers (local, exec prefix, SSH).

use serde_json::{Map, Value};

use crate::watch::{Place, CMD_TIMEOUT};

/// Read `/proc/PID/cmdline` (NUL-separated words) where the server lives.
pub fn read(pid: u32, place: &Place) -> Result<Vec<String>, String> {
    let path = format!("/proc/{pid}/cmdline");
    let bytes = match place {
        Place::Local => std::fs::read(&path).map_err(|e| format!("{path}: {e}"))?,
        Place::Remote(t) => {
            let argv = ["cat".to_string(), path.clone()];
            let o = t
                .run(&argv, None, CMD_TIMEOUT)
                .map_err(|e| format!("{path} via {}: {e}", t.describe()))?;
            if !o.success() {
                let why = o.stderr_str();
                return Err(format!("{path} via {}: {}", t.describe(), why.trim()));
            }
            o.stdout
        }
    };
    let words = split_cmdline(&bytes);
    if words.is_empty() {
        // A kernel thread or a zombie has an empty cmdline.
        return Err(format!("{path} is empty (process gone or a zombie)"));
    }
    Ok(words)
}

/// Split NUL-separated bytes into words (the last NUL is a terminator).
pub fn split_cmdline(bytes: &[u8]) -> Vec<String> {
    let b = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    if b.is_empty() {
        return Vec::new();
    }
    b.split(|&c| c == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect()
}

/// The flags of an argv as an object, keys normalized to underscores
/// (`--speculative-config X` -> `speculative_config: "X"`, `--flag=X`, a
/// bare switch -> `true`), so `--expect-config` checks it exactly as it
/// checks a server's reported args. The last of a repeated flag wins, as
/// argparse does; positional words are skipped.
pub fn to_args(argv: &[String]) -> Value {
    let mut m = Map::new();
    let mut i = 0;
    while i < argv.len() {
        let w = &argv[i];
        i += 1;
        let Some(flag) = w.strip_prefix("--").filter(|f| !f.is_empty()) else {
            continue;
        };
        let (name, val) = match flag.split_once('=') {
            Some((n, v)) => (n, Value::String(v.to_string())),
            // A negative number is a value, not a flag.
            None => match argv.get(i).filter(|v| !v.starts_with("--")) {
                Some(v) => {
                    i += 1;
                    (flag, Value::String(v.clone()))
                }
                None => (flag, Value::Bool(true)),
            },
        };
        m.insert(name.replace('-', "_").to_ascii_lowercase(), val);
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn cmdline_bytes_split_at_nul() {
        assert_eq!(
            split_cmdline(b"vllm\0serve\0--port\08000\0"),
            ["vllm", "serve", "--port", "8000"]
        );
        assert_eq!(split_cmdline(b"a b\0"), ["a b"]);
        assert!(split_cmdline(b"").is_empty());
    }

    #[test]
    fn flags_become_an_args_object() {
        let a = to_args(&words(&[
            "/usr/bin/python3",
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--speculative-config",
            r#"{"method":"eagle","num_speculative_tokens":3}"#,
            "--port=8000",
            "--enforce-eager",
            "--max-num-seqs",
            "8",
            "--max-num-seqs",
            "16",
            "--temperature-offset",
            "-1",
        ]));
        assert_eq!(
            a,
            json!({
                "speculative_config": r#"{"method":"eagle","num_speculative_tokens":3}"#,
                "port": "8000", "enforce_eager": true, "max_num_seqs": "16",
                "temperature_offset": "-1"
            })
        );
    }
}
