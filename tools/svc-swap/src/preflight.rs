//! Pre-flight of SGLang's speculative-decoding flags: refuse, before the
//! running server is stopped, a command line SGLang would reject after a
//! model load, and say what SGLang will silently change. Pure: no I/O.
//!
//! Every rule follows SGLang's own argument handling (sgl-project/sglang,
//! 2025-2026), cited where it is applied:
//! - `python/sglang/srt/server_args.py`, `ServerArgs._handle_speculative_decoding`
//!   (called from `ServerArgs.__post_init__`): NEXTN becomes EAGLE; EAGLE,
//!   EAGLE3 and STANDALONE (and NGRAM) set `max_running_requests = 48` when
//!   it is unset; with steps unset, topk and draft tokens must be unset too
//!   (`assert`) and `auto_choose_speculative_params` picks all three; topk 1
//!   forces `speculative_num_draft_tokens = steps + 1` with a warning; then
//!   `self.speculative_eagle_topk > 1` is evaluated, which with topk unset is
//!   `None > 1`: `TypeError: '>' not supported between instances of
//!   'NoneType' and 'int'` (seen on SGLang 0.5.23: exit 1 after ~21 s).
//! - `--speculative-algorithm` choices in `ServerArgs.add_cli_args`:
//!   EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM (DFLASH added in 2026,
//!   `python/sglang/srt/speculative/spec_info.py`, `SpeculativeAlgorithm`);
//!   there is no MTP: multi-token-prediction heads run as NEXTN.
//! - The topk > 1 bound: a draft tree of `steps` levels of `topk` nodes
//!   holds at most `steps * topk + 1` tokens; SGLang's own
//!   `scripts/playground/bench_speculative.py` `main()` skips every config
//!   with `steps * topk + 1 < num_draft_tokens` for that reason.

/// Why SGLang would refuse a command line: each variant one rule above,
/// its message the one line svc-swap prints (and records) as the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("--{flag} {value}: not an integer (SGLang's argument parser exits 2)")]
    NotAnInteger { flag: &'static str, value: String },
    #[error(
        "--{ALGO} {algo}: SGLang has no algorithm {algo}; multi-token \
         prediction (MTP) heads run as NEXTN (reported as EAGLE), or use EAGLE"
    )]
    NoMtp { algo: String },
    #[error("--{ALGO} {algo}: not an SGLang algorithm (valid: {})", ALGORITHMS.join(", "))]
    UnknownAlgorithm { algo: String },
    #[error(
        "--{flag} {value} without --{STEPS}: SGLang's argument check fails \
         (assert: topk and draft tokens need steps); give --{STEPS} too"
    )]
    NeedsSteps { flag: &'static str, value: i64 },
    #[error(
        "--{STEPS} {steps} without --{TOPK}: SGLang's argument check fails \
         (TypeError: '>' not supported between 'NoneType' and 'int', exit 1); \
         add --{TOPK} 1 (or --no-preflight to try anyway)"
    )]
    NeedsTopk { steps: i64 },
    #[error(
        "--{DRAFT} {draft}: more than --{STEPS} x --{TOPK} + 1 = {} tokens a \
         draft tree of {steps} steps and topk {topk} can hold",
        steps * topk + 1
    )]
    TreeTooSmall { draft: i64, steps: i64, topk: i64 },
}

/// Algorithms SGLang accepts (see the module comment for the sources).
const ALGORITHMS: [&str; 6] = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH"];

/// The flags the rules read, as SGLang spells them.
const ALGO: &str = "speculative-algorithm";
const STEPS: &str = "speculative-num-steps";
const TOPK: &str = "speculative-eagle-topk";
const DRAFT: &str = "speculative-num-draft-tokens";
const MAX_RUNNING: &str = "max-running-requests";
const KNOWN: [&str; 5] = [ALGO, STEPS, TOPK, DRAFT, MAX_RUNNING];

/// What pre-flight found in a command line SGLang will parse.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// What SGLang will force or ignore, for stderr and the swap record.
    pub notes: Vec<String>,
}

/// Does `argv` start an SGLang server (or llm-sim, which mimics SGLang
/// unless told `--personality vllm` or another personality)?
pub fn is_sglang(argv: &[String]) -> bool {
    let base = |p: &String| p.rsplit('/').next().unwrap_or(p).to_string();
    // Behind `srun --opt=V ...` (sweep --slurm runs the server as a job
    // step) the program is the first word that is not an option.
    let prog = match argv.first().map(base).as_deref() {
        Some("srun") => argv[1..].iter().find(|w| !w.starts_with('-')).map(base),
        _ => argv.first().map(base),
    }
    .unwrap_or_default();
    if prog == "llm-sim" {
        return flag(argv, "personality").is_none_or(|p| p == "sglang");
    }
    argv.iter()
        .any(|w| w == "sglang.launch_server" || w.ends_with("sglang/launch_server.py"))
        || argv
            .windows(2)
            .any(|w| w[0].rsplit('/').next() == Some("sglang") && w[1] == "serve")
}

/// Which of `KNOWN` a word names: the exact name, or a prefix long enough
/// to be unique, since argparse accepts unambiguous abbreviations
/// (`--speculative-algo EAGLE` is common in SGLang's own docs).
fn known_name(word: &str) -> Option<&'static str> {
    let name = word.strip_prefix("--")?;
    if let Some(k) = KNOWN.iter().find(|k| **k == name) {
        return Some(k);
    }
    let hits: Vec<_> = KNOWN.iter().filter(|k| k.starts_with(name)).collect();
    (name.len() > "speculative-".len() + 1 && hits.len() == 1).then(|| *hits[0])
}

/// The last value of `--NAME V` or `--NAME=V` (argparse keeps the last).
fn flag(argv: &[String], name: &str) -> Option<String> {
    let mut out = None;
    let mut i = 1;
    while i < argv.len() {
        let w = &argv[i];
        let (k, v) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (w.as_str(), argv.get(i + 1).cloned()),
        };
        let hit = if name == "personality" {
            k == "--personality"
        } else {
            known_name(k) == Some(name)
        };
        if hit {
            out = v;
        }
        i += 1;
    }
    out
}

/// `--NAME` as an integer, if given; a value argparse would refuse is an
/// error naming the flag.
fn int(argv: &[String], name: &'static str) -> Result<Option<i64>, Refusal> {
    match flag(argv, name) {
        None => Ok(None),
        Some(v) => v
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| Refusal::NotAnInteger {
                flag: name,
                value: v,
            }),
    }
}

/// Check an SGLang command line. `Err` is the one-line reason SGLang would
/// fail at start-up; `Ok` carries what it will force instead.
pub fn check(argv: &[String]) -> Result<Findings, Refusal> {
    check_for_load(argv, None)
}

/// [`check`], for a load of at most `max_load` requests at once when
/// known: a load that never passes SGLang's cap needs no word about it.
pub fn check_for_load(argv: &[String], max_load: Option<u32>) -> Result<Findings, Refusal> {
    let mut f = Findings::default();
    let (steps, topk, draft) = (int(argv, STEPS)?, int(argv, TOPK)?, int(argv, DRAFT)?);
    let Some(algo) = flag(argv, ALGO) else {
        // _handle_speculative_decoding does nothing without an algorithm.
        for (n, v) in [(STEPS, steps), (TOPK, topk), (DRAFT, draft)] {
            if let Some(v) = v {
                f.notes.push(format!(
                    "--{n} {v} is ignored: speculation is off without --{ALGO}"
                ));
            }
        }
        return Ok(f);
    };
    let upper = algorithm(&algo, &mut f)?;
    if max_load.is_none_or(|m| m > CAP) {
        cap_note(argv, &mut f);
    }
    // NGRAM and DFLASH take their shape from other flags.
    if upper != "NGRAM" && upper != "DFLASH" {
        eagle_rules(steps, topk, draft, &mut f)?;
    }
    Ok(f)
}

/// The algorithm as SGLang resolves it; unknown names are refused.
fn algorithm(algo: &str, f: &mut Findings) -> Result<String, Refusal> {
    let upper = algo.to_ascii_uppercase();
    if upper.contains("MTP") {
        return Err(Refusal::NoMtp { algo: algo.into() });
    }
    if !ALGORITHMS.contains(&upper.as_str()) {
        return Err(Refusal::UnknownAlgorithm { algo: algo.into() });
    }
    if upper != algo {
        f.notes.push(format!(
            "--{ALGO} {algo}: SGLang's choices are upper case ({upper}); \
             versions whose argparse checks them refuse {algo}"
        ));
    }
    if upper == "NEXTN" {
        f.notes
            .push(format!("--{ALGO} NEXTN runs (and is reported) as EAGLE"));
    }
    Ok(upper)
}

/// The requests SGLang runs at once with speculation on and
/// --max-running-requests unset.
const CAP: u32 = 48;
const CAP_NOTE: &str = "SGLang sets max_running_requests to 48";

/// Speculation caps the batch when --max-running-requests is unset.
fn cap_note(argv: &[String], f: &mut Findings) {
    if flag(argv, MAX_RUNNING).is_none() {
        f.notes.push(format!(
            "{CAP_NOTE} when speculation is on and \
             --{MAX_RUNNING} is unset: concurrency above 48 queues (set \
             --{MAX_RUNNING} to choose)"
        ));
    }
}

/// EAGLE, EAGLE3, STANDALONE (and NEXTN, which is EAGLE).
fn eagle_rules(
    steps: Option<i64>,
    topk: Option<i64>,
    draft: Option<i64>,
    f: &mut Findings,
) -> Result<(), Refusal> {
    let Some(steps) = steps else {
        if let Some((n, v)) = [(TOPK, topk), (DRAFT, draft)]
            .into_iter()
            .find_map(|(n, v)| v.map(|v| (n, v)))
        {
            return Err(Refusal::NeedsSteps { flag: n, value: v });
        }
        f.notes.push(format!(
            "--{STEPS}, --{TOPK} and --{DRAFT} unset: SGLang picks all three \
             itself (auto_choose_speculative_params)"
        ));
        return Ok(());
    };
    let Some(topk) = topk else {
        return Err(Refusal::NeedsTopk { steps });
    };
    let forced = steps + 1;
    match (topk, draft) {
        (1, Some(d)) if d != forced => f.notes.push(format!(
            "--{DRAFT} {d} is overridden: SGLang forces {forced} (steps + 1) at --{TOPK} 1; \
             vary --{STEPS} alone, or draft tokens with --{TOPK} above 1"
        )),
        (1, None) => f.notes.push(format!(
            "SGLang sets speculative_num_draft_tokens to {forced} (steps + 1) at --{TOPK} 1"
        )),
        (k, Some(d)) if k > 1 && d > steps * k + 1 => {
            return Err(Refusal::TreeTooSmall {
                draft: d,
                steps,
                topk: k,
            })
        }
        (k, None) if k > 1 => f.notes.push(format!(
            "--{TOPK} {k} without --{DRAFT}: set it (at most {}) for a tree draft",
            steps * k + 1
        )),
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }
    fn sg(rest: &str) -> Vec<String> {
        argv(&format!(
            "/usr/bin/python3 -m sglang.launch_server --model-path m {rest}"
        ))
    }
    fn rejected(rest: &str) -> String {
        check(&sg(rest)).expect_err(rest).to_string()
    }
    /// A caller tells refusals apart by their variant, not their text.
    #[test]
    fn refusals_are_typed() {
        let e = check(&sg(
            "--speculative-algorithm EAGLE --speculative-num-steps 2",
        ));
        assert_eq!(e.unwrap_err(), Refusal::NeedsTopk { steps: 2 });
        let e = check(&sg("--speculative-algorithm MEDUSA")).unwrap_err();
        assert_eq!(
            e,
            Refusal::UnknownAlgorithm {
                algo: "MEDUSA".into()
            }
        );
        assert!(e.to_string().contains("(valid: EAGLE, EAGLE3,"), "{e}");
    }

    fn notes(rest: &str) -> Vec<String> {
        check(&sg(rest)).expect(rest).notes
    }

    #[test]
    fn sglang_and_llm_sim_command_lines_are_recognised() {
        assert!(is_sglang(&sg("")));
        assert!(is_sglang(&argv(
            "/opt/venv/bin/sglang serve --model-path m"
        )));
        assert!(is_sglang(&argv("/opt/bin/llm-sim --port 1")));
        assert!(is_sglang(&argv("llm-sim --personality sglang")));
        assert!(!is_sglang(&argv("llm-sim --personality vllm")));
        assert!(is_sglang(&argv(
            "srun --overlap --ntasks=1 /opt/bin/llm-sim --port 1"
        )));
        assert!(!is_sglang(&argv(
            "srun --overlap llm-sim --personality vllm"
        )));
        assert!(!is_sglang(&argv("llm-sim --personality=vllm")));
        assert!(!is_sglang(&argv("/usr/bin/vllm serve m --port 1")));
        assert!(!is_sglang(&argv("/opt/llama-server -m x.gguf")));
    }

    /// server_args.py `_handle_speculative_decoding`: `None > 1` raises
    /// TypeError when steps is set and topk is not.
    #[test]
    fn steps_without_topk_is_refused_naming_the_flag_and_value() {
        let e = rejected("--speculative-algorithm EAGLE --speculative-num-steps 2");
        assert!(e.starts_with("--speculative-num-steps 2 without --speculative-eagle-topk"));
        assert!(e.contains("TypeError") && e.contains("--speculative-eagle-topk 1"));
        assert!(!e.contains('\n'));
        // The last occurrence wins, as in argparse; `=` form and abbreviation.
        let e = rejected(
            "--speculative-algo EAGLE --speculative-num-steps=1 --speculative-num-steps 3",
        );
        assert!(e.starts_with("--speculative-num-steps 3 "), "{e}");
    }

    /// `_handle_speculative_decoding`: `assert speculative_eagle_topk is None
    /// and speculative_num_draft_tokens is None` when steps is unset.
    #[test]
    fn topk_or_draft_without_steps_is_refused() {
        let e = rejected("--speculative-algorithm EAGLE --speculative-eagle-topk 4");
        assert!(e.starts_with("--speculative-eagle-topk 4 without --speculative-num-steps"));
        let e = rejected("--speculative-algorithm EAGLE3 --speculative-num-draft-tokens 4");
        assert!(
            e.starts_with("--speculative-num-draft-tokens 4 without"),
            "{e}"
        );
        let n = notes("--speculative-algorithm EAGLE");
        assert!(n
            .iter()
            .any(|n| n.contains("auto_choose_speculative_params")));
    }

    /// bench_speculative.py `main()`: `steps * topk + 1 < num_draft_tokens`.
    #[test]
    fn draft_tokens_beyond_the_tree_are_refused_at_topk_above_one() {
        let base =
            "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 2";
        let e = rejected(&format!("{base} --speculative-num-draft-tokens 8"));
        assert!(
            e.starts_with("--speculative-num-draft-tokens 8: more than"),
            "{e}"
        );
        assert!(e.contains("= 7"), "{e}");
        assert!(check(&sg(&format!("{base} --speculative-num-draft-tokens 7"))).is_ok());
        let n = notes(base);
        assert!(n.iter().any(|n| n.contains("at most 7")), "{n:?}");
    }

    /// `_handle_speculative_decoding`: topk 1 forces draft = steps + 1.
    #[test]
    fn topk_one_forces_draft_tokens_and_warns_when_overridden() {
        let base =
            "--speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1";
        let n = notes(&format!("{base} --speculative-num-draft-tokens 8"));
        assert!(
            n.iter().any(
                |n| n.contains("--speculative-num-draft-tokens 8 is overridden")
                    && n.contains("forces 4")
            ),
            "{n:?}"
        );
        let n = notes(base);
        assert!(n.iter().any(|n| n.contains("to 4 (steps + 1)")), "{n:?}");
        let n = notes(&format!("{base} --speculative-num-draft-tokens 4"));
        assert!(!n.iter().any(|n| n.contains("draft")), "{n:?}");
    }

    /// `_handle_speculative_decoding`: `max_running_requests = 48` when unset.
    #[test]
    fn the_48_request_cap_is_announced_only_when_unset() {
        let base =
            "--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1";
        assert!(notes(base).iter().any(|n| n.starts_with(CAP_NOTE)));
        let capped = |load| check_for_load(&sg(base), Some(load)).unwrap().notes;
        assert!(capped(49).iter().any(|n| n.starts_with(CAP_NOTE)));
        assert!(
            !capped(48).iter().any(|n| n.contains("48")),
            "a load within the cap"
        );
        let n = notes(&format!("{base} --max-running-requests 64"));
        assert!(!n.iter().any(|n| n.contains("48")), "{n:?}");
        assert!(notes("--speculative-algorithm NGRAM")
            .iter()
            .any(|n| n.contains("48")));
        assert!(!notes("--max-running-requests 8")
            .iter()
            .any(|n| n.contains("48")));
    }

    /// add_cli_args choices; NEXTN -> EAGLE in `_handle_speculative_decoding`.
    #[test]
    fn algorithms_unknown_mtp_and_nextn() {
        let e = rejected("--speculative-algorithm MTP --speculative-num-steps 1");
        assert!(e.starts_with("--speculative-algorithm MTP: SGLang has no algorithm MTP"));
        assert!(e.contains("NEXTN") && e.contains("EAGLE"), "{e}");
        let e = rejected("--speculative-algorithm MEDUSA");
        assert!(e.contains("valid: EAGLE, EAGLE3, NEXTN"), "{e}");
        let n = notes(
            "--speculative-algorithm NEXTN --speculative-num-steps 2 --speculative-eagle-topk 1",
        );
        assert!(n.iter().any(|n| n.contains("as EAGLE")), "{n:?}");
        // NEXTN is EAGLE: the same steps-without-topk failure.
        assert!(check(&sg(
            "--speculative-algorithm NEXTN --speculative-num-steps 2"
        ))
        .is_err());
        let n = notes(
            "--speculative-algorithm eagle --speculative-num-steps 1 --speculative-eagle-topk 1",
        );
        assert!(n.iter().any(|n| n.contains("upper case")), "{n:?}");
    }

    #[test]
    fn without_an_algorithm_speculative_flags_are_ignored_not_refused() {
        let n = notes("--speculative-num-steps 2");
        assert_eq!(n.len(), 1, "{n:?}");
        assert!(n[0].contains("ignored"), "{n:?}");
    }

    #[test]
    fn non_integers_are_refused_naming_the_flag() {
        let e = rejected("--speculative-algorithm EAGLE --speculative-num-steps two");
        assert!(
            e.starts_with("--speculative-num-steps two: not an integer"),
            "{e}"
        );
    }

    #[test]
    fn abbreviations_must_be_unique_and_long() {
        assert_eq!(known_name("--speculative-algo"), Some(ALGO));
        assert_eq!(
            known_name("--speculative-num"),
            None,
            "steps or draft tokens"
        );
        assert_eq!(known_name("--speculative-"), None);
        assert_eq!(known_name("--max-running-requests"), Some(MAX_RUNNING));
        assert_eq!(known_name("speculative-algorithm"), None);
    }
}
