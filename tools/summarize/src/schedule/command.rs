//! `summarize --schedule`'s glue: the max batch from the flag or the
//! records, the derivation (`schedule`), and the one `schedule` object on
//! stdout (summarize(1) SCHEDULE documents it). Nothing reaches stdout
//! unless a schedule was derived.

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::anyhow;
use serde_json::{Map, Value};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::io::write_record;
use sweepkit::records::{
    AdaptiveSlot, BatchSize, Provenance, Record, ScheduleLevel, ScheduleRecord, ScheduleServer,
    SCHEMA_VERSION,
};

use crate::analysis::group;
use crate::analysis::{self, Analysis};
use crate::cli::Server;
use crate::input::{hosts, partial};
use crate::input::{Body, Obs};
use crate::schedule::{self, MaxBatch, Schedule};

/// What `--schedule` needs from the command line.
pub struct Request<'a> {
    pub server: Server,
    pub max_batch: Option<u64>,
    /// `--max-depth`: the deepest depth the schedule may use.
    pub max_depth: Option<u32>,
    pub adaptive_config_file: &'a str,
    pub pool_hosts: bool,
}

/// Derive and print the schedule; a refusal is exit 56 with nothing on stdout.
pub fn run(
    req: &Request,
    opts: analysis::Options,
    mut inp: crate::input::Input,
    stdout: &mut impl Write,
    stderr: &mut impl Write,
) -> Result<(), Exit> {
    let started = std::time::SystemTime::now();
    partial::resolve(&mut inp);
    let mut notes = std::mem::take(&mut inp.notes);
    let groups = hosts::plan(inp.obs, req.pool_hosts, false, true, &mut notes);
    let obs = match groups {
        // Derived from the static values only: a file that already holds
        // a schedule's own records derives the same schedule again.
        Ok(mut g) => crate::schedule::row::split(g.remove(0).1).0,
        Err(e) => {
            crate::input::print_notes(stderr, &notes);
            return Err(Exit::new(e.exit_code(), anyhow!(e)));
        }
    };
    let model = group::build(&obs, &opts.metric, &mut notes);
    crate::input::print_notes(stderr, &notes);
    let a =
        analysis::analyse(model, &obs, opts).map_err(|e| Exit::new(e.exit_code(), anyhow!(e)))?;
    let mb = max_batch(req, &a, &obs);
    let name = match req.server {
        Server::Vllm => "vllm",
        Server::Sglang => "sglang",
    };
    let s =
        crate::schedule::depth_cap::derive(&a, req.server, &mb, req.max_depth).map_err(|r| {
            Exit::new(
                exit::SCHEDULE_REFUSED,
                anyhow!("--schedule {name}: {}", r.0),
            )
        })?;
    for w in &s.warnings {
        let _ = sweepkit::diag::write_line(stderr, &format!("summarize: warning: {w}"));
    }
    let simulated = obs.iter().any(|o| o.simulated);
    let provenance = Provenance::new("summarize", started);
    let rec = record(&s, &a, req.adaptive_config_file, simulated, provenance);
    write_record(stdout, &Record::Schedule(rec))?;
    Ok(())
}

/// `--max-batch`, else the smallest the records of configs with speculation
/// on report (`server.max_running_requests`, `server.args.max_num_seqs` or
/// `max_running_requests`, `--max-num-seqs` / `--max-running-requests` in
/// `server.argv`), else the server's default.
pub fn max_batch(req: &Request, a: &Analysis, obs: &[Obs]) -> MaxBatch {
    if let Some(n) = req.max_batch {
        return MaxBatch {
            value: n,
            source: "--max-batch".into(),
        };
    }
    let m = &a.model;
    let mut seen: Vec<u64> = Vec::new();
    for (r, row) in m.rows.iter().enumerate() {
        let on = schedule::depth_of(req.server, &row.config).is_ok_and(|d| d.k > 0);
        if !on {
            continue;
        }
        for cell in &m.cells[r] {
            for &i in &cell.runs {
                if let Body::Bench(v) = &obs[i].body {
                    seen.extend(reported_max(&v["server"]));
                }
            }
        }
    }
    if let Some(&n) = seen.iter().min() {
        let source = if seen.iter().all(|&x| x == n) {
            "the records (server's max running requests)".to_string()
        } else {
            format!("the records (the smallest of {seen:?})")
        };
        return MaxBatch { value: n, source };
    }
    match req.server {
        Server::Vllm => MaxBatch {
            value: schedule::VLLM_DEFAULT_MAX_BATCH,
            source: "vLLM's default max_num_seqs (not in the records)".into(),
        },
        Server::Sglang => MaxBatch {
            value: schedule::SGLANG_DEFAULT_MAX_BATCH,
            source: "SGLang's max_running_requests under speculation (not in the records)".into(),
        },
    }
}

/// The max batch one bench record's `server` block reports.
fn reported_max(server: &Value) -> Option<u64> {
    let num = |v: &Value| v.as_u64().or_else(|| v.as_str()?.trim().parse().ok());
    if let Some(n) = server.get("max_running_requests").and_then(num) {
        return Some(n);
    }
    let args = server.get("args");
    for k in ["max_running_requests", "max_num_seqs"] {
        if let Some(n) = args.and_then(|a| a.get(k)).and_then(num) {
            return Some(n);
        }
    }
    let argv: Vec<&str> = server
        .get("argv")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let mut found = None;
    for (i, w) in argv.iter().enumerate() {
        for flag in ["--max-num-seqs", "--max-running-requests"] {
            if let Some(v) = w.strip_prefix(flag).and_then(|r| r.strip_prefix('=')) {
                found = v.parse().ok().or(found);
            } else if *w == flag {
                found = argv.get(i + 1).and_then(|v| v.parse().ok()).or(found);
            }
        }
    }
    found
}

/// The `schedule` record (summarize(1) SCHEDULE, sweepkit-records(5)).
pub fn record(
    s: &Schedule,
    a: &Analysis,
    adaptive_file: &str,
    simulated: bool,
    provenance: Provenance,
) -> ScheduleRecord {
    let per_level = s
        .levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let from = if i == 0 { 1 } else { l.batch };
            let to = s
                .levels
                .get(i + 1)
                .map_or(s.max_batch.max(from), |n| n.batch - 1);
            ScheduleLevel {
                level: l.level.clone(),
                concurrency: l.concurrency,
                batch_from: from,
                batch_to: to,
                k: l.k,
                config: a.model.rows[l.row].label.clone(),
                score: l.score,
                close: l.close.clone(),
                rival_k: l.rival.map(|r| r.0),
                rival_score: l.rival.map(|r| r.1),
                within_noise: l.noisy,
            }
        })
        .collect();
    let mut rec = ScheduleRecord {
        schema: SCHEMA_VERSION,
        metric: a.opts.metric.path.clone(),
        per_level,
        max_batch: s.max_batch,
        max_batch_source: s.max_batch_source.clone(),
        replaces: s.replaces.clone(),
        warnings: s.warnings.clone(),
        simulated,
        server: ScheduleServer::Vllm,
        flags: Vec::new(),
        speculative_config: None,
        adaptive_config: None,
        adaptive_config_file: None,
        provenance,
    };
    match s.server {
        Server::Vllm => {
            let cfg = vllm_config(s);
            rec.flags = vec![
                "--speculative-config".into(),
                Value::Object(cfg.clone()).to_string(),
            ];
            rec.speculative_config = Some(cfg);
        }
        Server::Sglang => {
            rec.server = ScheduleServer::Sglang;
            rec.flags = sglang_flags(s, adaptive_file);
            rec.adaptive_config = Some(sglang_config(s));
            rec.adaptive_config_file = Some(adaptive_file.to_string());
        }
    }
    rec
}

/// The complete `--speculative-config`: the swept method and draft, k =
/// the largest used, and the ranges. vLLM's own JSON, so an object.
pub fn vllm_config(s: &Schedule) -> Map<String, Value> {
    let mut cfg = s.settings.clone();
    cfg.insert("num_speculative_tokens".into(), s.k_max.into());
    let ranges: Vec<Value> = s
        .ranges
        .iter()
        .map(|&(a, b, k)| Value::from(vec![Value::from(a), Value::from(b), Value::from(k)]))
        .collect();
    cfg.insert(
        "num_speculative_tokens_per_batch_size".into(),
        Value::Array(ranges),
    );
    cfg
}

/// The adaptive config file's content: `{"1": {"candidate_steps": [..]}}`
/// (the knobs keep SGLang's defaults).
pub fn sglang_config(s: &Schedule) -> BTreeMap<BatchSize, AdaptiveSlot> {
    s.slots
        .iter()
        .map(|(&bs, steps)| {
            let slot = AdaptiveSlot {
                candidate_steps: steps.clone(),
            };
            (BatchSize(bs), slot)
        })
        .collect()
}

/// SGLang's flags: the swept algorithm and draft, topk 1, the initial
/// steps (the lowest level's choice, so the batch-1 slot starts there;
/// must be a candidate: `_init_adaptive_speculative_params`), adaptive on.
pub fn sglang_flags(s: &Schedule, file: &str) -> Vec<String> {
    let mut flags = Vec::new();
    for (k, v) in &s.settings {
        if k == "speculative-eagle-topk" {
            continue;
        }
        flags.push(format!("--{k}"));
        flags.push(v.as_str().map_or_else(|| v.to_string(), str::to_string));
    }
    let first = s.levels.first().map_or(0, |l| l.k);
    let union: std::collections::BTreeSet<u32> = s.slots.values().flatten().copied().collect();
    let initial = if first > 0 {
        first
    } else {
        union.iter().copied().max().unwrap_or(0)
    };
    flags.extend(
        [
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-steps",
            &initial.to_string(),
            "--speculative-adaptive",
            "--speculative-adaptive-config",
            file,
        ]
        .map(String::from),
    );
    flags
}
