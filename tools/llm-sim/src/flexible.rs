//! vLLM's own flag forms, for the `vllm` personality: the dotted form of a
//! JSON-valued flag (`--speculative-config.num_speculative_tokens 3
//! --speculative-config.method eagle`) merged into one JSON argument, and
//! underscores in flag names read as dashes, as
//! vllm/utils/argparse_utils.py `FlexibleArgumentParser.parse_args` does
//! before argparse sees the words. Other personalities get their words
//! unchanged (SGLang's argparse has no such form).

use serde_json::{Map, Value};
use sweepkit::vllm_dotted;

/// `argv` as vLLM's parser would hand it to argparse, when it asks for the
/// vllm personality; else unchanged.
pub fn vllm_argv(argv: Vec<String>) -> Vec<String> {
    if !is_vllm(&argv) {
        return argv;
    }
    let mut out = Vec::with_capacity(argv.len());
    let mut dicts: Vec<(String, Map<String, Value>)> = Vec::new();
    let mut i = 0;
    while i < argv.len() {
        let w = &argv[i];
        i += 1;
        let Some(flag) = w.strip_prefix("--").filter(|_| i > 1) else {
            out.push(w.clone());
            continue;
        };
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (flag, None),
        };
        // "Everything between the first -- and the first ." loses its
        // underscores; the dotted part keeps its spelling.
        let (head, rest) = match name.split_once('.') {
            Some((h, r)) => (h.replace('_', "-"), Some(r)),
            None => (name.replace('_', "-"), None),
        };
        let Some(path) = rest else {
            out.push(match inline {
                Some(v) => format!("--{head}={v}"),
                None => format!("--{head}"),
            });
            continue;
        };
        let value = match inline {
            Some(v) => v,
            None => {
                let v = argv.get(i).cloned().unwrap_or_default();
                i += 1;
                v
            }
        };
        let (keys, value) = vllm_dotted::field(path, &value);
        let at = match dicts.iter().position(|(k, _)| *k == head) {
            Some(p) => p,
            None => {
                dicts.push((head.clone(), Map::new()));
                dicts.len() - 1
            }
        };
        vllm_dotted::merge(&mut dicts[at].1, &keys, value);
    }
    // "Add the dict args back as if they were originally passed as JSON":
    // after every other word, so they replace a whole JSON given earlier.
    for (k, d) in dicts {
        out.push(format!("--{k}"));
        out.push(Value::Object(d).to_string());
    }
    out
}

fn is_vllm(argv: &[String]) -> bool {
    let mut vllm = false;
    for (i, w) in argv.iter().enumerate() {
        if w == "--personality" {
            vllm = argv.get(i + 1).is_some_and(|v| v == "vllm");
        } else if let Some(v) = w.strip_prefix("--personality=") {
            vllm = v == "vllm";
        }
    }
    vllm
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn dotted_flags_merge_into_one_json_argument_last() {
        let got = vllm_argv(words(
            "llm-sim --personality vllm --speculative-config.method eagle \
             --port 0 --speculative-config.num_speculative_tokens 3",
        ));
        assert_eq!(
            got,
            words(
                r#"llm-sim --personality vllm --port 0 --speculative-config {"method":"eagle","num_speculative_tokens":3}"#
            )
        );
    }

    #[test]
    fn a_dotted_flag_replaces_a_whole_json_given_before() {
        let got = vllm_argv(words(
            r#"llm-sim --personality=vllm --speculative_config {"method":"ngram"} --speculative-config.num_speculative_tokens=2"#,
        ));
        // clap keeps the last occurrence, as argparse does.
        assert_eq!(got[2], "--speculative-config");
        assert_eq!(got.last().unwrap(), r#"{"num_speculative_tokens":2}"#);
    }

    #[test]
    fn values_lists_and_suffixes_as_vllm_reads_them() {
        let got = vllm_argv(words(
            "x --personality vllm --speculative-config.num_speculative_tokens_per_batch_size \
             [[1,1,4],[2,64,1]] --speculative-config.model d --c.n 1k --c.l+ a,b --c.l+ c",
        ));
        let n = got.len();
        assert_eq!(
            got[n - 3],
            r#"{"num_speculative_tokens_per_batch_size":[[1,1,4],[2,64,1]],"model":"d"}"#
        );
        assert_eq!(got[n - 1], r#"{"n":1000,"l":["a","b","c"]}"#);
    }

    #[test]
    fn other_personalities_are_left_alone() {
        let w = words("llm-sim --speculative-config.method eagle");
        assert_eq!(vllm_argv(w.clone()), w);
    }
}
