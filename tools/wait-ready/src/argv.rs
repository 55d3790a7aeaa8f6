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
    let (mut m, mut dotted) = (Map::new(), Map::new());
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
        let name = name.replace('-', "_").to_ascii_lowercase();
        match name.split_once('.') {
            Some((key, path)) => merge_dotted(&mut dotted, key, path, val),
            None => {
                m.insert(name, val);
            }
        }
    }
    // vLLM appends the merged dotted flags after every other word, so they
    // replace a whole `--speculative-config JSON` given before them.
    for (k, v) in dotted {
        m.insert(k, v);
    }
    Value::Object(m)
}

/// vLLM's dotted form of a JSON-valued flag (`--speculative-config.model
/// D --speculative-config.num_speculative_tokens 2`): each value parsed as
/// JSON (falling back to the string) and merged into one object per flag,
/// as vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args does.
fn merge_dotted(dotted: &mut Map<String, Value>, key: &str, path: &str, val: Value) {
    let val = match val {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        v => v,
    };
    let mut at = dotted
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    let mut steps = path.split('.').peekable();
    while let Some(step) = steps.next() {
        if !at.is_object() {
            *at = Value::Object(Map::new());
        }
        let obj = at.as_object_mut().expect("made an object above");
        if steps.peek().is_none() {
            obj.insert(step.to_string(), val);
            return;
        }
        at = obj
            .entry(step.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
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

    #[test]
    fn vllm_dotted_flags_merge_into_one_json_value() {
        let a = to_args(&words(&[
            "--speculative-config",
            r#"{"method":"eagle"}"#,
            "--speculative-config.model",
            "/m/draft",
            "--speculative-config.num_speculative_tokens",
            "4",
            "--speculative-config.x.y=true",
            "--port",
            "8000",
        ]));
        assert_eq!(
            a,
            json!({
                "speculative_config": {"model": "/m/draft", "num_speculative_tokens": 4,
                                       "x": {"y": true}},
                "port": "8000"
            })
        );
    }
}
