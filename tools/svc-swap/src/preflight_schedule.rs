//! Pre-flight of the two servers' per-load speculation schedules: refuse,
//! with the server's own message, a schedule the server would reject at
//! start-up, and warn about the cases where it silently runs static
//! instead. Pure: the adaptive config's text comes from the caller.
//!
//! vLLM 0.32 (read from the installed vllm 0.32.0+cpu wheel):
//! - vllm/config/speculative.py:491 `num_speculative_tokens_per_batch_size:
//!   list[tuple[int, int, int]] | None` (pydantic refuses other shapes);
//! - vllm/v1/spec_decode/dynamic/utils.py:7-74
//!   `validate_and_normalize_dynamic_sd_schedule`, called from
//!   `build_dynamic_sd_schedule_lookup` (utils.py:94) when the scheduler
//!   starts: positive ranges (:43), start <= end (:47), k >= 0 (:52), sorted
//!   by start then non-overlapping (:59-64), the first starting at 1 (:66-72);
//! - vllm/config/vllm.py:1058-1075 `_maybe_disable_dynamic_sd_for_data_parallel`:
//!   with `data_parallel_size > 1` a warning, then static k;
//! - vllm/engine/arg_utils.py:1209 `--data-parallel-size`/`-dp`.
//!
//! SGLang 0.5.23 (read from the installed sglang 0.5.23 wheel):
//! - python/sglang/srt/arg_groups/speculative_hook.py:261-264: with
//!   `--speculative-adaptive`, `_maybe_disable_adaptive` (:1374-1389: a
//!   warning "speculative_adaptive disabled: REASON. Falling back to static
//!   speculative params.") then `_init_adaptive_speculative_params`
//!   (:1392-1428: topk 1 when unset, steps = the middle candidate when
//!   unset, else steps must be a candidate, the ValueError at :1417; draft
//!   tokens = steps + 1), before the algorithm's own checks;
//! - python/sglang/srt/speculative/adaptive_spec_params.py:56-98
//!   `adaptive_unsupported_reason` (EAGLE/EAGLE3 only, topk 1 only, ...),
//!   :103-139 `_load_adaptive_config` (its ValueErrors, keys that are not
//!   digits skipped), :142-150 `resolve_candidate_steps_from_config` (the
//!   sorted union), `DEFAULT_ADAPTIVE_CONFIG` without a file.

use serde_json::Value;
use sweepkit::vllm_dotted;

/// SGLang's `DEFAULT_ADAPTIVE_CONFIG` candidates, as their sorted union.
const SGLANG_DEFAULT_CANDIDATES: [i64; 5] = [0, 1, 3, 5, 7];

/// The last value of `--NAME V` / `--NAME=V` (argparse keeps the last).
pub fn value(argv: &[String], names: &[&str]) -> Option<String> {
    let mut out = None;
    for (i, w) in argv.iter().enumerate().skip(1) {
        let (k, v) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (w.as_str(), argv.get(i + 1).cloned()),
        };
        if names.contains(&k) {
            out = v;
        }
    }
    out
}

fn has(argv: &[String], name: &str) -> bool {
    argv.iter().skip(1).any(|w| w == name)
}

/// Does `argv` start vLLM (or llm-sim as vLLM)?
pub fn is_vllm(argv: &[String]) -> bool {
    let prog = argv
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or("");
    if prog == "llm-sim" {
        return value(argv, &["--personality"]).as_deref() == Some("vllm");
    }
    argv.iter()
        .any(|w| w == "vllm.entrypoints.openai.api_server")
        || argv
            .windows(2)
            .any(|w| w[0].rsplit('/').next() == Some("vllm") && w[1] == "serve")
}

/// Why the server would refuse its per-load schedule at start-up; each
/// message is the server's own error, as svc-swap prints and records it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleRefusal {
    /// vLLM's ValueError from `validate_and_normalize_dynamic_sd_schedule`
    /// or pydantic's shape check.
    #[error(
        "vLLM refuses --speculative-config num_speculative_tokens_per_batch_size at \
         start-up: ValueError: {0}"
    )]
    Vllm(String),
    #[error("--speculative-num-steps {0}: not an integer")]
    StepsNotAnInteger(String),
    #[error(
        "SGLang refuses at start-up: ValueError: --speculative-num-steps={steps} is not \
         in the adaptive config candidate_steps [{candidates}]. Pass one of those values."
    )]
    StepsNotACandidate { steps: i64, candidates: String },
    #[error("SGLang refuses the adaptive config: json.decoder.JSONDecodeError: {0}")]
    ConfigNotJson(String),
    #[error("SGLang refuses the adaptive config: it is not a JSON object")]
    ConfigNotAnObject,
    #[error(
        "SGLang refuses at start-up: ValueError: BS {key}: candidate_steps must be a \
         list of non-negative ints, got {got}"
    )]
    BadCandidates { key: String, got: String },
    #[error(
        "SGLang refuses at start-up: ValueError: speculative_adaptive_config must contain \
         at least one integer-string BS key, e.g. {{\"1\": {{\"candidate_steps\": [1,3,7]}}}}. \
         Got keys: [{keys}]"
    )]
    NoBatchSizeKey { keys: String },
}

/// vLLM: the schedule inside `--speculative-config` (whole JSON, or the
/// dotted `--speculative-config.num_speculative_tokens_per_batch_size`
/// that `FlexibleArgumentParser` merges).
pub fn check_vllm(argv: &[String]) -> Result<Vec<String>, ScheduleRefusal> {
    let key = "num_speculative_tokens_per_batch_size";
    let whole = value(argv, &["--speculative-config", "-sc"])
        .and_then(|j| serde_json::from_str::<Value>(&j).ok())
        .and_then(|v| v.get(key).cloned());
    let dotted = value(argv, &[&format!("--speculative-config.{key}")])
        .and_then(|j| serde_json::from_str::<Value>(&j).ok());
    let mut notes = dropped_json(argv);
    // Any dotted field replaces the whole JSON (see `dropped_json`).
    let schedule = if dotted_fields(argv, "speculative-config").is_empty() {
        whole
    } else {
        dotted
    };
    let Some(schedule) = schedule.filter(|v| !v.is_null()) else {
        return Ok(notes);
    };
    validate_vllm(&schedule)?;
    let dp = value(argv, &["--data-parallel-size", "-dp"])
        .and_then(|v| v.trim().parse::<i64>().ok())
        .unwrap_or(1);
    if dp > 1 {
        notes.push(format!(
            "--data-parallel-size {dp}: vLLM runs static: \"Dynamic speculative decoding is \
             not supported with data parallelism ... Disabling \
             num_speculative_tokens_per_batch_size and falling back to static \
             num_speculative_tokens\" (drop the schedule or run DP 1)"
        ));
    }
    Ok(notes)
}

/// The dotted `--FLAG.FIELD` words of `flag` (given without dashes).
fn dotted_fields<'a>(argv: &'a [String], flag: &str) -> Vec<&'a str> {
    argv.iter()
        .skip(1)
        .map(|w| w.split_once('=').map_or(w.as_str(), |(n, _)| n))
        .filter(|name| vllm_dotted::field_path(name, flag).is_some())
        .collect()
}

/// A whole `--FLAG JSON` beside dotted `--FLAG.FIELD` words: vLLM 0.32's
/// vllm/utils/argparse_utils.py `FlexibleArgumentParser.parse_args`
/// appends the merged dotted fields as `--FLAG JSON` after every other
/// word, so argparse drops the whole JSON, whichever came first. svc-swap
/// folds them when it applies a schedule (fold.rs); a `--set` of a whole
/// JSON is left as given, with this note.
fn dropped_json(argv: &[String]) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, w) in argv.iter().enumerate().skip(1) {
        let (name, v) = match w.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (w.as_str(), argv.get(i + 1).cloned()),
        };
        let json = v.and_then(|v| serde_json::from_str::<Value>(&v).ok());
        if !name.starts_with("--") || name.contains('.') || !json.is_some_and(|j| j.is_object()) {
            continue;
        }
        let dotted = dotted_fields(argv, &name[2..].replace('_', "-"));
        if !dotted.is_empty() {
            notes.push(format!(
                "{name}: vLLM ignores this whole JSON and runs only the dotted fields {} \
                 (FlexibleArgumentParser merges them into a {name} given last); fold them \
                 into the JSON or --unset them",
                dotted.join(" ")
            ));
        }
    }
    notes
}

/// The entries' shape, then `validate_and_normalize_dynamic_sd_schedule`,
/// with their messages.
fn validate_vllm(v: &Value) -> Result<(), ScheduleRefusal> {
    let Some(list) = v.as_array() else {
        return Err(ScheduleRefusal::Vllm(
            "num_speculative_tokens_per_batch_size must be a non-empty list of \
                    (range_start, range_end, num_speculative_tokens) entries."
                .into(),
        ));
    };
    // Every entry's shape first (pydantic types the list before vLLM's
    // checks run), then vLLM's checks, shared with llm-sim.
    let mut parsed = Vec::new();
    for e in list {
        let n: Option<Vec<i64>> = e
            .as_array()
            .filter(|a| a.len() == 3)
            .map(|a| a.iter().filter_map(Value::as_i64).collect());
        let Some(n) = n.filter(|n| n.len() == 3) else {
            return Err(ScheduleRefusal::Vllm(
                "Each num_speculative_tokens_per_batch_size entry must be a \
                        3-item sequence: (range_start, range_end, num_speculative_tokens)."
                    .into(),
            ));
        };
        parsed.push([n[0], n[1], n[2]]);
    }
    sweepkit::vllm_schedule::validate(&parsed)
        .map(|_| ())
        .map_err(|e| ScheduleRefusal::Vllm(e.to_string()))
}

/// What SGLang's adaptive mode resolves, for the static rules to check.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Adaptive {
    /// Flags SGLang sets itself (`--speculative-eagle-topk 1`, the steps),
    /// appended to the argv the static rules read.
    pub implied: Vec<String>,
    pub notes: Vec<String>,
}

/// SGLang with `--speculative-adaptive`. `config` is the adaptive config
/// file's text (`None`: no `--speculative-adaptive-config`, SGLang's
/// default).
pub fn check_sglang(argv: &[String], config: Option<&str>) -> Result<Adaptive, ScheduleRefusal> {
    let mut out = Adaptive::default();
    if !has(argv, "--speculative-adaptive") {
        return Ok(out);
    }
    let algo = value(argv, &["--speculative-algorithm", "--speculative-algo"])
        .map(|a| a.to_ascii_uppercase());
    // NEXTN resolves to EAGLE before this check (speculative_hook.py
    // `_resolve_speculative_algorithm_alias`).
    let resolved = algo
        .as_deref()
        .map(|a| if a == "NEXTN" { "EAGLE" } else { a });
    let topk =
        value(argv, &["--speculative-eagle-topk"]).and_then(|v| v.trim().parse::<i64>().ok());
    let reason = match (resolved, topk) {
        (a, _) if !matches!(a, Some("EAGLE" | "EAGLE3")) => Some(format!(
            "speculative_algorithm={} (only EAGLE/EAGLE3 are supported)",
            a.unwrap_or("None")
        )),
        (_, Some(k)) if k != 1 => Some(format!(
            "speculative_eagle_topk={k} (only topk=1 is supported)"
        )),
        _ => None,
    };
    if let Some(r) = reason {
        out.notes.push(format!(
            "SGLang runs static: \"speculative_adaptive disabled: {r}. Falling back to \
             static speculative params.\" (--speculative-adaptive-config is not read)"
        ));
        return Ok(out);
    }
    let candidates = match config {
        None => SGLANG_DEFAULT_CANDIDATES.to_vec(),
        Some(text) => candidates(text)?,
    };
    if topk.is_none() {
        out.implied
            .extend(["--speculative-eagle-topk".into(), "1".into()]);
    }
    let steps = match value(argv, &["--speculative-num-steps"]) {
        Some(s) => s
            .trim()
            .parse::<i64>()
            .map_err(|_| ScheduleRefusal::StepsNotAnInteger(s.clone()))?,
        None => {
            let m = candidates[candidates.len() / 2];
            out.implied
                .extend(["--speculative-num-steps".into(), m.to_string()]);
            out.notes.push(format!(
                "--speculative-num-steps unset: SGLang starts adaptive at {m} (the middle candidate)"
            ));
            m
        }
    };
    if !candidates.contains(&steps) {
        let list: Vec<String> = candidates.iter().map(i64::to_string).collect();
        return Err(ScheduleRefusal::StepsNotACandidate {
            steps,
            candidates: list.join(", "),
        });
    }
    Ok(out)
}

/// `_load_adaptive_config` and `resolve_candidate_steps_from_config`.
fn candidates(text: &str) -> Result<Vec<i64>, ScheduleRefusal> {
    let cfg: Value =
        serde_json::from_str(text).map_err(|e| ScheduleRefusal::ConfigNotJson(e.to_string()))?;
    let Some(obj) = cfg.as_object() else {
        return Err(ScheduleRefusal::ConfigNotAnObject);
    };
    let mut all = Vec::new();
    for (key, entry) in obj {
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let steps = entry.get("candidate_steps");
        let ok: Option<Vec<i64>> = steps
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty())
            .and_then(|a| a.iter().map(|s| s.as_i64().filter(|n| *n >= 0)).collect());
        let Some(ok) = ok else {
            return Err(ScheduleRefusal::BadCandidates {
                key: key.clone(),
                got: steps.map_or("None".into(), Value::to_string),
            });
        };
        all.extend(ok);
    }
    if all.is_empty() {
        let keys: Vec<String> = obj.keys().map(|k| format!("'{k}'")).collect();
        return Err(ScheduleRefusal::NoBatchSizeKey {
            keys: keys.join(", "),
        });
    }
    all.sort_unstable();
    all.dedup();
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }
    fn vllm(sc: &str, rest: &str) -> Result<Vec<String>, String> {
        let mut a = argv(&format!("/opt/v/bin/vllm serve m {rest}"));
        a.extend(["--speculative-config".into(), sc.into()]);
        check_vllm(&a).map_err(|e| e.to_string())
    }
    fn sched(s: &str) -> String {
        format!(
            r#"{{"method":"ngram","num_speculative_tokens":4,"num_speculative_tokens_per_batch_size":{s}}}"#
        )
    }

    #[test]
    fn vllm_schedules_vllm_refuses_are_refused_with_its_message() {
        assert!(vllm(&sched("[[1,1,4],[2,64,1]]"), "").unwrap().is_empty());
        let e = vllm(&sched("[[2,8,3]]"), "").unwrap_err();
        assert!(e.ends_with("ValueError: The first batch-size range must start at 1 so every runtime batch size has a defined schedule."), "{e}");
        let e = vllm(&sched("[[1,8,3],[8,16,1]]"), "").unwrap_err();
        assert!(
            e.ends_with("Batch-size ranges must be non-overlapping and sorted."),
            "{e}"
        );
        let e = vllm(&sched("[[1,8,-1]]"), "").unwrap_err();
        assert!(
            e.ends_with("num_speculative_tokens_per_batch_size values must be >= 0."),
            "{e}"
        );
        let e = vllm(&sched("[[1,8]]"), "").unwrap_err();
        assert!(e.contains("3-item sequence"), "{e}");
        let e = vllm(&sched("[[0,8,1]]"), "").unwrap_err();
        assert!(
            e.ends_with("Batch-size range (0, 8) must be positive."),
            "{e}"
        );
        // Unsorted but disjoint is sorted by vLLM first: accepted.
        assert!(vllm(&sched("[[9,16,1],[1,8,3]]"), "").is_ok());
        assert!(!e.contains('\n'));
    }

    #[test]
    fn vllm_dotted_form_and_the_dp_fall_back() {
        let a = argv(
            "vllm serve m --speculative-config.num_speculative_tokens_per_batch_size [[3,4,1]]",
        );
        let e = check_vllm(&a).unwrap_err();
        assert!(
            matches!(&e, ScheduleRefusal::Vllm(m) if m.contains("must start at 1")),
            "{e}"
        );
        let n = vllm(&sched("[[1,4,2]]"), "--data-parallel-size 2").unwrap();
        assert!(n[0].contains("falling back to static"), "{n:?}");
        assert!(vllm(&sched("[[1,4,2]]"), "-dp 1").unwrap().is_empty());
        assert!(
            vllm(r#"{"method":"ngram","num_speculative_tokens":4}"#, "-dp 2")
                .unwrap()
                .is_empty()
        );
        assert!(is_vllm(&argv("llm-sim --personality vllm")));
        assert!(is_vllm(&argv(
            "python3 -m vllm.entrypoints.openai.api_server"
        )));
        assert!(!is_vllm(&argv("llm-sim")));
    }

    /// A whole JSON beside dotted fields of its flag is dropped by vLLM:
    /// its schedule is not what runs (so not refused), and a note says so.
    #[test]
    fn a_whole_json_beside_dotted_fields_is_noted_not_checked() {
        let n = vllm(&sched("[[2,8,3]]"), "--speculative_config.method eagle").unwrap();
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(
            n[0].contains("vLLM ignores this whole JSON")
                && n[0].contains("--speculative_config.method"),
            "{n:?}"
        );
        // One line of words, as every pre-flight note.
        assert!(!n[0].contains("  "), "{n:?}");
        // Folded (as svc-swap applies a schedule): nothing to say.
        assert!(vllm(&sched("[[1,8,3]]"), "--max-num-seqs 8")
            .unwrap()
            .is_empty());
    }

    fn sg(rest: &str, cfg: Option<&str>) -> Result<Adaptive, String> {
        check_sglang(
            &argv(&format!("python -m sglang.launch_server {rest}")),
            cfg,
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn sglang_steps_outside_the_candidates_is_sglangs_value_error() {
        let cfg = r#"{"1": {"candidate_steps": [3, 5]}, "16": {"candidate_steps": [1]}, "strategy": "ema"}"#;
        let base =
            "--speculative-algorithm EAGLE --speculative-adaptive --speculative-eagle-topk 1";
        let e = sg(&format!("{base} --speculative-num-steps 2"), Some(cfg)).unwrap_err();
        assert!(e.ends_with("ValueError: --speculative-num-steps=2 is not in the adaptive config candidate_steps [1, 3, 5]. Pass one of those values."), "{e}");
        assert!(sg(&format!("{base} --speculative-num-steps 5"), Some(cfg)).is_ok());
        // Unset steps: the middle candidate; unset topk: 1.
        let a = sg(
            "--speculative-algorithm EAGLE3 --speculative-adaptive",
            Some(cfg),
        )
        .unwrap();
        assert_eq!(
            a.implied,
            argv("--speculative-eagle-topk 1 --speculative-num-steps 3")
        );
        // SGLang's default config without a file.
        let e = sg(&format!("{base} --speculative-num-steps 2"), None).unwrap_err();
        assert!(e.contains("[0, 1, 3, 5, 7]"), "{e}");
        let e = sg(base, Some(r#"{"1": {"candidate_steps": [-1]}}"#)).unwrap_err();
        assert!(
            e.contains("ValueError: BS 1: candidate_steps must be a list"),
            "{e}"
        );
        let e = sg(base, Some(r#"{"strategy": "ema"}"#)).unwrap_err();
        assert!(e.contains("Got keys: ['strategy']"), "{e}");
    }

    #[test]
    fn sglang_fall_backs_warn_and_pass() {
        let cfg = Some(r#"{"1": {"candidate_steps": [3]}}"#);
        let a = sg(
            "--speculative-algorithm NGRAM --speculative-adaptive --speculative-num-steps 2",
            cfg,
        )
        .unwrap();
        assert!(
            a.notes[0].contains("speculative_algorithm=NGRAM (only EAGLE/EAGLE3"),
            "{a:?}"
        );
        assert!(a.implied.is_empty());
        let a = sg("--speculative-algorithm EAGLE --speculative-adaptive --speculative-eagle-topk 2 --speculative-num-steps 2", cfg).unwrap();
        assert!(
            a.notes[0].contains("speculative_eagle_topk=2 (only topk=1"),
            "{a:?}"
        );
        assert!(a.notes[0].contains("Falling back to static"));
        let a = sg("--speculative-adaptive", cfg).unwrap();
        assert!(a.notes[0].contains("speculative_algorithm=None"), "{a:?}");
        assert_eq!(
            sg("--speculative-algorithm EAGLE", cfg).unwrap(),
            Adaptive::default()
        );
    }
}
