//! A whole JSON object a schedule sets on a flag (a vLLM schedule's
//! `--speculative-config '{...}'`, applied with `--apply-from`: the
//! `Op::Fold` schedule.rs adds after its set) takes in that flag's dotted
//! fields still on the line (`--speculative-config.method eagle`), which
//! are removed.
//!
//! Why: vLLM 0.32's vllm/utils/argparse_utils.py
//! `FlexibleArgumentParser.parse_args` takes every dotted `--FLAG.FIELD V`
//! out of the words, merges them into one dict per flag and appends
//! `--FLAG <that dict as JSON>` after every other word ("Add the dict args
//! back as if they were originally passed as JSON"), so argparse keeps the
//! dotted fields and drops a whole `--FLAG JSON`, whichever comes first on
//! the line: a schedule set beside `--speculative-config.method eagle` was
//! lost (vLLM ran `{"method": "eagle"}`, or refused to start without
//! `num_speculative_tokens`). Folded, the server runs the JSON it was given
//! plus the fields the line had: the JSON's own fields win (objects in
//! both merge the same way), dotted values are read as vLLM reads them
//! (`sweepkit::vllm_dotted`). Each removed dotted flag is a change with
//! its old value, so undoing the run's changes (sweep's end) sets it back.
//! To drop a dotted field rather than fold it, `--unset` it in the same
//! run (the fold runs after `--apply-from`'s edits). Only `--FLAG`
//! spellings fold (vLLM's short aliases such as `-sc` collect under their
//! own key).
//!
//! Not for `--set FLAG=JSON`: a sweep over whole JSON values sets one per
//! grid point, and only the first would take in the dotted fields (the
//! fold removes them), so the grid's points would differ by more than the
//! swept value, and sweep's end, which puts back only the swept keys'
//! original values, would not put the folded fields back. pre-flight
//! warns about that line instead (preflight_schedule.rs).

use serde_json::{Map, Value};
use sweepkit::records::Change;
use sweepkit::vllm_dotted;

use sweepkit::records::Config;

use crate::execstart::{escape_value, logical, ExecLine};
use crate::flags::{scan, FlagName, Found};

/// vLLM reads `_` as `-` in a flag's name up to its first `.`.
fn norm(name: &str) -> String {
    name.replace('_', "-")
}

/// What [`fold`] edits: the line, and the run's changes, config and
/// warnings so far.
type Edits<'a> = (
    &'a mut ExecLine,
    &'a mut Vec<Change>,
    &'a mut Config,
    &'a mut Vec<String>,
);

/// Fold `flag`'s dotted fields into its whole JSON object, when it has one
/// (else nothing: a value that is not a JSON object keeps vLLM's meaning).
pub(crate) fn fold((line, changes, config, warnings): Edits<'_>, flag: &FlagName) {
    let head = norm(&flag.name);
    let found = scan(line);
    // argparse keeps the last `--HEAD`.
    let Some(whole) = found.iter().rev().find(|f| {
        f.spelled
            .strip_prefix("--")
            .is_some_and(|n| norm(n) == head)
    }) else {
        return;
    };
    let json = whole
        .value
        .as_deref()
        .and_then(|v| serde_json::from_str::<Value>(&logical(v)).ok());
    let Some(Value::Object(json)) = json else {
        return;
    };
    let mut fields = Map::new();
    let mut gone: Vec<&Found> = Vec::new();
    for f in &found {
        let Some(path) = vllm_dotted::field_path(&f.spelled, &head) else {
            continue;
        };
        let Some(v) = &f.value else {
            warnings.push(format!(
                "{} has no value and was not folded into {}; vLLM still replaces the \
                 whole JSON with the dotted fields",
                f.spelled, whole.spelled
            ));
            continue;
        };
        let (keys, value) = vllm_dotted::field(path, &logical(v));
        vllm_dotted::merge(&mut fields, &keys, value);
        gone.push(f);
    }
    if gone.is_empty() {
        return;
    }
    let text = Value::Object(over(json, fields)).to_string();
    let word = escape_value(&text);
    if whole.len == 1 {
        line.words[whole.at] = format!("{}={word}", whole.spelled);
    } else {
        line.words[whole.at + 1] = word;
    }
    let mut at: Vec<(usize, usize)> = gone.iter().map(|f| (f.at, f.len)).collect();
    at.sort_unstable_by(|a, b| b.cmp(a));
    for (i, n) in at {
        line.words.drain(i..i + n);
    }
    record((changes, config), whole, &text, &gone);
}

/// The changes and config: the JSON's new value, each dotted flag
/// removed with the value it had before this run (none: it came with this
/// run, and going again is no change).
fn record(
    (changes, config): (&mut Vec<Change>, &mut Config),
    whole: &Found,
    text: &str,
    gone: &[&Found],
) {
    let name = whole.spelled.trim_start_matches('-').to_string();
    match changes.iter_mut().find(|c| c.flag == whole.spelled) {
        Some(c) => c.new = Some(text.to_string()),
        None => changes.push(Change {
            flag: whole.spelled.clone(),
            old: whole.value.as_deref().map(logical),
            new: Some(text.to_string()),
        }),
    }
    config.insert(name, text.to_string());
    for f in gone {
        let old = match changes.iter().position(|c| c.flag == f.spelled) {
            Some(p) => changes.remove(p).old,
            None => f.value.as_deref().map(logical),
        };
        config.remove(f.spelled.trim_start_matches('-'));
        if old.is_some() {
            changes.push(Change {
                flag: f.spelled.clone(),
                old,
                new: None,
            });
        }
    }
}

/// `json` over `fields`: the JSON's own fields win, an object in both
/// merges the same way, fields only dotted come after the JSON's.
fn over(mut json: Map<String, Value>, fields: Map<String, Value>) -> Map<String, Value> {
    for (k, v) in fields {
        match (json.get_mut(&k), v) {
            (Some(Value::Object(j)), Value::Object(f)) => {
                let mine = std::mem::take(j);
                *j = over(mine, f);
            }
            (Some(_), _) => {}
            (None, v) => {
                json.insert(k, v);
            }
        }
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::{apply, Edited};
    use crate::execstart::{parse, render};
    use crate::flags::Op;
    use serde_json::json;

    const SCHED: &str = r#"{"num_speculative_tokens":4,"num_speculative_tokens_per_batch_size":[[1,1,4],[2,64,1]]}"#;

    fn edit(line: &str, ops: &[&str]) -> (String, Edited) {
        let ops: Vec<Op> = ops
            .iter()
            .map(|o| match (o.strip_prefix('!'), o.strip_prefix('~')) {
                (Some(u), _) => Op::parse_unset(u).unwrap(),
                (_, Some(f)) => Op::Fold {
                    flag: FlagName::parse(f).unwrap(),
                },
                _ => Op::parse_set(o).unwrap(),
            })
            .collect();
        let e = apply(&parse(line).unwrap(), &ops);
        (render(&e.line), e)
    }

    /// The JSON value on `line` after `--speculative-config`.
    fn json_of(e: &Edited) -> Value {
        let argv = e.line.logical_argv();
        let i = argv
            .iter()
            .position(|w| w == "--speculative-config")
            .unwrap();
        serde_json::from_str(&argv[i + 1]).unwrap()
    }

    /// A vLLM schedule's edits (the swept dotted depth removed, the whole
    /// JSON set) onto a line with `method` and `model` dotted: both fold
    /// in, the line keeps one `--speculative-config`, and the changes
    /// name each removed flag with its old value.
    #[test]
    fn a_schedule_takes_in_the_dotted_fields_left_on_the_line() {
        let line = "/bin/vllm serve m --speculative-config.method eagle \
                    --speculative-config.num_speculative_tokens 2 --port 8000 \
                    --speculative_config.model=/m/draft";
        let set = format!("speculative-config={SCHED}");
        let ops = [
            "!speculative-config.num_speculative_tokens",
            &set,
            "~speculative-config",
        ];
        let (t, e) = edit(line, &ops);
        assert!(!t.contains("--speculative-config."), "{t}");
        assert!(!t.contains("--speculative_config"), "{t}");
        assert!(t.starts_with("/bin/vllm serve m --port 8000 --speculative-config "));
        assert_eq!(
            json_of(&e),
            json!({"num_speculative_tokens": 4,
                   "num_speculative_tokens_per_batch_size": [[1, 1, 4], [2, 64, 1]],
                   "method": "eagle", "model": "/m/draft"})
        );
        let ch: Vec<(&str, Option<&str>, Option<&str>)> = e
            .changes
            .iter()
            .map(|c| (c.flag.as_str(), c.old.as_deref(), c.new.as_deref()))
            .collect();
        assert_eq!(
            ch[0],
            (
                "--speculative-config.num_speculative_tokens",
                Some("2"),
                None
            )
        );
        assert_eq!(ch[1].0, "--speculative-config");
        assert_eq!(
            (ch[1].1, ch[1].2.map(|n| n.contains("eagle"))),
            (None, Some(true))
        );
        assert_eq!(ch[2], ("--speculative-config.method", Some("eagle"), None));
        assert_eq!(
            ch[3],
            ("--speculative_config.model", Some("/m/draft"), None)
        );
        assert_eq!(ch.len(), 4);
        assert_eq!(e.config.len(), 1, "{:?}", e.config);
        assert_eq!(
            serde_json::from_str::<Value>(&e.config["speculative-config"]).unwrap(),
            json_of(&e)
        );
    }

    /// The JSON's own fields win; values read as vLLM reads them; nested
    /// objects merge; a JSON set where one stood keeps its place and form.
    #[test]
    fn the_json_wins_and_values_read_as_vllm_reads_them() {
        let line = r#"/bin/vllm serve m '--speculative-config={"method":"ngram"}' --speculative-config.method eagle --speculative-config.n 1k --speculative-config.d.a true --speculative-config.l+ x,y"#;
        let (t, e) = edit(
            line,
            &[
                r#"speculative-config={"method":"mtp","d":{"b":1},"num_speculative_tokens":2}"#,
                "~speculative-config",
            ],
        );
        assert!(
            t.starts_with(r#"/bin/vllm serve m "--speculative-config={"#),
            "{t}"
        );
        assert_eq!(
            json_of_eq(&t),
            json!({"method": "mtp", "d": {"b": 1, "a": true}, "num_speculative_tokens": 2,
                   "n": 1000, "l": ["x", "y"]})
        );
        let old = &e.changes[0];
        assert_eq!(old.old.as_deref(), Some(r#"{"method":"ngram"}"#));
    }

    fn json_of_eq(t: &str) -> Value {
        let argv = parse(t).unwrap().logical_argv();
        let w = argv
            .iter()
            .find(|w| w.starts_with("--speculative-config="))
            .unwrap();
        serde_json::from_str(&w["--speculative-config=".len()..]).unwrap()
    }

    /// Only a fold folds (a plain `--set` of a whole JSON does not), and
    /// only into a JSON object; an `--unset` before it drops a field
    /// instead; a dotted flag this run added and the fold removed is no
    /// change at all.
    #[test]
    fn only_a_fold_into_a_json_object_folds() {
        let line = "/bin/vllm serve m --speculative-config.method eagle --x 1";
        let set = format!("speculative-config={SCHED}");
        for ops in [
            &["speculative-config.num_speculative_tokens=3"][..],
            &["x=2", "~x"],
            &[&set],
            &["speculative-config=null", "~speculative-config"],
        ] {
            let (t, _) = edit(line, ops);
            assert!(
                t.contains("--speculative-config.method eagle"),
                "{ops:?}: {t}"
            );
        }
        let fold = "~speculative-config";
        let (t, e) = edit(line, &["!speculative-config.method", &set, fold]);
        assert!(!t.contains("eagle"), "{t}");
        assert_eq!(json_of(&e), serde_json::from_str::<Value>(SCHED).unwrap());
        let (t, e) = edit(line, &["speculative-config.model=/d", &set, fold]);
        assert!(!t.contains("--speculative-config.model"), "{t}");
        assert_eq!(json_of(&e)["model"], "/d");
        assert!(
            !e.changes
                .iter()
                .any(|c| c.flag == "--speculative-config.model"),
            "{:?}",
            e.changes
        );
    }
}
