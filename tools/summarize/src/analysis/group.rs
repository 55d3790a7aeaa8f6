//! Grouping observations into the table: configs (the parameters that
//! changed across records; keys equal everywhere are context, shown once)
//! as rows in ascending parameter order, load levels as columns, repeats of
//! the same config and level collected in one cell.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use sweepkit::records::Config;

use crate::input::level::Level;
use crate::input::{Body, FailureInfo, Obs};
use crate::metric::{lookup, Metric};

/// One config: a row of the table.
#[derive(Debug, Clone)]
pub struct Row {
    /// Value of each varying key (`None`: the key was not set).
    pub key: Vec<Option<String>>,
    /// The full config (context + this row's varying values).
    pub config: Config,
    pub label: String,
}

/// One (config, level) cell: the metric of every repeat, and failures.
#[derive(Debug, Clone, Default)]
pub struct Cell {
    pub values: Vec<f64>,
    /// Indexes into the observations the values came from.
    pub runs: Vec<usize>,
    pub failures: Vec<FailureInfo>,
    /// A value came from a partial record (a level cut short with no
    /// complete record for it).
    pub partial: bool,
    /// Figures at the metric's path that are not this level's own (see
    /// [`Aside`]): never in `values`, shown apart.
    pub asides: Vec<Aside>,
}

/// A speculative-decoding figure whose record says it is not the level's
/// own: `spec.source` `lifetime_average` (SGLang's `/server_info`
/// `avg_spec_accept_length`, since server start, warm-up included; older
/// records say `server_info`) or `gauge` (SGLang's `/metrics` gauge, a
/// recent window). Presenting it as a per-level figure would mislead.
#[derive(Debug, Clone, PartialEq)]
pub struct Aside {
    pub value: f64,
    pub source: String,
}

/// The `spec.source` of a record whose figure at `path` is not per-level.
fn aside_source(rec: &serde_json::Value, path: &str) -> Option<String> {
    if !path.starts_with("spec.") {
        return None;
    }
    let src = crate::input::record_view::Head::of(rec).spec.0?.source.0?;
    (!src.is_per_level()).then(|| src.to_string())
}

/// The grouped results.
#[derive(Debug, Clone)]
pub struct Model {
    pub context: Config,
    pub varying: Vec<String>,
    /// Indexes of the varying keys that name a row; the others follow
    /// from them (`speculative-algorithm` is set exactly when steps > 0).
    pub label_keys: Vec<usize>,
    pub rows: Vec<Row>,
    pub levels: Vec<Level>,
    /// `cells[row][level]`.
    pub cells: Vec<Vec<Cell>>,
    /// Failures with no level: they stopped the whole config.
    pub row_failures: Vec<Vec<FailureInfo>>,
    pub bench_records: usize,
    pub failure_records: usize,
    pub simulated_records: usize,
}

impl Model {
    /// Label of the value of `row` for display (`unset` when absent).
    pub fn value_text(v: &Option<String>) -> &str {
        v.as_deref().unwrap_or("unset")
    }

    /// Every failure of a cell, its own and its row's.
    pub fn failures_at(&self, row: usize, col: usize) -> Vec<&FailureInfo> {
        self.cells[row][col]
            .failures
            .iter()
            .chain(self.row_failures[row].iter())
            .collect()
    }
}

/// Group `obs` by config and level; bench records lacking `metric` add a note.
pub fn build(obs: &[Obs], metric: &Metric, notes: &mut Vec<String>) -> Model {
    let all_keys: BTreeSet<&String> = obs.iter().flat_map(|o| o.config.keys()).collect();
    let mut context = Config::new();
    let mut varying = Vec::new();
    for key in all_keys {
        let first = obs[0].config.get(key);
        if first.is_some() && obs.iter().all(|o| o.config.get(key) == first) {
            context.insert(key.clone(), first.cloned().unwrap_or_default());
        } else {
            varying.push(key.clone());
        }
    }
    let key_of = |o: &Obs| -> Vec<Option<String>> {
        varying.iter().map(|k| o.config.get(k).cloned()).collect()
    };
    let mut keys: Vec<Vec<Option<String>>> = obs.iter().map(key_of).collect();
    keys.sort_by(|a, b| cmp_keys(a, b));
    keys.dedup();
    let levels: Vec<Level> = obs
        .iter()
        .filter_map(|o| o.level)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let label_keys = label_keys(&varying, &keys);
    let rows: Vec<Row> = keys
        .into_iter()
        .map(|key| {
            let mut config = context.clone();
            for (k, v) in varying.iter().zip(&key) {
                if let Some(v) = v {
                    config.insert(k.clone(), v.clone());
                }
            }
            let label = label(&varying, &label_keys, &key);
            Row { key, config, label }
        })
        .collect();
    let index: BTreeMap<Vec<Option<String>>, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.key.clone(), i))
        .collect();
    let mut cells = vec![vec![Cell::default(); levels.len()]; rows.len()];
    let mut row_failures = vec![Vec::new(); rows.len()];
    let (mut bench_records, mut failure_records, mut simulated_records) = (0, 0, 0);
    for (i, o) in obs.iter().enumerate() {
        let r = index[&key_of(o)];
        let col = o.level.and_then(|l| levels.iter().position(|x| *x == l));
        simulated_records += usize::from(o.simulated);
        match (&o.body, col) {
            (Body::Bench(rec), Some(c)) => {
                bench_records += 1;
                if let (Some(source), Some(value)) =
                    (aside_source(rec, &metric.path), lookup(rec, &metric.path))
                {
                    cells[r][c].asides.push(Aside { value, source });
                    continue;
                }
                match lookup(rec, &metric.path) {
                    Some(v) => {
                        cells[r][c].values.push(v);
                        cells[r][c].runs.push(i);
                        cells[r][c].partial |= o.partial;
                    }
                    None => notes.push(format!(
                        "{}: bench record has no number at {}; ignored",
                        o.at(),
                        metric.path
                    )),
                }
            }
            (Body::Failure(f), Some(c)) => {
                failure_records += 1;
                cells[r][c].failures.push(f.clone());
            }
            (Body::Failure(f), None) => {
                failure_records += 1;
                row_failures[r].push(f.clone());
            }
            (Body::Bench(_), None) => {}
        }
    }
    Model {
        context,
        varying,
        label_keys,
        rows,
        levels,
        cells,
        row_failures,
        bench_records,
        failure_records,
        simulated_records,
    }
}

fn label(varying: &[String], label_keys: &[usize], key: &[Option<String>]) -> String {
    if varying.is_empty() {
        return "(one config)".into();
    }
    label_keys
        .iter()
        .map(|&i| format!("{}={}", varying[i], Model::value_text(&key[i])))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fewest varying keys that still tell every row apart, dropping text
/// keys before numeric ones and later keys before earlier ones, so labels
/// read `speculative-num-steps=4`, not `speculative-algorithm=EAGLE3
/// speculative-num-steps=4`.
fn label_keys(varying: &[String], rows: &[Vec<Option<String>>]) -> Vec<usize> {
    let numeric = |i: usize| {
        rows.iter().all(|r| {
            r[i].as_deref()
                .is_none_or(|v| v.trim().parse::<f64>().is_ok())
        })
    };
    let mut order: Vec<usize> = (0..varying.len()).filter(|&i| !numeric(i)).collect();
    order.extend((0..varying.len()).rev().filter(|&i| numeric(i)));
    let mut keep: Vec<usize> = (0..varying.len()).collect();
    for i in order {
        let rest: Vec<usize> = keep.iter().copied().filter(|&k| k != i).collect();
        if rest.is_empty() {
            continue;
        }
        let mut seen = BTreeSet::new();
        if rows
            .iter()
            .all(|r| seen.insert(rest.iter().map(|&k| r[k].clone()).collect::<Vec<_>>()))
        {
            keep = rest;
        }
    }
    keep
}

/// Order configs: per varying key, unset first, then numbers by value, then
/// text.
pub fn cmp_keys(a: &[Option<String>], b: &[Option<String>]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x, y) {
            (None, None) => Ordering::Equal,
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (Some(x), Some(y)) => cmp_values(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn cmp_values(x: &str, y: &str) -> Ordering {
    match (x.parse::<f64>(), y.parse::<f64>()) {
        (Ok(a), Ok(b)) => a.total_cmp(&b).then_with(|| x.cmp(y)),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        _ => x.cmp(y),
    }
}

/// True for keys that switch or size speculative decoding.
pub fn is_spec_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.contains("specul") || k.contains("draft")
}

/// True when a value of a speculative key means "off".
pub fn is_off(v: &Option<String>) -> bool {
    match v {
        None => true,
        Some(s) => matches!(
            s.trim().to_ascii_lowercase().as_str(),
            "" | "0" | "off" | "none" | "false" | "disabled"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_order_not_text_order() {
        let mut v: Vec<Vec<Option<String>>> = ["10", "2", "1", "abc"]
            .iter()
            .map(|s| vec![Some(s.to_string())])
            .collect();
        v.push(vec![None]);
        v.sort_by(|a, b| cmp_keys(a, b));
        let got: Vec<&str> = v.iter().map(|k| Model::value_text(&k[0])).collect();
        assert_eq!(got, ["unset", "1", "2", "10", "abc"]);
    }

    #[test]
    fn labels_drop_keys_that_follow_others() {
        let s = |v: &str| Some(v.to_string());
        let varying = vec![
            "speculative-algorithm".to_string(),
            "speculative-num-steps".to_string(),
        ];
        let rows = vec![
            vec![None, s("0")],
            vec![s("EAGLE3"), s("1")],
            vec![s("EAGLE3"), s("2")],
        ];
        assert_eq!(label_keys(&varying, &rows), vec![1]);
        // Two independent keys: both needed.
        let grid = vec![
            vec![s("a"), s("1")],
            vec![s("b"), s("1")],
            vec![s("a"), s("2")],
        ];
        assert_eq!(label_keys(&varying, &grid), vec![0, 1]);
    }

    #[test]
    fn spec_off_detection() {
        assert!(is_spec_key("speculative-num-steps"));
        assert!(is_spec_key("draft-max"));
        assert!(!is_spec_key("tp-size"));
        assert!(is_off(&Some("0".into())));
        assert!(is_off(&None));
        assert!(!is_off(&Some("4".into())));
    }
}
