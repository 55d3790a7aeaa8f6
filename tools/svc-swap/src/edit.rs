//! Applying `--set`/`--unset`/fold edits to a launch line, in order
//! (flags.rs reads the line's flags; fold.rs merges dotted fields): the
//! edited line, its changes as the server sees them, the config map.

use sweepkit::records::Change;

use crate::execstart::{escape_value, logical, ExecLine};
use crate::flags::{is_value_word, scan, FlagName, Form, Found, Op};

fn matches(f: &Found, flag: &FlagName) -> bool {
    let name = f.spelled.trim_start_matches('-');
    let dashes = &f.spelled[..f.spelled.len() - name.len()];
    name == flag.name && flag.dashes.as_deref().is_none_or(|d| d == dashes)
}

fn words_for(spelled: &str, value: Option<&str>, form: Form) -> Vec<String> {
    match (value, form) {
        (None, _) => vec![spelled.to_string()],
        (Some(v), Form::Equals) => vec![format!("{spelled}={v}")],
        // `--flag -x` would read as two flags: values with a dash go after `=`.
        (Some(v), _) if !is_value_word(v) => vec![format!("{spelled}={v}")],
        (Some(v), _) => vec![spelled.to_string(), v.to_string()],
    }
}

/// The form new flags take: `--flag=value` when the line mostly uses it.
fn preferred_form(found: &[Found]) -> Form {
    let eq = found.iter().filter(|f| f.form == Form::Equals).count();
    let sep = found.iter().filter(|f| f.form == Form::Separate).count();
    if eq > sep {
        Form::Equals
    } else {
        Form::Separate
    }
}

/// Result of applying edits.
#[derive(Debug, Clone)]
pub struct Edited {
    pub line: ExecLine,
    pub changes: Vec<Change>,
    /// The config map: flag name (no dashes) -> new value (`""`: switch).
    pub config: sweepkit::records::Config,
    pub warnings: Vec<String>,
}

/// Apply `ops` in order. Values from the command line are escaped for the
/// unit file (`%` and `$` doubled); changes report what the server sees.
pub fn apply(line: &ExecLine, ops: &[Op]) -> Edited {
    let mut e = Edited {
        line: line.clone(),
        changes: Vec::new(),
        config: sweepkit::records::Config::new(),
        warnings: Vec::new(),
    };
    let Edited {
        line,
        changes,
        config,
        warnings,
    } = &mut e;
    for op in ops {
        let found = scan(line);
        let (flag, new) = match op {
            Op::Set { flag, value } => (flag, Some(value.as_deref().map(escape_value))),
            Op::Unset { flag } => (flag, None),
            Op::Fold { flag } => {
                crate::fold::fold((line, changes, config, warnings), flag);
                continue;
            }
        };
        let hits: Vec<&Found> = found.iter().filter(|f| matches(f, flag)).collect();
        let old = hits.first().map(|f| f.value.clone().unwrap_or_default());
        let spelled = hits
            .first()
            .map(|f| f.spelled.clone())
            .unwrap_or_else(|| flag.spelled());
        if hits.len() > 1 {
            warnings.push(format!(
                "{spelled} appears {} times; {} kept one",
                hits.len(),
                if new.is_some() { "--set" } else { "--unset" }
            ));
        }
        // Remove later duplicates back to front so indices stay valid.
        for f in hits.iter().skip(1).rev() {
            line.words.drain(f.at..f.at + f.len);
        }
        match (&new, hits.first()) {
            (Some(v), Some(f)) => {
                let form = if f.form == Form::Bare {
                    preferred_form(&found)
                } else {
                    f.form
                };
                let repl = words_for(&spelled, v.as_deref(), form);
                line.words.splice(f.at..f.at + f.len, repl);
            }
            (Some(v), None) => {
                let words = words_for(&spelled, v.as_deref(), preferred_form(&found));
                let end = line
                    .words
                    .iter()
                    .skip(line.first_arg())
                    .position(|w| w == "--")
                    .map_or(line.words.len(), |p| p + line.first_arg());
                line.words.splice(end..end, words);
            }
            (None, Some(f)) => {
                line.words.drain(f.at..f.at + f.len);
            }
            (None, None) => {
                warnings.push(format!(
                    "--unset {}: not on the command line",
                    flag.spelled()
                ));
                continue;
            }
        }
        let new_logical = new.as_ref().map(|v| logical(v.as_deref().unwrap_or("")));
        if let Some(v) = &new_logical {
            config.insert(flag.name.clone(), v.clone());
        } else {
            config.remove(&flag.name);
        }
        changes.retain(|c| c.flag != spelled);
        changes.push(Change {
            flag: spelled,
            old: old.map(|o| logical(&o)),
            new: new_logical,
        });
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::execstart::{parse, render};
    use crate::flags::{config_of, diff};

    fn edit(line: &str, ops: &[Op]) -> (String, Edited) {
        let e = apply(&parse(line).unwrap(), ops);
        (render(&e.line), e)
    }
    /// `line` after `--set OP`.
    fn set_one(line: &str, op: &str) -> String {
        edit(line, &[set(op)]).0
    }
    fn set(s: &str) -> Op {
        Op::parse_set(s).unwrap()
    }
    fn unset(s: &str) -> Op {
        Op::parse_unset(s).unwrap()
    }

    #[test]
    fn set_replaces_in_the_form_found() {
        let l = "/bin/s --speculative-num-steps 3 --port=8000 --x";
        let (t, e) = edit(l, &[set("speculative-num-steps=5"), set("--port=9000")]);
        assert_eq!(t, "/bin/s --speculative-num-steps 5 --port=9000 --x");
        assert_eq!(e.changes[0].old.as_deref(), Some("3"));
        assert_eq!(e.changes[0].new.as_deref(), Some("5"));
        assert_eq!(e.changes[1].flag, "--port");
        assert_eq!(e.config["speculative-num-steps"], "5");
        assert_eq!(e.config["port"], "9000");
    }

    #[test]
    fn set_adds_missing_flags_in_the_line_s_style() {
        let (t, e) = edit("/bin/s --a 1", &[set("bb=2"), set("c=3")]);
        assert_eq!(t, "/bin/s --a 1 --bb 2 -c 3");
        assert_eq!(e.changes[0].old, None);
        assert_eq!(
            set_one("/bin/s --a=1 --b=2 x", "speculative-k=4"),
            "/bin/s --a=1 --b=2 x --speculative-k=4"
        );
        assert_eq!(
            set_one("/bin/s --a 1 -- pos", "--b=2"),
            "/bin/s --a 1 --b 2 -- pos"
        );
    }

    #[test]
    fn bare_switches() {
        let (t, e) = edit("/bin/s --a 1 --trust", &[set("enable-foo"), set("--bar=")]);
        assert_eq!(t, "/bin/s --a 1 --trust --enable-foo --bar");
        assert_eq!(e.changes[0].new.as_deref(), Some(""));
        let (t, e) = edit("/bin/s --trust --a 1", &[set("trust=yes")]);
        assert_eq!(t, "/bin/s --trust yes --a 1");
        assert_eq!(e.changes[0].old.as_deref(), Some(""));
        assert_eq!(
            set_one("/bin/s --trust yes --a 1", "trust"),
            "/bin/s --trust --a 1"
        );
    }

    #[test]
    fn unset_removes_every_form() {
        let (t, e) = edit(
            "/bin/s --a 1 --b=2 --c --d 4",
            &[unset("a"), unset("--b"), unset("c")],
        );
        assert_eq!(t, "/bin/s --d 4");
        assert_eq!(e.changes.len(), 3);
        assert_eq!(e.changes[2].old.as_deref(), Some(""));
        assert!(e.changes.iter().all(|c| c.new.is_none()));
        let (_, e) = edit("/bin/s --d 4", &[unset("zz")]);
        assert!(e.changes.is_empty() && e.warnings.len() == 1);
    }

    #[test]
    fn dashes_given_match_only_that_spelling() {
        assert_eq!(set_one("/bin/s -c 1 --c 2", "--c=5"), "/bin/s -c 1 --c 5");
        assert_eq!(set_one("/bin/s -ngl 99", "ngl=10"), "/bin/s -ngl 10");
    }

    #[test]
    fn negative_numbers_are_values_and_dash_values_use_equals() {
        let (t, e) = edit("/bin/s --seed -1 --x", &[set("seed=7")]);
        assert_eq!(t, "/bin/s --seed 7 --x");
        assert_eq!(e.changes[0].old.as_deref(), Some("-1"));
        assert_eq!(
            set_one("/bin/s --a 1", "extra=-v"),
            "/bin/s --a 1 --extra=-v"
        );
    }

    #[test]
    fn nasty_values_round_trip_as_one_word() {
        for v in [
            "; rm -rf /",
            "$(touch /tmp/x)",
            "it's \"q\"",
            "a\nb",
            "100%",
            "$HOME",
        ] {
            let (t, e) = edit("/bin/s --a 1", &[set(&format!("a={v}"))]);
            let back = parse(&t).unwrap();
            assert_eq!(back.logical_argv(), ["/bin/s", "--a", v], "{t}");
            assert_eq!(e.config["a"], v);
        }
    }

    #[test]
    fn duplicates_collapse_with_a_warning() {
        let (t, e) = edit("/bin/s --l a --x --l b", &[set("l=c")]);
        assert_eq!(t, "/bin/s --l c --x");
        assert_eq!(e.warnings.len(), 1);
    }

    #[test]
    fn at_prefix_skips_argv0() {
        let (t, _) = edit("@/usr/bin/python3 --port 1", &[set("port=2")]);
        assert_eq!(
            t, "@/usr/bin/python3 --port 1 --port 2",
            "argv0 is not a flag"
        );
    }

    #[test]
    fn diff_and_config_of() {
        let a = parse("/bin/s --a 1 --b 2 --c").unwrap();
        let b = parse("/bin/s --a 1 --b 3 --d=4").unwrap();
        let d = diff(&a, &b);
        let flags: Vec<_> = d.iter().map(|c| c.flag.as_str()).collect();
        assert_eq!(flags, ["--b", "--c", "--d"]);
        assert_eq!(d[1].new, None);
        let cfg = config_of(&b, &d);
        assert_eq!(cfg.get("b").map(String::as_str), Some("3"));
        assert!(!cfg.contains_key("c"));
    }

    #[test]
    fn bad_flag_names() {
        assert!(Op::parse_set("=1").is_err());
        assert!(Op::parse_set("---x=1").is_err());
        assert!(Op::parse_unset("a b").is_err());
    }
}
