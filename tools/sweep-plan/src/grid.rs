//! The grid: each `--param NAME --values LIST` pair (several make a grid,
//! `--param A,B` flags that move together, each value `a:b`) expanded into
//! the configs in the order sweep(1) runs them, the first parameter
//! outermost. Each config knows its words for each tool, so the script
//! never joins or splits a config itself.

mod range;

use anyhow::anyhow;
use serde::Serialize;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Config;

/// The grid, as sweep(1) takes it.
#[derive(Debug, Clone, clap::Args)]
pub struct GridArgs {
    /// Launch flag to vary (repeatable); A,B: flags that move together
    #[arg(
        long = "param",
        value_name = "NAME",
        required = true,
        allow_hyphen_values = true
    )]
    pub params: Vec<String>,

    /// Comma-separated values of the --param at the same place (with A,B:
    /// each value A:B); START..END[:STEP] is an inclusive range
    #[arg(
        long = "values",
        value_name = "LIST",
        required = true,
        allow_hyphen_values = true
    )]
    pub values: Vec<String>,
}

impl GridArgs {
    /// The grid these words make; one that does not expand is a usage
    /// error.
    pub fn grid(&self) -> Result<Grid, Exit> {
        expand(&self.params, &self.values).map_err(|e| Exit::new(exit::USAGE, anyhow!(e)))
    }
}

/// One config of the grid.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// 1-based, in run order.
    pub index: usize,
    /// (flag as given on --param, value), in --param order.
    pub words: Vec<(String, String)>,
}

impl Point {
    /// `KEY=VALUE` pairs as records carry them (no leading dashes).
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.words
            .iter()
            .map(|(f, v)| (key_of(f).to_string(), v.clone()))
            .collect()
    }

    /// The config as records have it.
    pub fn config(&self) -> Config {
        self.pairs().into_iter().collect()
    }

    /// `a=1 b=2`, for messages.
    pub fn label(&self) -> String {
        let words: Vec<String> = self
            .pairs()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        words.join(" ")
    }

    /// True when `config` (a record's) holds this point's value for every
    /// swept key.
    pub fn matches(&self, config: &Config) -> bool {
        self.pairs()
            .iter()
            .all(|(k, v)| config.get(k).is_some_and(|x| x == v))
    }

    /// The arguments one tool takes for this config, one word each.
    pub fn args(&self, tool: Tool) -> Vec<String> {
        let mut out = Vec::new();
        for ((flag, v), (key, _)) in self.words.iter().zip(self.pairs()) {
            match tool {
                Tool::Swap => out.extend(["--set".to_string(), format!("{flag}={v}")]),
                Tool::Expect => out.extend(["--expect-config".to_string(), format!("{key}={v}")]),
                // A stage whose upstream dies without a record records
                // this config's failure (not `config: {}`).
                Tool::Stage => out.extend(["--pipeline-config".to_string(), format!("{key}={v}")]),
            }
        }
        out
    }

    /// This config's own words for each stage of its pipe (beside the
    /// sweep's shared ones); `expect`: wait-ready checks the live server
    /// runs it. Serves the loop's step, the dry run and the batch script.
    pub fn stage_words(&self, expect: bool) -> PointWords {
        let load = self.args(Tool::Stage);
        let mut ready = match expect {
            true => self.args(Tool::Expect),
            false => Vec::new(),
        };
        ready.extend(load.iter().cloned());
        PointWords {
            swap: self.args(Tool::Swap),
            ready,
            load,
        }
    }
}

/// One config's words for svc-swap, wait-ready and loadgen
/// ([`Point::stage_words`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PointWords {
    pub swap: Vec<String>,
    pub ready: Vec<String>,
    pub load: Vec<String>,
}

/// Which tool's words [`Point::args`] gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Tool {
    /// svc-swap: `--set FLAG=VALUE` per swept flag.
    Swap,
    /// wait-ready: `--expect-config KEY=VALUE` per swept flag.
    Expect,
    /// wait-ready and loadgen: `--pipeline-config KEY=VALUE`.
    Stage,
}

/// A flag name without its leading dashes (the key records use).
pub fn key_of(flag: &str) -> &str {
    flag.trim_start_matches('-')
}

/// The grid's swept keys, in --param order (coupled flags one each).
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    pub points: Vec<Point>,
    pub keys: Vec<String>,
}

impl Grid {
    /// Config `index` (1-based, as `configs` numbers them), or the usage
    /// error that names the grid's range.
    pub fn point(&self, index: usize) -> Result<&Point, Exit> {
        self.points.get(index.wrapping_sub(1)).ok_or_else(|| {
            Exit::new(
                exit::USAGE,
                anyhow!(
                    "--index {index}: the grid has configs 1 to {}",
                    self.points.len()
                ),
            )
        })
    }
}

/// What is wrong with a grid's words (a usage error; each names the bad
/// word).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum GridError {
    #[error("{params} --param but {values} --values: give --values LIST after each --param NAME")]
    Count { params: usize, values: usize },
    #[error("--param {param}: {key} is swept twice")]
    Twice { param: String, key: String },
    #[error("--param '{param}': '{name}' is not a flag name")]
    NotAFlag { param: String, name: String },
    #[error("--values '{list}': expected V1,V2,... with no empty value")]
    EmptyValue { list: String },
    #[error("--param {param} --values ...{value}...: expected {n} values joined by ':'")]
    Coupled {
        param: String,
        value: String,
        n: usize,
    },
    #[error("--param {param} --values ...{value}...: a range is for one flag; give flags that move together each value as A:B")]
    CoupledRange { param: String, value: String },
    #[error(transparent)]
    Range(#[from] range::RangeError),
}

/// Expand `--param`/`--values` pairs.
pub fn expand(params: &[String], values: &[String]) -> Result<Grid, GridError> {
    if params.len() != values.len() {
        return Err(GridError::Count {
            params: params.len(),
            values: values.len(),
        });
    }
    let mut keys = Vec::new();
    let mut rows: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (p, vs) in params.iter().zip(values) {
        let names = flag_names(p)?;
        for n in &names {
            let k = key_of(n).to_string();
            if keys.contains(&k) {
                return Err(GridError::Twice {
                    param: p.clone(),
                    key: k,
                });
            }
            keys.push(k);
        }
        let assigns = values_of(p, &names, vs)?;
        rows = rows
            .iter()
            .flat_map(|r| {
                assigns.iter().map(move |a| {
                    let mut r = r.clone();
                    r.extend(a.iter().cloned());
                    r
                })
            })
            .collect();
    }
    let points = rows
        .into_iter()
        .enumerate()
        .map(|(i, words)| Point {
            index: i + 1,
            words,
        })
        .collect();
    Ok(Grid { points, keys })
}

/// The flag names of one `--param` (A or A,B).
fn flag_names(p: &str) -> Result<Vec<String>, GridError> {
    let names: Vec<String> = p.split(',').map(str::to_string).collect();
    for n in &names {
        let rest = n.strip_prefix("--").or(n.strip_prefix('-')).unwrap_or(n);
        let ok = rest
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && rest
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c));
        if !ok {
            return Err(GridError::NotAFlag {
                param: p.into(),
                name: n.clone(),
            });
        }
    }
    Ok(names)
}

/// The (flag, value) words of each value of `--param NAMES --values
/// LIST`, a range (`1..10`, `2..16:2`) expanded into its values.
fn values_of(
    p: &str,
    names: &[String],
    list: &str,
) -> Result<Vec<Vec<(String, String)>>, GridError> {
    let mut out = Vec::new();
    for v in list.split(',') {
        let item = v.trim();
        if !range::is_range(item) {
            out.push(assign(p, names, list, v)?);
            continue;
        }
        if names.len() > 1 {
            return Err(GridError::CoupledRange {
                param: p.into(),
                value: item.into(),
            });
        }
        for x in range::expand(item)? {
            out.push(vec![(names[0].clone(), x)]);
        }
    }
    Ok(out)
}

/// The (flag, value) words of one value of `--param NAMES`.
fn assign(
    p: &str,
    names: &[String],
    list: &str,
    v: &str,
) -> Result<Vec<(String, String)>, GridError> {
    // `--values "1, 2"`: the space is the list's, not the value's (the
    // server would get " 2" and crash).
    let v = v.trim();
    if v.is_empty() || v.contains('\n') {
        return Err(GridError::EmptyValue { list: list.into() });
    }
    // One flag: a colon in its value is just a colon.
    if names.len() == 1 {
        return Ok(vec![(names[0].clone(), v.to_string())]);
    }
    let parts: Vec<&str> = v.split(':').map(str::trim).collect();
    if parts.len() != names.len() || parts.iter().any(|s| s.is_empty()) {
        return Err(GridError::Coupled {
            param: p.into(),
            value: v.into(),
            n: names.len(),
        });
    }
    Ok(names
        .iter()
        .cloned()
        .zip(parts.iter().map(|s| s.to_string()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn the_first_parameter_is_outermost_and_coupled_flags_move_together() {
        let g = expand(&s(&["--a", "b,c"]), &s(&["1,2", "x:y,z:w"])).unwrap();
        assert_eq!(g.keys, s(&["a", "b", "c"]));
        let labels: Vec<String> = g.points.iter().map(Point::label).collect();
        assert_eq!(
            labels,
            ["a=1 b=x c=y", "a=1 b=z c=w", "a=2 b=x c=y", "a=2 b=z c=w"]
        );
        assert_eq!(g.points[3].index, 4);
        assert_eq!(
            g.points[0].args(Tool::Swap),
            s(&["--set", "--a=1", "--set", "b=x", "--set", "c=y"])
        );
        assert_eq!(
            g.points[0].args(Tool::Stage)[..2],
            s(&["--pipeline-config", "a=1"])
        );
        let one = expand(&s(&["k"]), &s(&["a:b"])).unwrap();
        assert_eq!(one.points[0].label(), "k=a:b");
        let spaced = expand(&s(&["k", "a,b"]), &s(&["1, 2 ", "x : y, z:w"])).unwrap();
        let labels: Vec<String> = spaced.points.iter().map(Point::label).collect();
        assert_eq!(labels[..3], ["k=1 a=x b=y", "k=1 a=z b=w", "k=2 a=x b=y"]);
    }

    #[test]
    fn ranges_expand_in_place_among_listed_values() {
        let g = expand(&s(&["k"]), &s(&["1..3, 8 ,10..14:2"])).unwrap();
        let labels: Vec<String> = g.points.iter().map(Point::label).collect();
        assert_eq!(labels, ["k=1", "k=2", "k=3", "k=8", "k=10", "k=12", "k=14"]);
        // A path is no range.
        let one = expand(&s(&["m"]), &s(&["../model"])).unwrap();
        assert_eq!(one.points[0].label(), "m=../model");
        let e = |p: &[&str], v: &[&str]| expand(&s(p), &s(v)).unwrap_err().to_string();
        assert!(e(&["a,b"], &["1..3"]).contains("a range is for one flag"));
        assert!(e(&["a"], &["5..1"]).contains("START <= END"));
    }

    #[test]
    fn bad_grids_name_the_word() {
        let e = |p: &[&str], v: &[&str]| expand(&s(p), &s(v)).unwrap_err().to_string();
        assert!(e(&["a,b"], &["1"]).contains("2 values joined by ':'"));
        assert!(e(&["a,"], &["1:2"]).contains("not a flag name"));
        assert!(e(&["a b"], &["1"]).contains("not a flag name"));
        assert!(e(&["a"], &["1,,2"]).contains("no empty value"));
        assert!(e(&["a"], &[]).contains("after each --param"));
        assert!(e(&["a", "--a"], &["1", "2"]).contains("swept twice"));
    }
}
