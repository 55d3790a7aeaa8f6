//! `summarize --schedule vllm|sglang`: from a sweep over one speculative
//! depth measured at two or more concurrency levels, the server's own
//! per-load schedule instead of one static pick. Pure: the analysis in,
//! a [`Schedule`] or the one-line reason it cannot be had out.
//!
//! The rule (summarize(1) SCHEDULE): levels c_1 < ... < c_n each get the
//! depth summarize picks there (`decide::pick`, with its tolerance rule:
//! within `--tolerance` of the best, the smaller depth wins); the choice of
//! c_i holds for batch sizes c_i .. c_(i+1) - 1, the first from 1, the last
//! up to the server's max batch. Speculation off, where it wins, is depth 0.
//!
//! vLLM: `num_speculative_tokens_per_batch_size` ranges `[start, end, k]`
//! (vllm/config/speculative.py `SpeculativeConfig`, validated and expanded
//! by vllm/v1/spec_decode/dynamic/utils.py
//! `validate_and_normalize_dynamic_sd_schedule` and
//! `build_dynamic_sd_schedule_lookup`: first range at 1, sorted, disjoint,
//! k >= 0, gaps and tail carry k forward, k clamped to
//! `num_speculative_tokens`). SGLang: the adaptive config, keyed by the
//! lowest batch size of each level, `candidate_steps` = the choice plus
//! every depth within noise or tolerance of the best
//! (python/sglang/srt/speculative/adaptive_spec_params.py; a batch goes to
//! the largest key not above it, adaptive_step_router.py).

pub(crate) mod command;
pub(crate) mod depth_cap;
pub(crate) mod emit;
pub(crate) mod memory;
pub(crate) mod row;

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use crate::analysis::decide::{self, CellStat};
use crate::analysis::group::is_spec_key;
use crate::analysis::Analysis;
use crate::cli::Server;
use crate::error::DepthError;
use crate::input::level::Level;

/// vLLM's `max_num_seqs` for the OpenAI server when not given
/// (vllm/engine/arg_utils.py `EngineArgs`). Only the last range's end;
/// vLLM carries the last k to its real max anyway.
pub const VLLM_DEFAULT_MAX_BATCH: u64 = 256;
/// SGLang's `max_running_requests` under speculation when not given
/// (speculative_hook.py `_handle_eagle_family`).
pub const SGLANG_DEFAULT_MAX_BATCH: u64 = 48;

/// Why no schedule: one line, printed as the error (exit 56).
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal(pub String);

fn refuse<T>(msg: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal(msg.into()))
}

/// The speculative settings of one swept config.
#[derive(Debug, Clone, PartialEq)]
pub struct Depth {
    /// Draft tokens (vLLM) or steps (SGLang); 0 = speculation off.
    pub k: u32,
    /// Everything else speculative, which must be equal across configs
    /// with speculation on: vLLM's config JSON without the depth, SGLang's
    /// flags (key without dashes -> value).
    pub settings: Map<String, Value>,
}

/// One level's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelChoice {
    pub level: String,
    pub concurrency: u64,
    /// The batch size the level ran at: min(concurrency, max batch).
    pub batch: u64,
    pub row: usize,
    pub k: u32,
    pub score: f64,
    /// Depths within tolerance or noise of the best (sorted; has `k`).
    pub close: Vec<u32>,
    /// The config it was decided against, and whether that was within noise.
    pub rival: Option<(u32, f64)>,
    pub noisy: bool,
}

/// The derived schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    pub server: Server,
    pub levels: Vec<LevelChoice>,
    /// vLLM: inclusive `[start, end, k]`, adjacent equal k merged.
    pub ranges: Vec<(u64, u64, u32)>,
    /// SGLang: lowest batch size of a level -> candidate steps.
    pub slots: BTreeMap<u64, Vec<u32>>,
    /// The largest depth any level uses.
    pub k_max: u32,
    /// The speculative settings shared by the configs with speculation on.
    pub settings: Map<String, Value>,
    pub max_batch: u64,
    pub max_batch_source: String,
    /// Config keys of the sweep the schedule replaces (a tool applying it
    /// removes those flags).
    pub replaces: Vec<String>,
    pub warnings: Vec<String>,
}

/// The server's max batch as known to the caller: a value and where it
/// came from (`--max-batch`, the records, the server's default).
#[derive(Debug, Clone, PartialEq)]
pub struct MaxBatch {
    pub value: u64,
    pub source: String,
}

/// Derive the schedule from `a` (a table of one group of records).
pub fn derive(a: &Analysis, server: Server, max_batch: &MaxBatch) -> Result<Schedule, Refusal> {
    derive_capped(a, server, max_batch, None)
}

/// [`derive`] from the depths up to `cap` only (`--max-depth`): each level
/// gets the best depth <= cap by the same pick rule. Both servers reserve
/// speculative KV for a schedule's deepest depth at every load
/// (schedule/memory.rs), so a cap is how a level whose best is shallow
/// keeps its memory.
pub fn derive_capped(
    a: &Analysis,
    server: Server,
    max_batch: &MaxBatch,
    cap: Option<u32>,
) -> Result<Schedule, Refusal> {
    let m = &a.model;
    if let Some(k) = m.varying.iter().find(|k| !is_spec_key(k)) {
        return refuse(format!(
            "{k} varies too: a schedule needs a sweep of one speculative depth \
             (filter the results to one value of {k})"
        ));
    }
    let depths = depths(a, server)?;
    let settings = shared_settings(a, &depths)?;
    if server == Server::Sglang {
        sglang_supported(&settings)?;
    }
    let allowed = |k: u32| cap.is_none_or(|c| k <= c);
    let ks: BTreeSet<u32> = depths.iter().map(|d| d.k).filter(|&k| allowed(k)).collect();
    if ks.iter().all(|&k| k == 0) {
        let what = match server {
            Server::Vllm => "--speculative-config num_speculative_tokens",
            Server::Sglang => "--speculative-num-steps",
        };
        return refuse(format!(
            "no config sets {what}: not a sweep of this server's speculative depth"
        ));
    }
    if ks.len() < 2 {
        let within = cap.map_or(String::new(), |c| format!(" up to --max-depth {c}"));
        return refuse(format!(
            "only one depth ({}) was measured{within}: nothing to choose between per level",
            ks.iter().next().copied().unwrap_or(0)
        ));
    }
    let mut warnings = Vec::new();
    let levels = choose_levels(a, &depths, cap, max_batch.value, &mut warnings)?;
    if levels.iter().all(|l| l.noisy) {
        return refuse(
            "every level's pick is within noise (repeats spread wider than the \
             gap to the runner-up): run more repeats",
        );
    }
    for l in levels.iter().filter(|l| l.noisy) {
        warnings.push(format!(
            "{}: the pick (depth {}) is within noise of depth {}; run more repeats",
            l.level,
            l.k,
            l.rival.map_or(0, |r| r.0)
        ));
    }
    let k_max = levels.iter().map(|l| l.k).max().unwrap_or(0);
    let union: BTreeSet<u32> = levels.iter().flat_map(|l| l.close.clone()).collect();
    let spec_somewhere = match server {
        Server::Vllm => k_max > 0,
        Server::Sglang => union.iter().any(|&k| k > 0),
    };
    if !spec_somewhere {
        return refuse(
            "speculation off wins at every level: no schedule (serve without \
             speculative decoding)",
        );
    }
    Ok(Schedule {
        server,
        ranges: ranges(&levels, max_batch.value),
        slots: slots(&levels),
        k_max,
        settings,
        max_batch: max_batch.value,
        max_batch_source: max_batch.source.clone(),
        replaces: m.varying.clone(),
        levels,
        warnings,
    })
}

/// Each row's depth and other speculative settings.
pub fn depths(a: &Analysis, server: Server) -> Result<Vec<Depth>, Refusal> {
    a.model
        .rows
        .iter()
        .map(|r| depth_of(server, &r.config).map_err(|e| Refusal(format!("{}: {e}", r.label))))
        .collect()
}

/// The deepest depth schedule `s` may draft, the one both servers reserve
/// KV for at every load (schedule/memory.rs): vLLM's
/// `num_speculative_tokens`, the largest k of any range; SGLang's largest
/// candidate of any slot.
pub fn deepest(s: &Schedule) -> u32 {
    match s.server {
        Server::Vllm => s.k_max,
        Server::Sglang => s.slots.values().flatten().copied().max().unwrap_or(0),
    }
}

/// True when `s` is one static value in disguise: every level drafts the
/// same depth and (SGLang) no slot has another candidate.
pub fn is_static(s: &Schedule) -> bool {
    let k = s.k_max;
    s.levels.iter().all(|l| l.k == k)
        && (s.server == Server::Vllm || s.slots.values().all(|c| c == &[k]))
}

/// The depth and the other speculative settings of one config.
pub fn depth_of(server: Server, config: &sweepkit::records::Config) -> Result<Depth, DepthError> {
    match server {
        Server::Vllm => vllm_depth(config),
        Server::Sglang => sglang_depth(config),
    }
}

/// vLLM: `--speculative-config JSON` and/or the dotted form
/// (`speculative-config.num_speculative_tokens=3`), merged the way
/// vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args merges
/// them (each dotted value read as JSON, else as text; the merged object
/// replaces a whole JSON given before it). No speculative config: off.
fn vllm_depth(config: &sweepkit::records::Config) -> Result<Depth, DepthError> {
    let norm = |k: &str| k.replace('_', "-");
    let mut whole: Option<Map<String, Value>> = None;
    let mut dotted = Map::new();
    for (key, val) in config {
        let key = norm(key);
        if key == "speculative-config" {
            match serde_json::from_str::<Value>(val) {
                Ok(Value::Object(o)) => whole = Some(o),
                Ok(Value::Null) => {}
                _ => return Err(DepthError::NotAnObject(val.clone())),
            }
        } else if let Some(field) = key.strip_prefix("speculative-config.") {
            let v = serde_json::from_str(val).unwrap_or_else(|_| Value::String(val.clone()));
            // Field names keep their own spelling (JSON keys use underscores).
            dotted.insert(field.replace('-', "_"), v);
        }
    }
    let mut spec = if dotted.is_empty() {
        whole.unwrap_or_default()
    } else {
        dotted
    };
    if spec.is_empty() {
        return Ok(Depth {
            k: 0,
            settings: Map::new(),
        });
    }
    let k = match spec.remove("num_speculative_tokens") {
        Some(v) => v
            .as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .ok_or_else(|| DepthError::NotWhole {
                key: "num_speculative_tokens",
                value: v.to_string(),
            })?,
        None => return Err(DepthError::NoTokens),
    };
    spec.remove("num_speculative_tokens_per_batch_size");
    Ok(Depth {
        k: k.min(u32::MAX as u64) as u32,
        settings: if k == 0 { Map::new() } else { spec },
    })
}

/// SGLang: `speculative-num-steps` (unset: off); the algorithm, draft
/// model and topk are the settings. Draft tokens follow the steps under
/// adaptive (`_init_adaptive_speculative_params` sets steps + 1).
fn sglang_depth(config: &sweepkit::records::Config) -> Result<Depth, DepthError> {
    let mut k = 0;
    let mut settings = Map::new();
    for (key, val) in config {
        let key = key.replace('_', "-");
        if key == "speculative-num-steps" {
            k = val.trim().parse().map_err(|_| DepthError::NotWhole {
                key: "speculative-num-steps",
                value: val.clone(),
            })?;
        } else if key != "speculative-num-draft-tokens" && is_spec_key(&key) {
            settings.insert(key, Value::String(val.clone()));
        }
    }
    Ok(Depth {
        k,
        settings: if k == 0 { Map::new() } else { settings },
    })
}

/// The settings every config with speculation on shares (and, for SGLang,
/// what adaptive mode needs of them).
fn shared_settings(a: &Analysis, depths: &[Depth]) -> Result<Map<String, Value>, Refusal> {
    let mut shared: Option<(usize, &Map<String, Value>)> = None;
    for (r, d) in depths.iter().enumerate().filter(|(_, d)| d.k > 0) {
        match shared {
            None => shared = Some((r, &d.settings)),
            Some((r0, s)) if s != &d.settings => {
                return refuse(format!(
                    "{} and {} differ in more than the depth ({} vs {}): a \
                     schedule needs one speculative method and draft",
                    a.model.rows[r0].label,
                    a.model.rows[r].label,
                    Value::Object(s.clone()),
                    Value::Object(d.settings.clone())
                ))
            }
            Some(_) => {}
        }
    }
    Ok(shared.map(|(_, s)| s.clone()).unwrap_or_default())
}

/// What SGLang's `adaptive_unsupported_reason` would turn off with a
/// warning (adaptive_spec_params.py): an algorithm other than EAGLE/EAGLE3
/// (NEXTN is EAGLE after `_handle_eagle_family`), or topk other than 1.
fn sglang_supported(settings: &Map<String, Value>) -> Result<(), Refusal> {
    let get = |k: &str| settings.get(k).and_then(Value::as_str).map(str::trim);
    if let Some(alg) = get("speculative-algorithm") {
        if !["EAGLE", "EAGLE3", "NEXTN"].contains(&alg) {
            return refuse(format!(
                "speculative-algorithm={alg}: SGLang's adaptive speculation runs \
                 EAGLE and EAGLE3 only (it would fall back to static steps)"
            ));
        }
    }
    if let Some(topk) = get("speculative-eagle-topk").filter(|t| *t != "1") {
        return refuse(format!(
            "speculative-eagle-topk={topk}: SGLang's adaptive speculation runs \
             topk 1 only; the sweep measured another draft tree"
        ));
    }
    Ok(())
}

/// Each closed-loop level's choice, in ascending concurrency; levels above
/// the max batch ran at the max batch (the first of them is kept).
fn choose_levels(
    a: &Analysis,
    depths: &[Depth],
    cap: Option<u32>,
    max_batch: u64,
    warnings: &mut Vec<String>,
) -> Result<Vec<LevelChoice>, Refusal> {
    let m = &a.model;
    if let Some(l) = m.levels.iter().find(|l| l.is_open()) {
        return refuse(format!(
            "{}: an open-loop level has no batch size; a schedule needs \
             closed-loop levels (loadgen --concurrency)",
            l.label()
        ));
    }
    if m.levels.len() < 2 {
        return refuse(format!(
            "only one level ({}) was measured: a schedule needs two or more \
             concurrency levels",
            m.levels.first().map_or("none".into(), |l| l.label())
        ));
    }
    let mut out: Vec<LevelChoice> = Vec::new();
    for (c, level) in m.levels.iter().enumerate() {
        let Level::Concurrency(n) = *level else {
            unreachable!("open levels refused above")
        };
        let choice = choose_at(a, depths, cap, c)?;
        let batch = n.clamp(1, max_batch.max(1));
        if out.last().is_some_and(|l| l.batch == batch) {
            warnings.push(format!(
                "{}: above the max batch {max_batch}, it ran the same batches as \
                 {}; left out of the schedule",
                level.label(),
                out.last().map_or(String::new(), |l| l.level.clone())
            ));
            continue;
        }
        out.push(LevelChoice {
            level: level.label(),
            concurrency: n,
            batch,
            ..choice
        });
    }
    Ok(out)
}

/// The pick at level column `c`, by `decide::pick` with the depth as the
/// order (so a tie goes to the smaller depth), among depths up to `cap`.
fn choose_at(
    a: &Analysis,
    depths: &[Depth],
    cap: Option<u32>,
    c: usize,
) -> Result<LevelChoice, Refusal> {
    let m = &a.model;
    let better = a.opts.metric.better;
    let slo = !a.opts.slo.is_empty();
    let rows: Vec<usize> = (0..m.rows.len())
        .filter(|&r| cap.is_none_or(|cap| depths[r].k <= cap))
        .filter(|&r| matches!(&a.grid[r][c], Some(s) if !slo || s.slo_ok))
        .collect();
    let label = m.levels[c].label();
    if rows.is_empty() {
        let failed: Vec<String> = (0..m.rows.len())
            .flat_map(|r| m.failures_at(r, c))
            .map(crate::wording::failure_label)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        return refuse(if failed.is_empty() {
            format!(
                "{label}: no config {}",
                if slo { "meets the SLO" } else { "was measured" }
            )
        } else {
            format!(
                "{label}: every config failed there ({}): a schedule needs a \
                 measured choice at every level",
                failed.join(", ")
            )
        });
    }
    let stat = |r: usize| a.grid[r][c].as_ref().expect("filtered to measured");
    let cands: Vec<(usize, f64)> = rows
        .iter()
        .map(|&r| (depths[r].k as usize, stat(r).score))
        .collect();
    let p = decide::pick(&cands, better, a.opts.tolerance).expect("candidates exist");
    let win = rows[p.winner];
    let rival = p.rival.map(|i| rows[i]);
    let top = rows
        .iter()
        .copied()
        .reduce(|x, y| {
            if better.beats(stat(y).score, stat(x).score) {
                y
            } else {
                x
            }
        })
        .expect("candidates exist");
    let close_to = |s: &CellStat, best: &CellStat| {
        better.within(s.score, best.score, a.opts.tolerance) || decide::too_noisy(s, best)
    };
    let close: BTreeSet<u32> = rows
        .iter()
        .filter(|&&r| r == win || close_to(stat(r), stat(top)))
        .map(|&r| depths[r].k)
        .collect();
    Ok(LevelChoice {
        level: label,
        concurrency: 0,
        batch: 0,
        row: win,
        k: depths[win].k,
        score: stat(win).score,
        close: close.into_iter().collect(),
        rival: rival.map(|r| (depths[r].k, stat(r).score)),
        noisy: rival.is_some_and(|r| decide::too_noisy(stat(win), stat(r))),
    })
}

/// vLLM's ranges: level i holds from its batch (the first from 1) to the
/// next level's batch - 1, the last to `max_batch`; equal neighbours merge.
pub fn ranges(levels: &[LevelChoice], max_batch: u64) -> Vec<(u64, u64, u32)> {
    let mut out: Vec<(u64, u64, u32)> = Vec::new();
    for (i, l) in levels.iter().enumerate() {
        let start = if i == 0 { 1 } else { l.batch };
        let end = levels
            .get(i + 1)
            .map_or(max_batch.max(start), |n| n.batch - 1);
        match out.last_mut() {
            Some(last) if last.2 == l.k => last.1 = end,
            _ => out.push((start, end, l.k)),
        }
    }
    out
}

/// SGLang's slots: each level's lowest batch (the first: 1) -> candidates.
pub fn slots(levels: &[LevelChoice]) -> BTreeMap<u64, Vec<u32>> {
    levels
        .iter()
        .enumerate()
        .map(|(i, l)| (if i == 0 { 1 } else { l.batch }, l.close.clone()))
        .collect()
}

#[cfg(test)]
#[path = "derive_tests.rs"]
mod tests;
