//! The adaptive search's space: the one swept parameter's values in
//! numeric order, and the check that a results file is this search's
//! (`sweep-plan next` refuses another sweep's with exits 50 to 52).

use std::collections::BTreeMap;

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::results::Line;

/// The swept parameter and its values, in ascending numeric order.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub key: String,
    /// As given (the text a config carries).
    pub values: Vec<String>,
}

impl Space {
    /// Order `values` numerically; a value that is not a number has no
    /// order to find a plateau along (exit 52).
    pub fn ordered(key: &str, values: &[String]) -> Result<Space, Exit> {
        let key = key.trim_start_matches('-').to_string();
        for v in values {
            if v.parse::<f64>().map_or(true, |x| !x.is_finite()) {
                return Err(Exit::new(
                    exit::NEXT_NOT_NUMERIC,
                    anyhow!(
                        "--param {key}: value '{v}' is not a number; the adaptive search needs an ordered numeric parameter (use the grid)"
                    ),
                ));
            }
        }
        let num = |v: &String| v.parse::<f64>().unwrap_or(0.0);
        let mut values = values.to_vec();
        values.sort_by(|a, b| num(a).total_cmp(&num(b)));
        values.dedup();
        Ok(Space { key, values })
    }

    pub(super) fn index(&self, v: &str) -> Option<usize> {
        let x = v.parse::<f64>().ok();
        self.values
            .iter()
            .position(|s| s == v || (x.is_some() && s.parse::<f64>().ok() == x))
    }

    pub fn label(&self, i: usize) -> String {
        format!("{}={}", self.key, self.values[i])
    }
}

/// Refuse a results file that is not this sweep's: no record at all (exit
/// 50), or a record whose config lacks the key or differs in another
/// parameter (exit 51).
pub fn check_input(space: &Space, name: &str, lines: &[Line]) -> Result<(), Exit> {
    // value -> (where first seen, the other parameters)
    let mut others: BTreeMap<String, (String, BTreeMap<String, Value>)> = BTreeMap::new();
    for l in lines {
        if !matches!(l.tag.as_str(), "bench" | "failure" | "skipped") {
            continue;
        }
        let Some(cfg) = l.raw.get("config").and_then(Value::as_object) else {
            continue;
        };
        if cfg.is_empty() {
            continue; // a failure before any config was known
        }
        let at = format!("{name}: line {}", l.line);
        let Some(v) = cfg.get(&space.key) else {
            let keys: Vec<&str> = cfg.keys().map(String::as_str).collect();
            return Err(mixed(format!(
                "{at}: a {} record for {} has no {}: records of another sweep",
                l.tag,
                keys.join(","),
                space.key
            )));
        };
        let rest: BTreeMap<String, Value> = cfg
            .iter()
            .filter(|(k, _)| **k != space.key)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // Other keys may follow from the swept one (SGLang's algorithm is
        // set exactly when steps > 0), but one value with two sets of other
        // parameters is a grid over more than one.
        let v = v.to_string();
        match others.get(&v) {
            None => {
                others.insert(v, (at, rest));
            }
            Some((first, o)) if *o != rest => {
                return Err(mixed(format!(
                    "{at}: {}={v} again with other parameters than at {first}: more than one parameter varies; the adaptive search walks one",
                    space.key
                )))
            }
            Some(_) => {}
        }
    }
    if lines.is_empty() {
        return Err(Exit::new(
            exit::NEXT_EMPTY,
            anyhow!(
                "{name}: no records (sweep writes an origin record first; give its results file)"
            ),
        ));
    }
    Ok(())
}

fn mixed(msg: String) -> Exit {
    Exit::new(exit::NEXT_MIXED, anyhow!(msg))
}
