//! The two runs of `summarize --compare`: reading each side (two files, or
//! one file split by a field such as `label`), refusing input that cannot
//! be compared (one line naming the file and what to do), and matching
//! config x level cells between the sides. Config keys that are constant
//! within each side but differ between them are the change under test:
//! they are left out of the match and named in the header.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Config;

use crate::input::level::Level;
use crate::input::{self, Body, Obs};

/// One side: its name (a file, or `FILE (label=v1)`) and its records.
#[derive(Debug, Default)]
pub struct Side {
    pub name: String,
    pub obs: Vec<Obs>,
}

impl Side {
    /// The bench records' JSON.
    pub fn benches(&self) -> impl Iterator<Item = &Value> {
        self.obs.iter().filter_map(|o| match &o.body {
            Body::Bench(v) => Some(v),
            Body::Failure(_) => None,
        })
    }
}

/// One config x level measured on both sides.
#[derive(Debug)]
pub struct Cell {
    /// The matching config (the change's keys left out).
    pub config: Config,
    pub label: String,
    pub level: Level,
    /// Indexes into each side's `obs`: bench records first, then failures.
    pub before: Vec<usize>,
    pub after: Vec<usize>,
}

/// The sides matched.
#[derive(Debug)]
pub struct Matched {
    pub cells: Vec<Cell>,
    /// Config keys with one value per side that differ: (key, before,
    /// after).
    pub changed: Vec<(String, String, String)>,
    /// Cells measured on one side only.
    pub only_before: usize,
    pub only_after: usize,
}

fn refuse(code: u8, msg: String) -> Exit {
    Exit::new(code, anyhow!(msg))
}

/// Read one side from a file's text.
pub fn side(name: &str, text: &str) -> Result<Side, Exit> {
    let mut inp = input::Input::default();
    input::read_source(name, text, &mut inp).map_err(|e| Exit::new(exit::BAD_INPUT, anyhow!(e)))?;
    Ok(Side {
        name: name.to_string(),
        obs: inp.obs,
    })
}

/// The text of `path` (a dotted path) in a record, numbers and booleans
/// written out.
pub fn field_text(rec: &Value, path: &str) -> Option<String> {
    let mut v = rec;
    for seg in path.split('.') {
        v = v.get(seg)?;
    }
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Split one file's side by `field`: exactly two values, the one seen
/// first is before.
pub fn split(whole: Side, field: &str) -> Result<(Side, Side), Exit> {
    let mut order: Vec<String> = Vec::new();
    let mut parts: BTreeMap<String, Vec<Obs>> = BTreeMap::new();
    let mut unnamed = 0;
    for o in whole.obs {
        let rec = match &o.body {
            Body::Bench(v) => v,
            // A failure record has no load: it goes with no side.
            Body::Failure(_) => continue,
        };
        let Some(v) = field_text(rec, field) else {
            unnamed += 1;
            continue;
        };
        if !order.contains(&v) {
            order.push(v.clone());
        }
        parts.entry(v).or_default().push(o);
    }
    if order.len() != 2 {
        let seen = if order.is_empty() {
            "none".to_string()
        } else {
            order.join(", ")
        };
        return Err(refuse(
            exit::COMPARE_REFUSED,
            format!(
                "{}: --compare-by {field} needs exactly two values in the bench records, \
                 found {} ({seen}{}): label each run (loadgen --label) or give two files \
                 (--compare BEFORE AFTER)",
                whole.name,
                order.len(),
                if unnamed > 0 {
                    format!("; {unnamed} records without it")
                } else {
                    String::new()
                }
            ),
        ));
    }
    let mut take = |v: &String| Side {
        name: format!("{} ({field}={v})", whole.name),
        obs: parts.remove(v).unwrap_or_default(),
    };
    Ok((take(&order[0]), take(&order[1])))
}

/// Refuse a side with no bench records, or bench records of several
/// workloads.
pub fn check(side: &Side) -> Result<(), Exit> {
    if side.benches().next().is_none() {
        let what = if side.obs.is_empty() {
            "no records"
        } else {
            "only failure records"
        };
        return Err(refuse(
            exit::BAD_INPUT,
            format!(
                "{}: {what}, no bench record to compare: give the results file of a run \
                 that measured (loadgen or sweep output)",
                side.name
            ),
        ));
    }
    let kinds: BTreeSet<String> = side
        .benches()
        .filter_map(crate::input::workload::key_of)
        .collect();
    if kinds.len() > 1 {
        let list: Vec<String> = kinds.into_iter().collect();
        return Err(refuse(
            exit::MIXED_WORKLOADS,
            format!(
                "{}: bench records of {} workloads ({}): compare one workload a side \
                 (keep one workload's lines, e.g. with jq)",
                side.name,
                list.len(),
                list.join("; ")
            ),
        ));
    }
    Ok(())
}

/// Keys with one value on each side (set on every record) that differ.
fn changed_keys(before: &Side, after: &Side) -> Vec<(String, String, String)> {
    let constant = |s: &Side| -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let keys: BTreeSet<&String> = s.obs.iter().flat_map(|o| o.config.keys()).collect();
        for k in keys {
            let vals: BTreeSet<Option<&String>> = s.obs.iter().map(|o| o.config.get(k)).collect();
            if let [Some(v)] = vals.into_iter().collect::<Vec<_>>()[..] {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    };
    let (b, a) = (constant(before), constant(after));
    let mut out: Vec<(String, String, String)> = b
        .iter()
        .filter_map(|(k, v)| {
            let w = a.get(k)?;
            (w != v).then(|| (k.clone(), v.clone(), w.clone()))
        })
        .collect();
    // A key set on one side only, constant there, is a change too.
    for (k, v) in &b {
        if !a.contains_key(k) && !after.obs.iter().any(|o| o.config.contains_key(k)) {
            out.push((k.clone(), v.clone(), "unset".into()));
        }
    }
    for (k, w) in &a {
        if !b.contains_key(k) && !before.obs.iter().any(|o| o.config.contains_key(k)) {
            out.push((k.clone(), "unset".into(), w.clone()));
        }
    }
    out.sort();
    out
}

type Key = (Vec<(String, String)>, String);

/// Each side's records by (matching config, level).
fn cells_of(side: &Side, skip: &BTreeSet<&str>) -> BTreeMap<Key, (Level, Vec<usize>)> {
    let mut out: BTreeMap<Key, (Level, Vec<usize>)> = BTreeMap::new();
    for (i, o) in side.obs.iter().enumerate() {
        let Some(level) = o.level else { continue };
        let cfg: Vec<(String, String)> = o
            .config
            .iter()
            .filter(|(k, _)| !skip.contains(k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.entry((cfg, level.label()))
            .or_insert((level, Vec::new()))
            .1
            .push(i);
    }
    out
}

/// Match the sides' cells; none in common is refused (exit 58).
pub fn matched(before: &Side, after: &Side) -> Result<Matched, Exit> {
    let changed = changed_keys(before, after);
    let skip: BTreeSet<&str> = changed.iter().map(|(k, _, _)| k.as_str()).collect();
    let b = cells_of(before, &skip);
    let mut a = cells_of(after, &skip);
    let has_bench =
        |s: &Side, ix: &[usize]| ix.iter().any(|&i| matches!(s.obs[i].body, Body::Bench(_)));
    let varying: BTreeSet<String> = {
        let all: Vec<&Key> = b.keys().chain(a.keys()).collect();
        let keys: BTreeSet<&String> = all
            .iter()
            .flat_map(|(c, _)| c.iter().map(|(k, _)| k))
            .collect();
        keys.into_iter()
            .filter(|k| {
                let vals: BTreeSet<Option<&String>> = all
                    .iter()
                    .map(|(c, _)| c.iter().find(|(x, _)| x == *k).map(|(_, v)| v))
                    .collect();
                vals.len() > 1
            })
            .cloned()
            .collect()
    };
    let mut cells = Vec::new();
    let mut only_before = 0;
    for (key, (level, ix)) in b {
        let Some((_, jx)) = a.remove(&key) else {
            only_before += 1;
            continue;
        };
        if !has_bench(before, &ix) && !has_bench(after, &jx) {
            continue;
        }
        let label: Vec<String> = key
            .0
            .iter()
            .filter(|(k, _)| varying.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        cells.push(Cell {
            config: key.0.iter().cloned().collect(),
            label: if label.is_empty() {
                "(one config)".into()
            } else {
                label.join(" ")
            },
            level,
            before: ix,
            after: jx,
        });
    }
    let only_after = a.len();
    if cells.is_empty() {
        return Err(refuse(
            exit::COMPARE_REFUSED,
            format!(
                "{} and {} share no config at any level ({} cells before, {} after): \
                 compare runs of the same grid and levels",
                before.name, after.name, only_before, only_after
            ),
        ));
    }
    cells.sort_by(|x, y| {
        let kx: Vec<Option<String>> = x.config.values().cloned().map(Some).collect();
        let ky: Vec<Option<String>> = y.config.values().cloned().map(Some).collect();
        crate::analysis::group::cmp_keys(&kx, &ky).then(x.level.cmp(&y.level))
    });
    Ok(Matched {
        cells,
        changed,
        only_before,
        only_after,
    })
}
