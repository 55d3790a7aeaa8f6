//! The schedule's depth cap, chosen from the sweep's own records
//! (summarize(1) SCHEDULE, `Depth cap`).
//!
//! Both servers reserve speculative KV for a schedule's deepest depth D at
//! every load, whatever depth a level drafts: SGLang 0.5.23
//! `get_alloc_len_per_decode` (srt/mem_cache/allocation_sizing.py) sizes
//! each decode step's allocation by `max_speculative_num_draft_tokens()`,
//! which under `--speculative-adaptive` is `max(candidate_steps) + 1` over
//! every slot (`resolve_max_speculative_num_draft_tokens`,
//! srt/speculative/spec_info.py); vLLM 0.32 allocates slots with
//! `num_lookahead_tokens` (`Scheduler.schedule()` -> `allocate_slots`,
//! v1/core/sched/scheduler.py), which is the static
//! `num_speculative_tokens` for EAGLE and draft models
//! (`VllmConfig.num_lookahead_tokens`, config/vllm.py), the schedule's
//! largest k. So where static D was KV-bound, the schedule admits as few
//! requests as static D did there, and a shallower choice at that level
//! wins nothing back: it runs about like static D.
//!
//! KV-bound is read from the records, not guessed from throughput. Where
//! both cells carry the server's own figures (`server_metrics`, loadgen
//! reads them from `/metrics`), they decide: static D is KV-bound at L
//! when its KV cache was full at its peak with requests waiting or
//! preempted, and the drafted depth's was not (explain/measured.rs).
//! Otherwise it is inferred from waits: a request the server cannot admit
//! waits in its queue, and that wait is part of its time to first token.
//! Static D is KV-bound at level L
//! where the schedule drafts d < D when D's requests waited for their
//! first token longer than d's by more than [`KV_WAIT_SHARE`] of D's mean
//! end-to-end latency at L, each wait counted beyond that depth's own
//! time to first token at the lowest level (an unloaded server: prefill
//! and a first step, which grow with the depth).
//!
//! The rule: when the uncapped schedule's D is KV-bound at some level,
//! every schedule capped at a measured depth below D (derived by the same
//! rules from the depths up to the cap) is a candidate too, and each is
//! scored by the pick's own objective over its predicted values: at each
//! level, static d's value there, or static D's (its own deepest) where D
//! is KV-bound. The best wins with the pick's tolerance rule (within
//! `--tolerance` of the best, the smaller cap: it reserves less). A cap
//! that leaves one static value is not a schedule and is not a candidate.
//! `--max-depth` replaces the rule.

use serde_json::Value;

use crate::analysis::decide::{self, CellStat, Grid};
use crate::analysis::Analysis;
use crate::cli::Objective;
use crate::cli::Server;
use crate::input::level::Level;
use crate::metric::Better;
use crate::schedule::{self, deepest, Depth, MaxBatch, Refusal, Schedule};

/// How much longer, as a share of its mean E2E latency, static D's
/// requests must have waited for a first token than the drafted depth's
/// for D to count as KV-bound. On llm-sim's campaign curve the waits of
/// depths with room differ by under 2% of E2E at every level, and a
/// KV-bound depth waits 15-60% longer (bench/README.md); below 5% a wait
/// costs little throughput in a closed loop (rate = concurrency / E2E).
pub const KV_WAIT_SHARE: f64 = 0.05;

/// The schedule `summarize --schedule` prints: capped at `max_depth` when
/// given, else by the rule above (its reason first among the warnings).
pub fn derive(
    a: &Analysis,
    server: Server,
    mb: &MaxBatch,
    max_depth: Option<u32>,
) -> Result<Schedule, Refusal> {
    if max_depth.is_some() {
        return schedule::derive_capped(a, server, mb, max_depth);
    }
    let free = schedule::derive(a, server, mb)?;
    let depths = schedule::depths(a, server)?;
    let waits = Waits::of(a);
    let free_pred = predict(a, &depths, &waits, &free);
    if free_pred.bound.is_empty() {
        return Ok(free);
    }
    let top = deepest(&free);
    let mut caps: Vec<u32> = depths.iter().map(|d| d.k).filter(|&k| k < top).collect();
    caps.sort_unstable();
    caps.dedup();
    let mut cands: Vec<(Schedule, Predicted)> = Vec::new();
    for cap in caps {
        let Ok(s) = schedule::derive_capped(a, server, mb, Some(cap)) else {
            continue;
        };
        if schedule::is_static(&s) || cands.iter().any(|(x, _)| deepest(x) == deepest(&s)) {
            continue;
        }
        let p = predict(a, &depths, &waits, &s);
        cands.push((s, p));
    }
    cands.push((free, free_pred));
    let preds: Vec<&Predicted> = cands.iter().map(|(_, p)| p).collect();
    let scores = scores(a, &preds);
    let win = choose(a, &preds, &scores).unwrap_or(cands.len() - 1);
    let line = note(a, &cands, &scores, win);
    let mut s = cands.swap_remove(win).0;
    s.warnings.insert(0, line);
    Ok(s)
}

/// Each cell's mean time to first token and mean E2E latency (ms), over
/// its runs: `[row][level]`.
struct Waits {
    ttft: Vec<Vec<Option<f64>>>,
    e2e: Vec<Vec<Option<f64>>>,
}

impl Waits {
    fn of(a: &Analysis) -> Waits {
        let of = |block: &str| -> Vec<Vec<Option<f64>>> {
            a.records
                .iter()
                .map(|row| row.iter().map(|recs| mean_of(recs, block)).collect())
                .collect()
        };
        Waits {
            ttft: of("ttft_ms"),
            e2e: of("e2e_ms"),
        }
    }

    /// Row `r`'s wait for a first token at level `c` beyond its own at the
    /// lowest level it has one.
    fn wait(&self, a: &Analysis, r: usize, c: usize) -> Option<f64> {
        let low = (0..a.model.levels.len())
            .filter(|&x| self.ttft[r][x].is_some())
            .min_by_key(|&x| match a.model.levels[x] {
                Level::Concurrency(n) => n,
                Level::Rate(_) => u64::MAX,
            })?;
        Some(self.ttft[r][c]? - self.ttft[r][low]?)
    }

    /// How much longer static `deep`'s requests waited at `c` than
    /// `drafted`'s, as a share of `deep`'s mean E2E latency there.
    fn extra_share(&self, a: &Analysis, deep: usize, drafted: usize, c: usize) -> Option<f64> {
        let e2e = self.e2e[deep][c].filter(|&x| x > 0.0)?;
        Some((self.wait(a, deep, c)? - self.wait(a, drafted, c)?) / e2e)
    }
}

/// Why static D was KV-bound at a level where a shallower depth was not.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// The servers' own figures (explain/): D's KV cache full with
    /// requests waiting or preempted, the drafted depth's not; the words
    /// give both cells' figures.
    Measured(String),
    /// Inferred from client-side waits: D's requests waited longer for a
    /// first token by this share of its mean E2E latency.
    Waited(f64),
}

/// Whether static `deep` (a row) was KV-bound at level `c` where static
/// `drafted` was not: the servers' own figures when both cells measured
/// their KV cache (they alone decide then), else the extra wait beyond
/// [`KV_WAIT_SHARE`] (the module doc's rule).
fn bound_at(a: &Analysis, waits: &Waits, deep: usize, drafted: usize, c: usize) -> Option<Bound> {
    match crate::explain::kv_evidence(a, deep, drafted, c) {
        Some((true, words)) => Some(Bound::Measured(words)),
        Some((false, _)) => None,
        None => waits
            .extra_share(a, deep, drafted, c)
            .filter(|&x| x > KV_WAIT_SHARE)
            .map(Bound::Waited),
    }
}

/// Whether static depth `deep` was KV-bound at level `c` where static
/// `drafted` was not (for the table's note on one level).
pub fn kv_bound(a: &Analysis, server: Server, deep: u32, drafted: u32, c: usize) -> Option<Bound> {
    let depths = schedule::depths(a, server).ok()?;
    let row = |k: u32| depths.iter().position(|d| d.k == k);
    bound_at(a, &Waits::of(a), row(deep)?, row(drafted)?, c)
}

/// The mean of `block.mean` over the records that measured it.
fn mean_of(recs: &[Value], block: &str) -> Option<f64> {
    let xs: Vec<f64> = recs
        .iter()
        .map(|r| &r[block])
        .filter(|b| b.get("count").and_then(Value::as_u64) != Some(0))
        .filter_map(|b| b.get("mean").and_then(Value::as_f64))
        .collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// A schedule's predicted cells, one per level of the analysis.
struct Predicted {
    /// The deepest depth it may draft (what both servers reserve for).
    deepest: u32,
    cells: Vec<Option<CellStat>>,
    failed: Vec<bool>,
    /// Levels where static `deepest` was KV-bound: (level column, depth
    /// drafted there, why).
    bound: Vec<(usize, u32, Bound)>,
}

/// Schedule `s`'s value at each level: static d's, or static D's where D
/// is KV-bound (module doc).
fn predict(a: &Analysis, depths: &[Depth], waits: &Waits, s: &Schedule) -> Predicted {
    let top = deepest(s);
    let row_top = depths.iter().position(|d| d.k == top);
    let mut p = Predicted {
        deepest: top,
        cells: Vec::new(),
        failed: Vec::new(),
        bound: Vec::new(),
    };
    for (c, level) in a.model.levels.iter().enumerate() {
        let Level::Concurrency(n) = *level else {
            unreachable!("a schedule has closed-loop levels only")
        };
        let batch = n.clamp(1, s.max_batch.max(1));
        let Some(l) = s.levels.iter().find(|l| l.batch == batch) else {
            p.cells.push(None);
            p.failed.push(false);
            continue;
        };
        let mut row = l.row;
        if let Some(rt) = row_top.filter(|_| l.k < top) {
            if let Some(why) = bound_at(a, waits, rt, l.row, c) {
                p.bound.push((c, l.k, why));
                row = rt;
            }
        }
        p.cells.push(a.grid[row][c].clone());
        p.failed.push(!a.model.failures_at(row, c).is_empty());
    }
    p
}

/// Each prediction's score by the pick's objective: the weighted score
/// against the static rows' best per level, else its best cell.
fn scores(a: &Analysis, preds: &[&Predicted]) -> Vec<Option<f64>> {
    let (better, slo) = (a.opts.metric.better, !a.opts.slo.is_empty());
    let n = a.grid.len();
    match a.opts.objective {
        Objective::Weighted => {
            let mut grid: Grid = a.grid.clone();
            grid.extend(preds.iter().map(|p| p.cells.clone()));
            let mut failed = a.failed.clone();
            failed.extend(preds.iter().map(|p| p.failed.clone()));
            decide::weighted_scores(&grid, &failed, &a.weights, better, slo)[n..].to_vec()
        }
        Objective::Max | Objective::Slo => preds
            .iter()
            .map(|p| {
                p.cells
                    .iter()
                    .flatten()
                    .filter(|x| !slo || x.slo_ok)
                    .map(|x| x.score)
                    .reduce(|x, y| if better.beats(y, x) { y } else { x })
            })
            .collect(),
    }
}

/// The winning prediction: the pick rule over the scores, the smaller
/// deepest depth first within `--tolerance`.
fn choose(a: &Analysis, preds: &[&Predicted], scores: &[Option<f64>]) -> Option<usize> {
    let weighted = a.opts.objective == Objective::Weighted;
    let better = if weighted {
        Better::Higher
    } else {
        a.opts.metric.better
    };
    let idx: Vec<usize> = (0..preds.len())
        .filter(|&i| scores[i].is_some_and(|x| !weighted || x > 0.0))
        .collect();
    let cands: Vec<(usize, f64)> = idx
        .iter()
        .map(|&i| (preds[i].deepest as usize, scores[i].unwrap_or(0.0)))
        .collect();
    decide::pick(&cands, better, a.opts.tolerance).map(|p| idx[p.winner])
}

/// The line that says what the rule saw and chose (the schedule's first
/// warning, so it reaches stderr and the record).
fn note(
    a: &Analysis,
    cands: &[(Schedule, Predicted)],
    scores: &[Option<f64>],
    win: usize,
) -> String {
    let last = cands.len() - 1;
    let free = &cands[last].1;
    let top = free.deepest;
    let (mut waited, mut measured) = (Vec::new(), Vec::new());
    for (c, d, why) in &free.bound {
        match why {
            Bound::Waited(x) => waited.push(format!(
                "{:.0}% of its latency at {} (depth {d} drafted there)",
                x * 100.0,
                a.model.levels[*c].label()
            )),
            Bound::Measured(words) => measured.push(words.clone()),
        }
    }
    let mut why = Vec::new();
    if !waited.is_empty() {
        why.push(format!(
            "its requests waited longer for a first token, by {}, inferred from waits",
            waited.join(", ")
        ));
    }
    if !measured.is_empty() {
        why.push(format!("measured by the servers: {}", measured.join("; ")));
    }
    let obj = a.opts.objective.name();
    let fmt = |x| crate::wording::score(a.opts.objective, x);
    let seen = format!(
        "static {top} is KV-bound where the uncapped schedule drafts less ({}), and both \
         servers reserve speculative KV for a schedule's deepest depth at every load (SGLang \
         get_alloc_len_per_decode, vLLM num_lookahead_tokens)",
        why.join("; ")
    );
    let each: Vec<String> = cands
        .iter()
        .enumerate()
        .map(|(i, (_, p))| match i == last {
            true => format!("uncapped (deepest {}) {}", p.deepest, fmt(scores[i])),
            false => format!("capped at {} {}", p.deepest, fmt(scores[i])),
        })
        .collect();
    let verdict = match win == last {
        true => "depth not capped".to_string(),
        false => format!("depth capped at {}", cands[win].1.deepest),
    };
    format!(
        "{verdict}: {seen}; predicted {obj} score {} (summarize(1) SCHEDULE, Depth cap)",
        each.join(", ")
    )
}

#[cfg(test)]
#[path = "depth_cap_tests.rs"]
mod tests;
