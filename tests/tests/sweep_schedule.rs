//! `sweep --schedule vllm|sglang` end to end against llm-sim under
//! svc-swap's process manager (noise on, seeded): after the grid the sweep
//! derives the server's per-load schedule, applies it as one more config
//! (one extra restart), checks the live server runs it and benchmarks it at
//! every level (one extra pass); its records carry the schedule, the
//! original config comes back (the schedule's own flags removed), and a
//! grid that cannot support a schedule (one level) ends with the static
//! pick and the reason on stderr. summarize's table shows the schedule as
//! its own row (never the static best), with its change against the best
//! static value and the weighted pick at each level; `--keep-winner` leaves
//! applied what summarize decides wins by the objective.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

mod sweep_support;

use serde_json::{json, Value};
use sweep_support::sim::eagle;
use sweep_support::{dump, records, stderr, stdout, upstream_of, SimExec, SpecFile, SweepArgs};

/// llm-sim's default campaign-shaped model, seeded, with 2% run-to-run
/// noise per start (`--noise`, one draw per start from `--noise-counter`).
fn sim(tag: &str, flags: &str) -> (SpecFile, String) {
    let dir = testkit::temp_dir(&format!("{tag}-ctr"));
    let noise = format!(
        "--noise 2% --noise-counter {}",
        dir.join("starts").display()
    );
    let sim = SimExec::free().load("100ms").warmup("50ms").seed(42);
    sim.flags(&noise).flags(flags).spec(tag)
}

/// [`sim`] with SGLang's speculative flags, steps 1.
fn sglang_sim(tag: &str) -> (SpecFile, String) {
    sim(tag, &eagle(1))
}

/// This file's load: loadgen's options.
const LOAD: [&str; 11] = [
    "--max-tokens",
    "64",
    "--input-tokens",
    "128",
    "-n",
    "64",
    "--temperature",
    "0.2",
    "--ignore-eos",
    "--seed",
    "1",
];

/// A `sweep --schedule SERVER` over `param`'s `values` at `levels`, with
/// this file's load: the words every test here starts from.
fn schedule_args(
    spec: &SpecFile,
    url: &str,
    server: &str,
    (param, values, levels): (&str, &str, &str),
) -> SweepArgs {
    SweepArgs::on_spec(spec, url, server)
        .param(param, values)
        .levels(levels)
        .args(&["--schedule", server])
        .load(&LOAD)
}

fn tok_s(r: &Value) -> f64 {
    r["throughput"]["output_tok_per_s"].as_f64().unwrap()
}

fn carries_schedule(r: &Value) -> bool {
    r.get("upstream")
        .and_then(|u| upstream_of(u, "schedule"))
        .is_some()
}

/// summarize's summary record of `results` (its `--summarize-arg`s `extra`).
fn summary(results: &std::path::Path, extra: &[&str]) -> Value {
    let out = std::process::Command::new(testkit::bin("summarize"))
        .args(["--format", "json"])
        .args(extra)
        .arg(results)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", dump(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The table's schedule row against the records: at every level its
/// change against summarize's best static value there and against the
/// weighted pick, worked out again from the bench records themselves.
fn check_table(server: &str, out: &std::process::Output, results: &std::path::Path) {
    let table = stdout(out);
    let label = format!("schedule ({server})");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&label) && !l.contains('*')),
        "{table}"
    );
    assert!(table.contains("  vs best static"), "{table}");
    assert!(table.contains("  vs weighted pick ("), "{table}");
    let sum = summary(results, &[]);
    let rows = sum["details"]["schedule"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(
        (&row["label"], &row["current"]),
        (&json!(label), &json!(true))
    );
    let recs = records(results);
    let (mine, grid): (Vec<&Value>, Vec<&Value>) = recs
        .iter()
        .filter(|r| r["type"] == "bench")
        .partition(|r| carries_schedule(r));
    let key = sum["details"]["varying"][0].as_str().unwrap().to_string();
    let value_of = |label: &str, c: u64| {
        let v = label.split_once('=').unwrap().1;
        tok_s(
            grid.iter()
                .find(|r| r["config"][&key] == v && r["load"]["concurrency"] == c)
                .unwrap(),
        )
    };
    for lv in row["levels"].as_array().unwrap() {
        let c: u64 = lv["level"].as_str().unwrap()[2..].parse().unwrap();
        let s = tok_s(mine.iter().find(|r| r["load"]["concurrency"] == c).unwrap());
        assert_eq!(lv["median"].as_f64(), Some(s));
        let best = &sum["best_per_level"][lv["level"].as_str().unwrap()][&key];
        let vs = &lv["vs_best_static"];
        assert_eq!(vs["label"], format!("{key}={}", best.as_str().unwrap()));
        for (which, want) in [
            ("vs_best_static", vs["label"].clone()),
            ("vs_pick", row["pick"].clone()),
        ] {
            let b = value_of(want.as_str().unwrap(), c);
            let pct = lv[which]["change_pct"].as_f64().unwrap();
            assert!(
                (pct - 100.0 * (s - b) / b).abs() < 0.01,
                "{which} {pct} {s} {b}"
            );
            // One run each: no interval, and the table says so.
            assert_eq!(lv[which]["verdict"], "unknown");
        }
    }
}

/// llm-sim's curve where the best depth differs by level because of
/// compute, not speculative memory (see
/// [`keep_winner_keeps_the_schedule_when_it_wins`]: depth 1 best at one
/// request, 4 at 32, and 32 requests fit at 4). "Never worse than the best
/// static value" holds by the model only on such a curve: where the deep
/// depth loses at high load on speculative memory (the default campaign
/// curve), a schedule reserves for its deepest depth at every load, as
/// both servers do, and runs like that depth there (bench/README.md,
/// "sweep --schedule on the campaign curve"; the table's memory note says
/// so). On that curve this check sat at the edge of its allowance: c=16
/// measured 21% under static 4 once, against 20% allowed.
const COMPUTE_BOUND: &str = "--step-time 500us --per-seq-time 500us --draft-step-time 2ms \
                             --speculative-kv-per-step 16";

/// Run the sweep; check the schedule step, that the schedule takes the
/// depth the grid measured best at each level, and the restore. (That the
/// schedule is never worse than the best static value beyond noise is a
/// wall-clock figure: on this shared 2-core VM the same depth measured
/// 12474 and 14497 tok/s at c=16 in two starts of one sweep, so it is
/// `make bench`'s, bench/schedule.sh.)
fn schedule_sweep(server: &str, sim_flags: &str, param: &str, values: &str) {
    // The swept flag last (or followed only by the dotted fields a vLLM
    // schedule folds, which come back after it), as in the other tests
    // here: the restore is checked byte for byte.
    let flags = format!("{COMPUTE_BOUND} {sim_flags}");
    let (spec, url) = sim(&format!("sweep-sched-{server}"), &flags);
    let before = spec.exec_start();
    let results = spec.results();
    let levels = [1, 32];
    let out = schedule_args(&spec, &url, server, (param, values, "1,32")).expect(0);
    let err = stderr(&out);
    assert!(err.contains("[schedule]"), "{}", dump(&out));
    let recs = records(&results);
    let sched: Vec<&Value> = recs.iter().filter(|r| r["type"] == "schedule").collect();
    assert_eq!(sched.len(), 1, "one derived schedule record");
    assert_eq!(sched[0]["server"], server);
    let benches: Vec<&Value> = recs.iter().filter(|r| r["type"] == "bench").collect();
    let (mine, grid): (Vec<&Value>, Vec<&Value>) =
        benches.into_iter().partition(|r| carries_schedule(r));
    // One extra pass: one bench record per level; one extra restart: one
    // swap of the schedule.
    assert_eq!(mine.len(), levels.len(), "{}", dump(&out));
    let n_values = values.split(',').count();
    assert_eq!(grid.len(), levels.len() * n_values);
    assert_eq!(
        err.matches("svc-swap: swap job").count(),
        n_values + 1 + 1,
        "grid + schedule + restore restarts: {err}"
    );
    // The schedule takes, at each level, the depth the grid measured best
    // there (or one its record names as close to it): a fact of the
    // records, not of this shared machine's clock. Whether the schedule then
    // runs at least as fast as that depth is a wall-clock figure, checked by
    // `make bench` (bench/schedule.sh: issue 23's target, beyond noise).
    for c in levels {
        let at = |r: &&&Value| r["load"]["concurrency"] == c;
        let best = grid
            .iter()
            .filter(at)
            .max_by(|a, b| tok_s(a).total_cmp(&tok_s(b)))
            .unwrap();
        let best_k: u64 = best["config"][param].as_str().unwrap().parse().unwrap();
        let step = sched[0]["per_level"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["concurrency"] == c)
            .unwrap_or_else(|| panic!("no level c={c} in {}", sched[0]));
        let close: Vec<u64> = step["close"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_u64).collect())
            .unwrap_or_default();
        let s = tok_s(mine.iter().find(at).unwrap());
        eprintln!(
            "{server} c={c}: schedule {s:.0} at k={} vs best static k={best_k} {:.0}",
            step["k"],
            tok_s(best)
        );
        assert!(
            step["k"] == best_k || close.contains(&best_k),
            "c={c}: the schedule took k={} where the grid measured k={best_k} best: {}",
            step["k"],
            sched[0]
        );
    }
    // The original config is back, the schedule's flags gone.
    assert_eq!(spec.exec_start(), before);
    check_table(server, &out, &results);
}

#[test]
fn sglang_schedule_is_applied_measured_and_takes_the_best_static_depth() {
    schedule_sweep("sglang", &eagle(1), "speculative-num-steps", "1,4");
}

/// With another dotted field on the line (`--speculative-config.method
/// eagle`): vLLM's FlexibleArgumentParser would replace the schedule's
/// whole JSON with it (llm-sim as vLLM refused to start), so svc-swap folds
/// it into the JSON, and sweep's end puts it back from the swap's changes
/// (after the swept flag, as it stands here: byte for byte).
#[test]
fn vllm_schedule_is_applied_measured_and_takes_the_best_static_depth() {
    schedule_sweep(
        "vllm",
        "--personality vllm --speculative-config.num_speculative_tokens 1 \
         --speculative-config.method eagle",
        "speculative-config.num_speculative_tokens",
        "1,4",
    );
}

#[test]
fn one_level_cannot_support_a_schedule_and_the_static_pick_stands() {
    let (spec, url) = sglang_sim("sweep-sched-refused");
    let results = spec.results();
    let params = ("speculative-num-steps", "2,4", "1");
    let out = schedule_args(&spec, &url, "sglang", params).expect(0);
    let err = stderr(&out);
    assert!(
        err.contains("cannot support a sglang schedule"),
        "{}",
        dump(&out)
    );
    // summarize's own reason line, and no schedule step.
    assert!(err.contains("summarize: error:"), "{err}");
    let recs = records(&results);
    assert!(recs.iter().all(|r| r["type"] != "schedule"));
    assert!(recs.iter().all(|r| !carries_schedule(r)));
    assert!(!err.contains("[schedule]"));
}

/// `--keep-winner` with `--schedule`: what stays applied is what summarize
/// decides (`details.schedule[].wins`, read by sweep-plan). With
/// `--tolerance 10%` (the sweep's `--summarize-arg`) on this curve, where
/// steps=4 is best or within 2% at every level, the schedule cannot beat
/// the static pick by 10% (it would need to be 10% above steps=4 on
/// average over the levels): the static pick stays, with the schedule's
/// own flags (`--speculative-adaptive`, its config file) removed.
#[test]
fn keep_winner_leaves_the_static_pick_when_the_schedule_does_not_win() {
    let (spec, url) = sglang_sim("sweep-sched-keep");
    let results = spec.results();
    let params = ("speculative-num-steps", "2,4,5", "1,16,64");
    let out = schedule_args(&spec, &url, "sglang", params)
        .args(&["--keep-winner", "--summarize-arg", "--tolerance"])
        .args(&["--summarize-arg", "10%"])
        .expect(0);
    let err = stderr(&out);
    assert!(err.contains("[schedule]"), "{err}");
    let sum = summary(&results, &["--tolerance", "10%"]);
    let row = &sum["details"]["schedule"][0];
    assert_eq!(row["wins"], false, "{row}");
    assert!(err.contains("applying summarize's pick"), "{err}");
    let pick = sum["best_config"]["speculative-num-steps"]
        .as_str()
        .unwrap();
    let exec = spec.exec_start();
    assert!(
        exec.contains(&format!("--speculative-num-steps {pick}")),
        "{exec}"
    );
    assert!(
        !exec.contains("--speculative-adaptive"),
        "the schedule's flags stay on: {exec}"
    );
}

/// `--keep-winner` keeps the schedule when it wins by the objective, on a
/// curve where the best depth differs by level because of compute, not
/// speculative memory: llm-sim's draft step costs 2 ms against a 0.5 ms
/// base step and 0.5 ms per running sequence (model.rs `step_time_at`),
/// so by the model k = 1 is about 50% faster than k = 4 at one request and
/// k = 4 about 50% faster at 32, and the speculative KV per step is small
/// enough that 32 requests fit at k = 4 (`kv_need`). Each static value
/// gives up a third at one of the two levels; vLLM's per-batch schedule
/// (k = 1 up to 31 requests, 4 from 32) gives up neither, so it wins by
/// more than any tolerance and stays applied: the spec's ExecStart runs
/// it, checked live by the sweep's own wait-ready --expect-config.
/// Measured here (debug build, 2-core VM): k = 1 574 / 2994 tok/s at
/// c=1 / c=32, k = 4 369 / 3976, the schedule 566 / 3883: +30% against
/// the weighted pick (k = 1) at c=32, weighted score 0.982 against 0.877.
#[test]
fn keep_winner_keeps_the_schedule_when_it_wins() {
    let flags =
        format!("--personality vllm --speculative-config.num_speculative_tokens 1 {COMPUTE_BOUND}");
    let (spec, url) = sim("sweep-sched-wins", &flags);
    let results = spec.results();
    let load = [
        "--max-tokens",
        "64",
        "--input-tokens",
        "128",
        "-n",
        "32",
        "--temperature",
        "0.2",
        "--ignore-eos",
        "--seed",
        "1",
    ];
    let out = SweepArgs::on_spec(&spec, &url, "vllm")
        .param("speculative-config.num_speculative_tokens", "1,4")
        .levels("1,32")
        .args(&["--schedule", "vllm", "--keep-winner"])
        .load(&load)
        .expect(0);
    let err = stderr(&out);
    let sum = summary(&results, &[]);
    let row = &sum["details"]["schedule"][0];
    assert_eq!(row["wins"], true, "{row}\n{}", dump(&out));
    // Against the weighted pick: even at the pick's own best level, far
    // ahead at the other.
    let gains: Vec<f64> = row["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["vs_pick"]["change_pct"].as_f64().unwrap())
        .collect();
    assert!(
        gains.iter().cloned().fold(f64::MIN, f64::max) > 15.0,
        "{gains:?}\n{}",
        stdout(&out)
    );
    assert!(
        err.contains("applying the vllm schedule (it wins by the objective"),
        "{}",
        dump(&out)
    );
    assert!(!err.contains("applying summarize's pick"), "{err}");
    let exec = spec.exec_start();
    assert!(
        exec.contains("num_speculative_tokens_per_batch_size"),
        "the schedule is not what stays applied: {exec}"
    );
}
