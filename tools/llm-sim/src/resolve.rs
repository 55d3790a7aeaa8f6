//! Start-up flag resolution per personality: SGLang's speculative argument
//! handling (aliases, forced draft tokens, the 48-request cap, the start-up
//! crashes) and vLLM's `--speculative-config` JSON, with their failures.
//!
//! SGLang sources: `python/sglang/srt/arg_groups/speculative_hook.py`
//! `handle_speculative_decoding` / `_handle_eagle_family` (older releases:
//! `python/sglang/srt/server_args.py` `ServerArgs._handle_speculative_decoding`),
//! `--speculative-algorithm` argparse choices in `ServerArgs.add_cli_args`,
//! and `python/sglang/srt/speculative/eagle_utils.py`
//! `organize_draft_results` (the draft-token bound). vLLM sources:
//! `vllm/engine/arg_utils.py` `parse_type` (a bad JSON flag) and
//! `vllm/config/speculative.py` `SpeculativeConfig`.

use serde_json::Value;

use crate::cli::{Args, Personality};

/// Requests decoded at once when no flag and no server rule says otherwise.
pub const DEFAULT_MAX_RUNNING: usize = 128;
/// SGLang's `max_running_requests` under speculation when it is not given
/// (`_handle_eagle_family`: "Max running requests is reset to 48").
pub const SGLANG_SPEC_MAX_RUNNING: usize = 48;
/// SGLang's argparse choices for `--speculative-algorithm`.
const SGLANG_ALGORITHMS: [&str; 5] = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"];
/// `auto_choose_speculative_params` for a Llama-like model: (steps, topk,
/// draft tokens) when EAGLE is asked for with no steps.
const SGLANG_AUTO_PARAMS: (u32, u32, u32) = (5, 4, 8);

/// The server's resolved speculative settings, as it reports them.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// Draft steps the performance model uses (0 = speculation off).
    pub steps: u32,
    /// `speculative_num_steps` as the server reports it. SGLang without an
    /// algorithm keeps the flag's value in its `ServerArgs` (and so in
    /// `/server_info`) while speculation is off: `steps` is 0 then.
    pub num_steps: Option<u32>,
    /// SGLang's algorithm after aliases (NEXTN is EAGLE).
    pub algorithm: Option<String>,
    pub topk: Option<u32>,
    pub draft_tokens: Option<u32>,
    pub max_running: usize,
    /// vLLM's parsed `--speculative-config`.
    pub spec_config: Option<Value>,
    /// Python exception lines the first (warm-up) decode dies with: SGLang
    /// accepts these flags and fails only once it drafts.
    pub warmup_failure: Option<Vec<String>>,
    /// Warnings the real server logs while resolving.
    pub warnings: Vec<String>,
    /// llm-sim's own remarks on the flags, which the real server does not
    /// make (it logs nothing when it ignores speculative flags).
    pub notes: Vec<String>,
    /// SGLang's `--speculative-adaptive`: the config and the launch steps.
    pub adaptive: Option<(crate::adaptive::Config, u32)>,
}

/// A start-up the real server would not survive.
#[derive(Debug, PartialEq)]
pub enum Failure {
    /// argparse rejects the flags at once: these lines, exit 2.
    Usage(Vec<String>),
    /// The argument check raises after start-up: these lines, exit 1.
    Start(Vec<String>),
}

/// Resolve the flags the way the chosen server does.
pub fn resolve(a: &Args) -> Result<Resolved, Failure> {
    match a.personality {
        Personality::Sglang => sglang(a),
        Personality::Vllm => vllm(a),
        Personality::LlamaCpp => Ok(Resolved {
            steps: a.speculative_num_steps.unwrap_or(0),
            num_steps: a.speculative_num_steps,
            max_running: a.max_running_requests.unwrap_or(DEFAULT_MAX_RUNNING),
            ..Resolved::default()
        }),
    }
}

/// A Python traceback ending in `last`, the shape SGLang dies with.
fn traceback(func: &str, last: &str) -> Vec<String> {
    vec![
        "Traceback (most recent call last):".into(),
        "  File \"<frozen runpy>\", line 198, in _run_module_as_main".into(),
        "  File \"sglang/launch_server.py\", line 11, in <module>".into(),
        "    server_args = prepare_server_args(sys.argv[1:])".into(),
        format!("  File \"sglang/srt/arg_groups/speculative_hook.py\", in {func}"),
        last.into(),
    ]
}

fn argparse(prog: &str, msg: &str) -> Failure {
    Failure::Usage(vec![
        format!("usage: {prog} [-h] [options]"),
        format!("{prog}: error: {msg}"),
    ])
}

fn sglang(a: &Args) -> Result<Resolved, Failure> {
    let prog = "launch_server.py";
    if a.speculative_config.is_some() {
        return Err(argparse(
            prog,
            "unrecognized arguments: --speculative-config",
        ));
    }
    let algorithm = match &a.speculative_algorithm {
        None => None,
        Some(s) if SGLANG_ALGORITHMS.contains(&s.as_str()) => Some(s.clone()),
        Some(s) => {
            let choices: Vec<String> = SGLANG_ALGORITHMS.iter().map(|c| format!("'{c}'")).collect();
            return Err(argparse(
                prog,
                &format!(
                    "argument --speculative-algorithm: invalid choice: '{s}' (choose from {})",
                    choices.join(", ")
                ),
            ));
        }
    };
    let Some(algorithm) = algorithm else {
        return Ok(no_algorithm(a));
    };
    if a.speculative_adaptive {
        return adaptive_eagle(a, algorithm);
    }
    static_eagle(a, algorithm)
}

/// `--speculative-adaptive`: `_maybe_disable_adaptive` (a warning, then
/// the static path) or `_init_adaptive_speculative_params` (topk 1, steps
/// a candidate or the middle one, draft tokens steps + 1), which runs
/// before the topk comparison that fails without it.
fn adaptive_eagle(a: &Args, algorithm: String) -> Result<Resolved, Failure> {
    let alg = if algorithm == "NEXTN" {
        "EAGLE"
    } else {
        algorithm.as_str()
    };
    if let Some(reason) = crate::adaptive::unsupported_reason(alg, a.speculative_eagle_topk) {
        let mut r = static_eagle(a, algorithm)?;
        r.warnings.insert(
            0,
            format!(
                "speculative_adaptive disabled: {reason}. Falling back to static \
                 speculative params."
            ),
        );
        return Ok(r);
    }
    let path = a.speculative_adaptive_config.as_deref();
    let raised =
        |func: &str, e: crate::adaptive::Raised| Failure::Start(traceback(func, &e.to_string()));
    let cfg = crate::adaptive::load(path).map_err(|e| raised("_maybe_disable_adaptive", e))?;
    let steps = crate::adaptive::initial_steps(&cfg, a.speculative_num_steps)
        .map_err(|e| raised("_init_adaptive_speculative_params", e))?;
    let mut fixed = a.clone();
    fixed.speculative_eagle_topk = Some(1);
    fixed.speculative_num_steps = Some(steps);
    fixed.speculative_num_draft_tokens = Some(steps + 1);
    let mut r = eagle_family(&fixed, algorithm)?;
    if cfg.strategy != "ema" {
        r.warnings.push(format!(
            "strategy '{}' is not simulated; llm-sim moves steps by the EMA",
            cfg.strategy
        ));
    }
    r.adaptive = Some((cfg, steps));
    Ok(r)
}

/// Fixed steps: the topk comparison, then `_handle_eagle_family`.
fn static_eagle(a: &Args, algorithm: String) -> Result<Resolved, Failure> {
    let (steps, topk) = (a.speculative_num_steps, a.speculative_eagle_topk);
    // Only with an EAGLE-family algorithm: `speculative_eagle_topk > 1` is
    // then evaluated with topk None and Python 3 raises before anything
    // else is checked (seen on SGLang 0.5.23 with EAGLE; without an
    // algorithm the real server ignored the flags and served: issue 13,
    // tests/tests/real_sglang.rs).
    if algorithm != "NGRAM" && steps.is_some() && topk.is_none() {
        return Err(Failure::Start(traceback(
            "_handle_eagle_family",
            "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
        )));
    }
    eagle_family(a, algorithm)
}

/// SGLang without `--speculative-algorithm`: `handle_speculative_decoding`
/// resolves nothing (no algorithm, so no `handle_server_args`), speculation
/// is off and says nothing, and the speculative flags stay in `ServerArgs`
/// as parsed: `/server_info` reports `speculative_num_steps: 3` beside
/// `speculative_algorithm: null` (seen on SGLang 0.5.23,
/// tests/fixtures/real/sglang/serve-steps-no-algorithm.json).
fn no_algorithm(a: &Args) -> Resolved {
    let mut r = plain(a);
    r.num_steps = a.speculative_num_steps;
    r.topk = a.speculative_eagle_topk;
    r.draft_tokens = a.speculative_num_draft_tokens;
    let given = [
        ("--speculative-num-steps", a.speculative_num_steps),
        ("--speculative-eagle-topk", a.speculative_eagle_topk),
        (
            "--speculative-num-draft-tokens",
            a.speculative_num_draft_tokens,
        ),
    ];
    for (flag, v) in given {
        if let Some(v) = v {
            r.notes.push(format!(
                "{flag} {v} is inert: without --speculative-algorithm SGLang ignores it \
                 (speculation is off) but still reports it in /server_info"
            ));
        }
    }
    r
}

fn plain(a: &Args) -> Resolved {
    Resolved {
        max_running: a.max_running_requests.unwrap_or(DEFAULT_MAX_RUNNING),
        ..Resolved::default()
    }
}

/// `_handle_eagle_family`: alias, cap, auto parameters, forced draft tokens.
fn eagle_family(a: &Args, algorithm: String) -> Result<Resolved, Failure> {
    let algorithm = if algorithm == "NEXTN" {
        "EAGLE".to_string()
    } else {
        algorithm
    };
    let mut warnings = Vec::new();
    let max_running = a.max_running_requests.unwrap_or_else(|| {
        warnings.push(
            "Max running requests is reset to 48 for speculative decoding. You can override \
             this by explicitly setting --max-running-requests."
                .into(),
        );
        SGLANG_SPEC_MAX_RUNNING
    });
    let (steps, topk, mut draft) = match a.speculative_num_steps {
        Some(s) => (
            s,
            a.speculative_eagle_topk.unwrap_or(1),
            a.speculative_num_draft_tokens,
        ),
        None if a.speculative_eagle_topk.is_some() || a.speculative_num_draft_tokens.is_some() => {
            return Err(Failure::Start(traceback(
                "_handle_eagle_family",
                "AssertionError",
            )))
        }
        None => {
            let (s, k, d) = SGLANG_AUTO_PARAMS;
            (s, k, Some(d))
        }
    };
    if topk == 1 && draft != Some(steps + 1) {
        warnings.push(
            "speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when \
             speculative_eagle_topk == 1"
                .into(),
        );
        draft = Some(steps + 1);
    }
    Ok(Resolved {
        steps,
        num_steps: Some(steps),
        warmup_failure: tree_failure(steps, topk, draft),
        algorithm: Some(algorithm),
        topk: Some(topk),
        draft_tokens: draft,
        max_running,
        spec_config: None,
        warnings,
        notes: Vec::new(),
        adaptive: None,
    })
}

/// A tree draft (topk > 1) picks `draft - 1` of `topk + (steps - 1) x
/// topk^2` candidates with `torch.topk` (`organize_draft_results`); asking
/// for more fails at the first decode, i.e. during warm-up.
fn tree_failure(steps: u32, topk: u32, draft: Option<u32>) -> Option<Vec<String>> {
    if topk <= 1 {
        return None;
    }
    let last = match draft {
        None => "TypeError: unsupported operand type(s) for -: 'NoneType' and 'int'".to_string(),
        Some(d) => {
            let candidates = topk as u64 + (steps.max(1) as u64 - 1) * (topk as u64).pow(2);
            if (d as u64).saturating_sub(1) <= candidates {
                return None;
            }
            "RuntimeError: selected index k out of range".to_string()
        }
    };
    Some(vec![
        "Scheduler hit an exception: Traceback (most recent call last):".into(),
        "  File \"sglang/srt/speculative/eagle_utils.py\", in organize_draft_results".into(),
        "    top_scores = torch.topk(score_list, num_draft_token - 1, dim=-1)".into(),
        last,
    ])
}

fn vllm(a: &Args) -> Result<Resolved, Failure> {
    let prog = "vllm serve";
    let sglang_only = [
        ("--speculative-num-steps", a.speculative_num_steps.is_some()),
        ("--speculative-algorithm", a.speculative_algorithm.is_some()),
        (
            "--speculative-eagle-topk",
            a.speculative_eagle_topk.is_some(),
        ),
        (
            "--speculative-num-draft-tokens",
            a.speculative_num_draft_tokens.is_some(),
        ),
        ("--admin-api-key", a.admin_api_key.is_some()),
        ("--speculative-adaptive", a.speculative_adaptive),
        (
            "--speculative-adaptive-config",
            a.speculative_adaptive_config.is_some(),
        ),
    ];
    let given: Vec<&str> = sglang_only
        .iter()
        .filter(|(_, set)| *set)
        .map(|(n, _)| *n)
        .collect();
    if !given.is_empty() {
        return Err(argparse(
            prog,
            &format!("unrecognized arguments: {}", given.join(" ")),
        ));
    }
    let mut r = plain(a);
    let Some(text) = &a.speculative_config else {
        return Ok(r);
    };
    // parse_type(json.loads): a ValueError becomes an argparse error.
    let v: Value = serde_json::from_str(text).map_err(|_| {
        argparse(
            prog,
            &format!(
                "argument --speculative-config: Value {text} cannot be converted to \
                 <function loads at 0x7f3a2c1d5e40>."
            ),
        )
    })?;
    let n = v.get("num_speculative_tokens").and_then(Value::as_u64);
    let Some(n) = n.filter(|n| (1..=64).contains(n)) else {
        return Err(Failure::Start(vec![
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for \
             SpeculativeConfig"
                .into(),
            format!(
                "  Value error, num_speculative_tokens must be a positive integer, got {} \
                 [type=value_error, input_value={text}]",
                v.get("num_speculative_tokens").unwrap_or(&Value::Null)
            ),
        ]));
    };
    // The engine core builds the batch-size lookup before the port opens.
    crate::dynamic_sd::ranges(&v).map_err(|e| match e {
        crate::dynamic_sd::Invalid::Pydantic(m) => {
            let mut lines = vec![
                "pydantic_core._pydantic_core.ValidationError: 1 validation error for \
                 SpeculativeConfig"
                    .to_string(),
            ];
            lines.extend(m.lines().map(String::from));
            Failure::Start(lines)
        }
        crate::dynamic_sd::Invalid::Value(m) => {
            Failure::Start(crate::dynamic_sd::engine_core_failure(&m))
        }
    })?;
    r.steps = n as u32;
    r.num_steps = Some(r.steps);
    r.spec_config = Some(v);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> Args {
        let mut v = vec!["llm-sim"];
        v.extend_from_slice(extra);
        Args::parse_from(v)
    }

    fn last_line(f: Failure) -> String {
        match f {
            Failure::Usage(l) | Failure::Start(l) => l.last().unwrap().clone(),
        }
    }

    #[test]
    fn sglang_steps_without_an_algorithm_are_ignored_not_a_crash() {
        // Real SGLang 0.5.23 served with speculation off (real_sglang.rs)
        // and logged nothing about it; llm-sim says so as its own note.
        let r = resolve(&args(&["--speculative-num-steps", "3"]))
            .unwrap_or_else(|_| panic!("no algorithm: not a start-up failure"));
        assert_eq!(r.steps, 0, "speculation off");
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        assert!(
            r.notes.iter().any(|w| w.contains("speculation is off")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn sglang_without_an_algorithm_reports_the_flags_as_given() {
        // As SGLang 0.5.23's /server_info: speculative_num_steps 3 beside
        // speculative_algorithm null (tests/fixtures/real/sglang/).
        let r = resolve(&args(&["--speculative-num-steps", "3"])).unwrap();
        assert_eq!((r.num_steps, r.algorithm, r.topk), (Some(3), None, None));
        let r = resolve(&args(&[])).unwrap();
        assert_eq!(r.num_steps, None);
    }

    #[test]
    fn sglang_steps_without_topk_is_the_type_error() {
        let e = resolve(&args(&[
            "--speculative-algorithm",
            "EAGLE",
            "--speculative-num-steps",
            "3",
        ]));
        let line = last_line(e.unwrap_err());
        assert_eq!(
            line,
            "TypeError: '>' not supported between instances of 'NoneType' and 'int'"
        );
    }

    #[test]
    fn sglang_topk_one_forces_draft_tokens_and_caps_48() {
        let r = resolve(&args(&[
            "--speculative-algorithm",
            "NEXTN",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-steps",
            "3",
            "--speculative-num-draft-tokens",
            "9",
        ]))
        .unwrap();
        assert_eq!((r.steps, r.draft_tokens, r.max_running), (3, Some(4), 48));
        assert_eq!(r.algorithm.as_deref(), Some("EAGLE"));
        assert!(r.warmup_failure.is_none());
    }

    #[test]
    fn sglang_tree_bound() {
        let ok = [
            "--speculative-algorithm",
            "EAGLE",
            "--speculative-num-steps",
            "3",
            "--speculative-eagle-topk",
            "2",
            "--speculative-num-draft-tokens",
        ];
        let with = |d: &str| {
            let mut v = ok.to_vec();
            v.push(d);
            resolve(&args(&v)).unwrap()
        };
        // 2 + 2 x 2^2 = 10 candidates: at most 11 draft tokens.
        assert!(with("11").warmup_failure.is_none());
        let bad = with("12").warmup_failure.unwrap();
        assert!(bad
            .last()
            .unwrap()
            .contains("selected index k out of range"));
    }

    #[test]
    fn sglang_rejects_mtp_and_vllm_bad_json() {
        let e = resolve(&args(&["--speculative-algorithm", "MTP"])).unwrap_err();
        assert!(matches!(&e, Failure::Usage(_)));
        assert!(last_line(e).contains("invalid choice: 'MTP'"));
        let e = resolve(&args(&[
            "--personality",
            "vllm",
            "--speculative-config",
            "{bad",
        ]));
        assert!(last_line(e.unwrap_err()).contains("cannot be converted"));
        let r = resolve(&args(&[
            "--personality",
            "vllm",
            "--speculative-config",
            r#"{"method":"eagle","num_speculative_tokens":3}"#,
        ]))
        .unwrap();
        assert_eq!((r.steps, r.max_running), (3, 128));
    }
}
