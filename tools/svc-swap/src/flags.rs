//! `--set FLAG=VALUE` / `--unset FLAG` edits on a parsed ExecStart line,
//! keeping each flag in the form it was found (`--flag value` or
//! `--flag=value`), and the old -> new changes for the swap record. Pure.

use sweepkit::records::Change;

use crate::execstart::{logical, ExecLine};

/// A flag named on the command line: `speculative-num-steps`, or with its
/// dashes (`--port`, `-c`) to match only that spelling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlagName {
    pub dashes: Option<String>,
    pub name: String,
}

impl FlagName {
    pub fn parse(s: &str) -> Result<FlagName, String> {
        let name = s.trim_start_matches('-');
        let dashes = &s[..s.len() - name.len()];
        if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '=') {
            return Err(format!("'{s}' is not a flag name"));
        }
        if dashes.len() > 2 {
            return Err(format!("'{s}': too many dashes"));
        }
        Ok(FlagName {
            dashes: (!dashes.is_empty()).then(|| dashes.to_string()),
            name: name.to_string(),
        })
    }

    /// The spelling used when the flag is added: given dashes, else `--`
    /// (or `-` for one-letter names).
    pub fn spelled(&self) -> String {
        let d = self.dashes.clone().unwrap_or_else(|| {
            if self.name.chars().count() == 1 {
                "-"
            } else {
                "--"
            }
            .into()
        });
        format!("{d}{}", self.name)
    }
}

/// One edit. `value: None` is a bare switch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Set {
        flag: FlagName,
        value: Option<String>,
    },
    Unset {
        flag: FlagName,
    },
    /// Fold the flag's dotted fields (`--FLAG.FIELD V`) into the whole JSON
    /// object it has (fold.rs): a vLLM schedule's `--speculative-config`.
    Fold {
        flag: FlagName,
    },
}

impl Op {
    /// `FLAG=VALUE`; `FLAG` or `FLAG=` alone make a bare switch.
    pub fn parse_set(s: &str) -> Result<Op, String> {
        let (f, v) = match s.split_once('=') {
            Some((f, v)) => (f, (!v.is_empty()).then(|| v.to_string())),
            None => (s, None),
        };
        Ok(Op::Set {
            flag: FlagName::parse(f)?,
            value: v,
        })
    }

    pub fn parse_unset(s: &str) -> Result<Op, String> {
        Ok(Op::Unset {
            flag: FlagName::parse(s)?,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    Equals,
    Separate,
    Bare,
}

/// Where a flag sits in the words.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub(crate) at: usize,
    pub(crate) len: usize,
    pub(crate) form: Form,
    pub(crate) spelled: String,
    /// Unit-file form; `None` for a bare switch.
    pub(crate) value: Option<String>,
}

pub(crate) fn is_value_word(w: &str) -> bool {
    !w.starts_with('-') || w == "-" || w.parse::<f64>().is_ok()
}

/// Every flag-looking word from `first_arg` on, stopping at `--`.
pub(crate) fn scan(line: &ExecLine) -> Vec<Found> {
    let w = &line.words;
    let mut out = Vec::new();
    let mut i = line.first_arg();
    while i < w.len() {
        let word = &w[i];
        if word == "--" {
            break;
        }
        if !word.starts_with('-') || word == "-" || word.parse::<f64>().is_ok() {
            i += 1;
            continue;
        }
        let found = match word.split_once('=') {
            Some((f, v)) => Found {
                at: i,
                len: 1,
                form: Form::Equals,
                spelled: f.to_string(),
                value: Some(v.to_string()),
            },
            None if w.get(i + 1).is_some_and(|n| is_value_word(n)) => Found {
                at: i,
                len: 2,
                form: Form::Separate,
                spelled: word.clone(),
                value: Some(w[i + 1].clone()),
            },
            None => Found {
                at: i,
                len: 1,
                form: Form::Bare,
                spelled: word.clone(),
                value: None,
            },
        };
        i += found.len;
        out.push(found);
    }
    out
}

/// The flag-level differences between two lines (for `--restore`), in the
/// order flags appear.
pub fn diff(old: &ExecLine, new: &ExecLine) -> Vec<Change> {
    let a = scan(old);
    let b = scan(new);
    let val = |f: &Found| logical(f.value.as_deref().unwrap_or(""));
    let mut out = Vec::new();
    for f in &a {
        let other = b.iter().find(|g| g.spelled == f.spelled);
        if other.map(val) != Some(val(f)) {
            out.push(Change {
                flag: f.spelled.clone(),
                old: Some(val(f)),
                new: other.map(val),
            });
        }
    }
    for g in b
        .iter()
        .filter(|g| !a.iter().any(|f| f.spelled == g.spelled))
    {
        out.push(Change {
            flag: g.spelled.clone(),
            old: None,
            new: Some(val(g)),
        });
    }
    out
}

/// The config a line's flags describe for the flags named in `changes`.
pub fn config_of(line: &ExecLine, changes: &[Change]) -> sweepkit::records::Config {
    let found = scan(line);
    let mut cfg = sweepkit::records::Config::new();
    for c in changes {
        if let Some(f) = found.iter().find(|f| f.spelled == c.flag) {
            let v = logical(f.value.as_deref().unwrap_or(""));
            cfg.insert(c.flag.trim_start_matches('-').to_string(), v);
        }
    }
    cfg
}
