//! `--apply-from` a `summarize --schedule` record: its `replaces` keys are
//! removed, its `flags` set (a flag in both is set where it stands, so a
//! restore that sets its old value again gives back the very line), a
//! whole JSON object among them (vLLM's `--speculative-config`) takes in
//! the dotted fields of its flag left on the line (fold.rs), and
//! SGLang's adaptive config (carried inline
//! in the record as `adaptive_config`) becomes a file copied to the far side
//! (`far_files.rs`) that `--speculative-adaptive-config` names there; the
//! record's own `adaptive_config_file` is only where summarize suggested
//! writing it here.

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::ScheduleRecord;

use crate::far_files::FileFlag;
use crate::flags::{FlagName, Op};

/// SGLang's flag whose value is the adaptive config file
/// (python/sglang/srt/arg_groups/speculative_hook.py
/// `_init_adaptive_speculative_params` reads `speculative_adaptive_config`).
pub const ADAPTIVE_CONFIG_FLAG: &str = "speculative-adaptive-config";

/// A value word follows a flag (a negative number is a value, as in
/// flags.rs).
fn is_value(w: &str) -> bool {
    !w.starts_with('-') || w.parse::<f64>().is_ok()
}

/// The schedule's edits, and the adaptive config to copy (SGLang).
pub fn ops(name: &str, s: &ScheduleRecord, dir: &str) -> Result<(Vec<Op>, Vec<FileFlag>), Exit> {
    let bad = |m: String| {
        Exit::new(
            exit::BAD_INPUT,
            anyhow::anyhow!("{name}: schedule record: {m}"),
        )
    };
    let mut ops = Vec::new();
    let mut files = Vec::new();
    let mut i = 0;
    while i < s.flags.len() {
        let word = &s.flags[i];
        if !word.starts_with("--") {
            return Err(bad(format!("flags: {word:?} is not a flag")));
        }
        let flag = FlagName::parse(word).map_err(|e| bad(format!("flags: {e}")))?;
        let value = s.flags.get(i + 1).filter(|w| is_value(w)).cloned();
        i += if value.is_some() { 2 } else { 1 };
        if flag.name == ADAPTIVE_CONFIG_FLAG {
            let Some(cfg) = &s.adaptive_config else {
                return Err(bad(format!(
                    "--{ADAPTIVE_CONFIG_FLAG} without adaptive_config"
                )));
            };
            let mut bytes = serde_json::to_vec_pretty(cfg).map_err(|e| bad(e.to_string()))?;
            bytes.push(b'\n');
            let f = FileFlag {
                flag,
                source: format!("{name}#adaptive_config"),
                bytes,
            };
            ops.push(f.op(dir));
            files.push(f);
            continue;
        }
        // vLLM drops a whole JSON beside dotted fields of its flag: fold
        // them in (fold.rs).
        let json = value.as_deref().and_then(|v| serde_json::from_str(v).ok());
        let fold = matches!(json, Some(serde_json::Value::Object(_)));
        ops.push(Op::Set {
            flag: flag.clone(),
            value,
        });
        if fold {
            ops.push(Op::Fold { flag });
        }
    }
    if s.flags.is_empty() {
        return Err(bad("no flags".into()));
    }
    // A replaced key the schedule sets again keeps its place: removed
    // first, --set would add it back at the end of the line (and a restore
    // of its old value would leave it there).
    let mut unsets = Vec::new();
    for k in &s.replaces {
        let flag = FlagName::parse(k).map_err(|e| bad(format!("replaces: {e}")))?;
        let set_again = ops
            .iter()
            .any(|o| matches!(o, Op::Set { flag: f, .. } if f.name == flag.name));
        if !set_again {
            unsets.push(Op::Unset { flag });
        }
    }
    unsets.extend(ops);
    Ok((unsets, files))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(json: &str) -> ScheduleRecord {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn sglang_schedule_sets_flags_and_copies_its_adaptive_config() {
        let s = rec(r#"{"schema":1,"metric":"m","per_level":[],"max_batch":48,
            "max_batch_source":"d","replaces":["speculative-num-steps"],"warnings":[],
            "simulated":true,"server":"sglang",
            "flags":["--speculative-algorithm","EAGLE","--speculative-eagle-topk","1",
              "--speculative-num-steps","3","--speculative-adaptive",
              "--speculative-adaptive-config","speculative-adaptive.json"],
            "adaptive_config":{"16":{"candidate_steps":[1]},"1":{"candidate_steps":[3,5]}},
            "adaptive_config_file":"speculative-adaptive.json",
            "provenance":{"tool":"summarize","version":"0","started_at":"","finished_at":""}}"#);
        let (ops, files) = ops("s.json", &s, "/far").unwrap();
        // The replaced depth is set again, in its place: no unset first.
        assert_eq!(ops.len(), 5, "{ops:?}");
        assert_eq!(ops[2], Op::parse_set("--speculative-num-steps=3").unwrap());
        assert_eq!(ops[3], Op::parse_set("--speculative-adaptive").unwrap());
        assert_eq!(files.len(), 1);
        let text = String::from_utf8(files[0].bytes.clone()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["1"]["candidate_steps"], serde_json::json!([3, 5]));
        assert!(
            text.find("\"1\"").unwrap() < text.find("\"16\"").unwrap(),
            "{text}"
        );
        assert_eq!(ops[4], files[0].op("/far"));
        assert!(files[0].far_path("/far").ends_with("-s.json"));
    }

    #[test]
    fn vllm_schedule_is_one_json_flag() {
        let s = rec(r#"{"schema":1,"metric":"m","per_level":[],"max_batch":8,
            "max_batch_source":"d","replaces":["speculative-config"],"warnings":[],
            "simulated":false,"server":"vllm",
            "flags":["--speculative-config","{\"method\":\"ngram\",\"num_speculative_tokens\":4}"],
            "provenance":{"tool":"summarize","version":"0","started_at":"","finished_at":""}}"#);
        let (ops, files) = ops("s.json", &s, "/far").unwrap();
        assert!(files.is_empty());
        assert_eq!(ops.len(), 2);
        assert!(matches!(&ops[0], Op::Set { value: Some(v), .. } if v.starts_with('{')));
        // Then its dotted fields left on the line fold into it.
        assert!(matches!(&ops[1], Op::Fold { flag } if flag.name == "speculative-config"));
    }

    /// A replaced key the schedule does not set again is removed, first.
    #[test]
    fn replaced_keys_not_set_again_are_removed() {
        let s = rec(r#"{"schema":1,"metric":"m","per_level":[],"max_batch":8,
            "max_batch_source":"d","warnings":[],"simulated":false,"server":"vllm",
            "replaces":["speculative-config.num_speculative_tokens","--speculative-config"],
            "flags":["--speculative-config","{\"method\":\"ngram\"}"],
            "provenance":{"tool":"summarize","version":"0","started_at":"","finished_at":""}}"#);
        let (ops, _) = ops("s.json", &s, "/far").unwrap();
        assert_eq!(
            ops[0],
            Op::parse_unset("speculative-config.num_speculative_tokens").unwrap()
        );
        assert_eq!(ops.len(), 3, "{ops:?}");
        assert!(matches!(&ops[1], Op::Set { .. }));
        assert!(matches!(&ops[2], Op::Fold { .. }));
    }
}
