//! `summarize --next`: the adaptive sweep's question "what next?",
//! answered from the results so far in plain `WORD<TAB>...` lines that
//! sweep(1) acts on without parsing JSON (the `--config-states` style), and
//! `--emit-skipped`: the skipped records of a finished search.

use std::collections::BTreeMap;

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::records::{Config, Record, SkippedRecord, SCHEMA_VERSION};
use sweepkit::report::Exit;

use crate::adapt::{self, Decision, Knobs, RowData};
use crate::analysis::Analysis;
use crate::sweepq;

/// `--space KEY=V1,V2,...`: the swept parameter and its values.
#[derive(Debug, Clone, PartialEq)]
pub struct Space {
    pub key: String,
    /// As given (the text a config carries), in ascending numeric order.
    pub values: Vec<String>,
}

/// Parse `--space` (a usage error, exit 2, when malformed).
pub fn parse_space(s: &str) -> Result<Space, String> {
    let (k, vs) = s.split_once('=').ok_or_else(|| {
        format!("\"{s}\": expected KEY=V1,V2,... e.g. speculative-num-steps=1,2,3")
    })?;
    let key = k.trim().trim_start_matches('-').to_string();
    let values: Vec<String> = vs.split(',').map(|v| v.trim().to_string()).collect();
    if key.is_empty() || key.contains(',') {
        return Err(format!(
            "\"{s}\": one KEY (adaptive search walks one parameter)"
        ));
    }
    if values.iter().any(String::is_empty) {
        return Err(format!("\"{s}\": an empty value"));
    }
    Ok(Space { key, values })
}

impl Space {
    /// Order the values numerically; a value that is not a number has no
    /// order to find a plateau along (exit 52).
    pub fn ordered(mut self) -> Result<Space, Exit> {
        for v in &self.values {
            if v.parse::<f64>().map_or(true, |x| !x.is_finite()) {
                return Err(Exit::new(
                    exit::NEXT_NOT_NUMERIC,
                    anyhow!(
                        "--next {}: value '{v}' is not a number; the adaptive search needs an ordered numeric parameter (use the grid)",
                        self.key
                    ),
                ));
            }
        }
        let num = |v: &String| v.parse::<f64>().unwrap_or(0.0);
        self.values.sort_by(|a, b| num(a).total_cmp(&num(b)));
        self.values.dedup();
        Ok(self)
    }

    fn index(&self, v: &str) -> Option<usize> {
        let x = v.parse::<f64>().ok();
        self.values
            .iter()
            .position(|s| s == v || (x.is_some() && s.parse::<f64>().ok() == x))
    }

    pub fn label(&self, i: usize) -> String {
        format!("{}={}", self.key, self.values[i])
    }
}

/// Refuse input that is not this sweep's: no record at all (exit 50), or
/// a record whose config lacks the key or differs in another parameter
/// (exit 51). `sources` are (name, text).
pub fn check_input(space: &Space, sources: &[(String, String)]) -> Result<(), Exit> {
    let mut any = false;
    // value -> (where first seen, the other parameters)
    let mut others: BTreeMap<String, (String, BTreeMap<String, Value>)> = BTreeMap::new();
    for (name, text) in sources {
        for (i, line) in text.lines().enumerate() {
            let Ok(rec) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            any = true;
            let kind = rec.get("type").and_then(Value::as_str).unwrap_or("");
            if !matches!(kind, "bench" | "failure" | "skipped") {
                continue;
            }
            let Some(cfg) = rec.get("config").and_then(Value::as_object) else {
                continue;
            };
            if cfg.is_empty() {
                continue; // a failure before any config was known
            }
            let at = format!("{name}: line {}", i + 1);
            if !cfg.contains_key(&space.key) {
                let keys: Vec<&str> = cfg.keys().map(String::as_str).collect();
                return Err(mixed(format!(
                    "{at}: a {kind} record for {} has no {}: records of another sweep",
                    keys.join(","),
                    space.key
                )));
            }
            let rest: BTreeMap<String, Value> = cfg
                .iter()
                .filter(|(k, _)| **k != space.key)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            // Other keys may follow from the swept one (SGLang's algorithm
            // is set exactly when steps > 0), but one value with two sets of
            // other parameters is a grid over more than one.
            let v = cfg[&space.key].to_string();
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
    }
    if !any {
        let names: Vec<&str> = sources.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Exit::new(
            exit::NEXT_EMPTY,
            anyhow!(
                "{}: no records (sweep writes an origin record first; give its results file)",
                names.join(", ")
            ),
        ));
    }
    Ok(())
}

fn mixed(msg: String) -> Exit {
    Exit::new(exit::NEXT_MIXED, anyhow!(msg))
}

/// What the file says about each value of the space.
pub fn rows(space: &Space, all: &str, a: Option<&Analysis>) -> Vec<RowData> {
    let mut rows = vec![RowData::default(); space.values.len()];
    for line in sweepq::config_states(all, std::slice::from_ref(&space.key)).lines() {
        let mut it = line.split('\t');
        let (Some(state), Some(kv)) = (it.next(), it.next()) else {
            continue;
        };
        let v = kv.split_once('=').map_or("", |(_, v)| v);
        if let Some(i) = space.index(v) {
            rows[i].done = matches!(state, "complete" | "failed");
            rows[i].failed = state == "failed";
        }
    }
    let Some(a) = a else { return rows };
    // The same weighted scores as summarize's own pick (conservative,
    // with each cell's noise moderated towards its level's: analysis.rs
    // moderate_noise), so the search's best is the pick sweep applies.
    let weighted = a.weighted.clone();
    for (r, row) in a.model.rows.iter().enumerate() {
        let Some(i) = row.config.get(&space.key).and_then(|v| space.index(v)) else {
            continue;
        };
        let d = &mut rows[i];
        d.medians = a.grid[r]
            .iter()
            .map(|c| c.as_ref().map(|c| c.median))
            .collect();
        d.failed &= d.medians.iter().all(Option::is_none);
        d.runs = a.model.cells[r]
            .iter()
            .map(|c| c.values.len())
            .max()
            .unwrap_or(0);
        d.weighted = weighted.get(r).copied().flatten();
        let mut rel: Vec<f64> = a.grid[r]
            .iter()
            .flatten()
            .filter(|c| c.n >= 2 && c.median != 0.0)
            .map(|c| ((c.median - c.score) / c.median).abs())
            .collect();
        rel.sort_by(f64::total_cmp);
        d.sigma_rel = (!rel.is_empty()).then(|| rel[rel.len() / 2]);
    }
    rows
}

/// The plain-text answer: `measure`, or `done` + `skip` + `cost` lines,
/// each followed by a `why` line.
pub fn answer(space: &Space, d: &Decision, cost: &crate::cost::Cost) -> String {
    let mut out = String::new();
    match d {
        Decision::Measure { rows, why } => {
            for &i in rows {
                out.push_str(&format!("measure\t{}\n", space.label(i)));
            }
            out.push_str(&format!("why\t{why}\n"));
        }
        Decision::Done {
            best,
            skip,
            rule,
            stop_why,
            repeat_why,
        } => {
            let best = best.map_or(String::new(), |b| space.label(b));
            out.push_str(&format!("done\t{}\t{best}\n", rule.word()));
            for &i in skip {
                out.push_str(&format!("skip\t{}\n", space.label(i)));
            }
            out.push_str(&format!("why\t{stop_why}; {repeat_why}\n"));
            out.push_str(&format!("cost\t{}\n", cost.words()));
        }
    }
    out
}

/// Skipped records for a finished search's untried values that the input
/// does not hold yet (so a resumed sweep appends none twice).
pub fn skipped_records(
    space: &Space,
    d: &Decision,
    all: &str,
    started: std::time::SystemTime,
) -> Vec<Record> {
    let Decision::Done {
        best,
        skip,
        rule,
        stop_why,
        ..
    } = d
    else {
        return Vec::new();
    };
    let have: Vec<usize> = all
        .lines()
        .filter_map(|l| match serde_json::from_str::<Record>(l) {
            Ok(Record::Skipped(s)) => s.config.get(&space.key).and_then(|v| space.index(v)),
            _ => None,
        })
        .collect();
    let mut best_config = Config::new();
    if let Some(b) = best {
        best_config.insert(space.key.clone(), space.values[*b].clone());
    }
    skip.iter()
        .filter(|i| !have.contains(i))
        .map(|&i| {
            Record::Skipped(SkippedRecord {
                schema: SCHEMA_VERSION,
                config: Config::from([(space.key.clone(), space.values[i].clone())]),
                provenance: sweepkit::Provenance::new("summarize", started),
                rule: rule.word().to_string(),
                reason: stop_why.clone(),
                best_config: best_config.clone(),
            })
        })
        .collect()
}

/// The knobs from the flags.
pub fn knobs(args: &crate::Args, better: crate::metric::Better) -> Knobs {
    Knobs {
        patience: args.patience,
        threshold: args.plateau_threshold,
        margin: args.noise_margin,
        repeat_budget: args.repeat_budget,
        tolerance: args.tolerance,
        better,
    }
}

/// Lines under summarize's text table: which values an adaptive sweep
/// skipped (and why) and which it measured more than once.
pub fn table_notes(a: &Analysis, all: &str) -> String {
    let mut out = String::new();
    for l in all.lines() {
        if let Ok(Record::Skipped(s)) = serde_json::from_str::<Record>(l) {
            let measured = a
                .model
                .rows
                .iter()
                .any(|r| s.config.iter().all(|(k, v)| r.config.get(k) == Some(v)));
            if !measured {
                let cfg: Vec<String> = s.config.iter().map(|(k, v)| format!("{k}={v}")).collect();
                out.push_str(&format!(
                    "skipped: {} ({}: {})\n",
                    cfg.join(" "),
                    s.rule,
                    s.reason
                ));
            }
        }
    }
    for (r, row) in a.model.rows.iter().enumerate() {
        let runs = a.model.cells[r]
            .iter()
            .map(|c| c.values.len())
            .max()
            .unwrap_or(0);
        if runs > 1 {
            out.push_str(&format!("repeated: {} ({runs} runs)\n", row.label));
        }
    }
    if out.is_empty() {
        return out;
    }
    format!("\n{out}")
}

/// `--next`: the decision for `sources` (already read) as plain text, or
/// skipped records with `--emit-skipped`.
pub fn run(
    args: &crate::Args,
    space: Space,
    sources: &[(String, String)],
    a: Option<&Analysis>,
    better: crate::metric::Better,
    stdout: &mut impl std::io::Write,
) -> Result<(), Exit> {
    let started = std::time::SystemTime::now();
    let all: String = sources
        .iter()
        .map(|(_, t)| t.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let rows = rows(&space, &all, a);
    let d = adapt::decide(&rows, &knobs(args, better), &|i| space.label(i));
    if args.emit_skipped {
        for rec in skipped_records(&space, &d, &all, started) {
            sweepkit::io::write_record(stdout, &rec)?;
        }
    } else {
        let best_runs = match &d {
            Decision::Done { best: Some(b), .. } => rows[*b].runs,
            _ => 1,
        };
        let cost = crate::cost::cost(&all, &space.key, space.values.len(), best_runs);
        stdout.write_all(answer(&space, &d, &cost).as_bytes())?;
    }
    stdout.flush()?;
    Ok(())
}
