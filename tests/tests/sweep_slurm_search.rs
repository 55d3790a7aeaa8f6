//! `sweep --slurm --adaptive` and `sweep --slurm --schedule` on a real
//! Slurm 22.05 cluster (testkit::slurm), llm-sim as the server in each
//! job: the search on Slurm takes the same steps and reaches the same
//! pick as the same search on one node, and the schedule is derived
//! after the grid and measured as one more job. Needs `cargo build
//! --workspace --bins`.

mod sweep_support;

use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::sim::eagle;
use sweep_support::slurm::*;
use sweep_support::{dump, records, stderr, upstream_of, SimExec, SpecFile, SweepArgs};
use testkit::slurm::Slurm;

/// llm-sim where deeper drafts pay clearly (accept rate 0.95 at
/// temperature 0: 1.95, 2.85, 3.71 tokens per step at steps 1, 2, 3,
/// for almost no draft time) until steps 4, which crash at load (context
/// 4096 + 4 x 512 > 6000 KV tokens): the search's steps do not hang on a
/// busy machine's timing noise.
fn search_sim(tag: &str) -> (SpecFile, String) {
    let sim = SimExec::free().load("100ms").warmup("50ms").probe("10ms");
    sim.kv(6000)
        .eagle(1)
        .flags("--speculative-accept-rate 0.95")
        .spec(tag)
}

/// The search's settings, the same on one node and on Slurm.
fn search_args(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "llm-sim")
        .param(STEPS, "1,2,3,4,5,6")
        .args(&["--adaptive", "--repeat-budget", "0"])
        .args(&["--ready-timeout", "60s"])
        .levels("1,2")
        .load(&["-n", "16", "--max-tokens", "64", "--ignore-eos"])
        .load(&["--seed", "1", "--temperature", "0", "--warmup", "0"])
}

/// The values a search measured, in the order it measured them, the
/// values it skipped, and the best it named.
fn walk(recs: &[Value], err: &str) -> (Vec<String>, Vec<String>, String) {
    let value = |r: &Value| r["config"][STEPS].as_str().unwrap_or("?").to_string();
    let mut measured: Vec<String> = Vec::new();
    for r in recs
        .iter()
        .filter(|r| matches!(r["type"].as_str(), Some("bench" | "failure")))
    {
        if measured.last() != Some(&value(r)) {
            measured.push(value(r));
        }
    }
    let skipped = recs
        .iter()
        .filter(|r| r["type"] == "skipped")
        .map(value)
        .collect();
    let best = err
        .lines()
        .find_map(|l| l.split_once("adaptive search done").map(|(_, b)| b))
        .and_then(|l| l.split_once("best: "))
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (measured, skipped, best)
}

/// The same adaptive search on one node and on Slurm measures the same
/// values in the same order, skips the same ones and names the same
/// best; each of its jobs ran one config, one at a time.
#[test]
fn an_adaptive_search_on_slurm_picks_what_it_picks_on_one_node() {
    let Some(s) = Slurm::start(1) else { return };
    let (local, url) = search_sim("slurm-adaptive-local");
    let out = search_args(&local, &url).output();
    // 40: the walk reached steps 4 (a failure of its own).
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 40)), "{}", dump(&out));
    let mine = walk(&records(&local.results()), &stderr(&out));
    let (spec, url) = search_sim("slurm-adaptive");
    let args = search_args(&spec, &url).args(&["--slurm", "--retries", "1"]);
    let t0 = Instant::now();
    let out = run_on(&s, &args, 400);
    eprintln!("adaptive search on Slurm: {:?}", t0.elapsed());
    assert_eq!(out.status.code(), code, "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let theirs = walk(&recs, &stderr(&out));
    eprintln!("one node: {mine:?}\non Slurm: {theirs:?}");
    assert_eq!(theirs, mine, "{}", show(&out, &spec));
    assert!(!theirs.1.is_empty(), "the search stopped early: {theirs:?}");
    assert!(!theirs.2.is_empty(), "a best was named: {theirs:?}");
    // One job per measured value, in the order the search asked.
    let mut jobs: Vec<(String, String)> = Vec::new();
    for r in recs.iter().filter(|r| r.get("slurm").is_some()) {
        let j = slurm_of(r);
        let key = (j["job_id"].to_string(), r["config"][STEPS].to_string());
        if !jobs.contains(&key) {
            jobs.push(key);
        }
        if r["type"] == "bench" {
            assert_eq!(j["state"], "COMPLETED", "{r}");
        }
    }
    let values: Vec<String> = jobs
        .iter()
        .map(|(_, v)| v.trim_matches('"').into())
        .collect();
    assert_eq!(values, theirs.0, "one job per value: {jobs:?}");
    testkit::assert_contains(&stderr(&out), "skipped");
    assert!(s.queue().is_empty());
    assert_no_server_left(&spec.results());
}

/// llm-sim where the best depth differs by level (compute bound, as in
/// sweep_schedule.rs): a schedule is worth deriving.
fn schedule_sim(tag: &str) -> (SpecFile, String) {
    let flags = format!(
        "--step-time 500us --per-seq-time 500us --draft-step-time 2ms \
         --speculative-kv-per-step 16 {}",
        eagle(1)
    );
    SimExec::free()
        .load("100ms")
        .warmup("50ms")
        .seed(42)
        .flags(&flags)
        .spec(tag)
}

/// --schedule on Slurm: the grid's jobs, then the schedule derived into
/// the results file and measured by one more job whose server runs it
/// (wait-ready checked it live); its records follow the schedule record,
/// carry it, and name their job (array task 0).
#[test]
fn a_schedule_sweep_on_slurm_ends_with_the_schedule_and_its_measured_step() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = schedule_sim("slurm-schedule");
    let args = SweepArgs::on_spec(&spec, &url, "sglang")
        .arg("--slurm")
        .param(STEPS, "1,4")
        .levels("1,32")
        .args(&[
            "--schedule",
            "sglang",
            "--ready-timeout",
            "60s",
            "--retries",
            "1",
        ])
        .args(&["--max-jobs", "2"])
        .load(&["--max-tokens", "32", "--input-tokens", "128", "-n", "64"])
        .load(&["--ignore-eos", "--seed", "1", "--warmup", "0"]);
    let t0 = Instant::now();
    let out = run_on(&s, &args, 400);
    eprintln!("schedule sweep on Slurm: {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    testkit::assert_contains(&stderr(&out), "[schedule] sglang per-load schedule");
    let recs = records(&spec.results());
    let at = recs.iter().position(|r| r["type"] == "schedule");
    let at = at.unwrap_or_else(|| panic!("no schedule record: {}", show(&out, &spec)));
    assert_eq!(recs[at]["server"], "sglang");
    let grid = recs[..at].iter().filter(|r| r["type"] == "bench").count();
    assert_eq!(grid, 4, "two values at two levels before it");
    let step: Vec<&Value> = recs[at + 1..].iter().collect();
    assert_eq!(
        step.len(),
        2,
        "its step at each level: {}",
        show(&out, &spec)
    );
    for r in step {
        assert_eq!(r["type"], "bench", "{r}");
        assert_eq!(r["partial"], false, "{r}");
        let sched = r.get("upstream").and_then(|u| upstream_of(u, "schedule"));
        assert_eq!(sched, Some(&recs[at]), "the step ran the schedule: {r}");
        let ready = upstream_of(r, "ready").unwrap();
        let want = ready.to_string();
        assert!(
            want.contains("speculative-adaptive"),
            "checked live: {want}"
        );
        assert_eq!(slurm_of(r)["array_index"], 0, "{r}");
        assert_eq!(slurm_of(r)["state"], "COMPLETED", "{r}");
        sweep_support::records::conforms(r, "a --slurm --schedule record");
    }
    assert!(s.queue().is_empty());
    assert_no_server_left(&spec.results());
}

/// A flat curve (nothing accepted: every depth alike) where every value
/// is a close call (--noise-margin 50%): the search asks for a round of
/// repeats of several values at once, which go out as one array, at
/// most --max-jobs of them running at a time, and the search ends
/// within its repeat budget.
#[test]
fn a_round_of_repeats_runs_at_once_up_to_max_jobs() {
    let Some(s) = Slurm::start(1) else { return };
    let sim = SimExec::free().load("100ms").warmup("50ms").probe("10ms");
    let (spec, url) = sim
        .eagle(1)
        .flags("--speculative-accept-rate 0")
        .spec("slurm-repeats");
    let args = SweepArgs::on_spec(&spec, &url, "llm-sim")
        .arg("--slurm")
        .param(STEPS, "1,2,3")
        .args(&[
            "--adaptive",
            "--repeat-budget",
            "3",
            "--noise-margin",
            "50%",
        ])
        .args(&[
            "--max-jobs",
            "2",
            "--ready-timeout",
            "60s",
            "--retries",
            "1",
        ])
        .levels("1")
        .load(&[
            "-n",
            "4",
            "--max-tokens",
            "16",
            "--seed",
            "1",
            "--warmup",
            "0",
        ]);
    let out = run_on(&s, &args, 400);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let err = stderr(&out);
    testkit::assert_contains(&err, "close call: ");
    testkit::assert_contains(&err, "(config 1,2,3)");
    testkit::assert_contains(&err, "adaptive search done");
    let recs = records(&spec.results());
    // The round's records: those of the one array with several tasks.
    let benches: Vec<&Value> = recs.iter().filter(|r| r["type"] == "bench").collect();
    let array = |r: &Value| slurm_of(r)["array_job_id"].clone();
    let round: Vec<&Value> = benches
        .iter()
        .copied()
        .filter(|r| {
            benches
                .iter()
                .any(|o| array(o) == array(r) && o["slurm"]["job_id"] != r["slurm"]["job_id"])
        })
        .collect();
    assert_eq!(
        round.len(),
        3,
        "one repeat of each value: {}",
        show(&out, &spec)
    );
    let span = |r: &Value| {
        let p = &r["provenance"];
        (
            p["started_at"].as_str().unwrap().to_string(),
            p["finished_at"].as_str().unwrap().to_string(),
        )
    };
    let spans: Vec<(String, String)> = round.iter().map(|r| span(r)).collect();
    let all_three = spans
        .iter()
        .all(|a| spans.iter().all(|b| a.0 < b.1 && b.0 < a.1));
    assert!(!all_three, "--max-jobs 2 ran three at once: {spans:?}");
    assert!(s.queue().is_empty());
    assert_no_server_left(&spec.results());
}

/// A search on Slurm cut after its second value (the file as an
/// interrupted sweep leaves it) continues from the file: no job runs
/// values 1 and 2 again, and it ends where the whole search ended.
#[test]
fn an_adaptive_search_on_slurm_resumes_from_a_cut_file() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = search_sim("slurm-adaptive-resume");
    let args = search_args(&spec, &url).args(&["--slurm", "--retries", "1"]);
    let out = run_on(&s, &args, 400);
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 40)), "{}", show(&out, &spec));
    let whole = walk(&records(&spec.results()), &stderr(&out));
    // Keep the records of the first two values only.
    let text = std::fs::read_to_string(spec.results()).unwrap();
    let cut: Vec<&str> = text
        .lines()
        .filter(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            r["type"] == "bench" && ["1", "2"].contains(&r["config"][STEPS].as_str().unwrap())
        })
        .collect();
    assert_eq!(cut.len(), 4, "two values at two levels");
    std::fs::write(spec.results(), format!("{}\n", cut.join("\n"))).unwrap();
    let out = run_on(&s, &args, 400);
    assert_eq!(out.status.code(), code, "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let again = walk(&recs, &stderr(&out));
    assert_eq!(again, whole, "{}", show(&out, &spec));
    let rerun = recs[4..]
        .iter()
        .filter(|r| r["type"] == "bench")
        .filter(|r| ["1", "2"].contains(&r["config"][STEPS].as_str().unwrap()))
        .count();
    assert_eq!(
        rerun,
        0,
        "values 1 and 2 measured again: {}",
        show(&out, &spec)
    );
    testkit::assert_lacks(&stderr(&out), "(config 1)");
    assert!(s.queue().is_empty());
}

/// The job directories (`job-ID`) the sweep's jobs made so far.
fn job_dirs(spec: &SpecFile) -> Vec<String> {
    let dir = format!("{}.slurm", spec.results().display());
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("job-"))
        .collect()
}

/// Ctrl-C while a search on Slurm runs its second value: that job is
/// cancelled (nothing left in squeue, no server left), its config gets an
/// interrupted record, the file is whole, exit 130; `--resume` then ends
/// the search where the same search ends uncut on one node, without
/// measuring the first value again.
#[test]
fn ctrl_c_during_a_search_on_slurm_cancels_its_job_and_resume_finishes_it() {
    let Some(s) = Slurm::start(1) else { return };
    let (local, url) = search_sim("slurm-search-ctrl-c-local");
    let out = search_args(&local, &url).output();
    let code = out.status.code();
    assert!(matches!(code, Some(0 | 40)), "{}", dump(&out));
    let uncut = walk(&records(&local.results()), &stderr(&out));
    let (spec, url) = search_sim("slurm-search-ctrl-c");
    let args = search_args(&spec, &url).args(&["--slurm", "--retries", "1"]);
    let child = spawn_on(&s, &args, &spec.dir);
    // Value 1 decided (both levels in the file), value 2's job started.
    let t0 = Instant::now();
    loop {
        let first = records(&spec.results())
            .iter()
            .filter(|r| r["type"] == "bench" && r["config"][STEPS] == "1")
            .count();
        if first == 2 && job_dirs(&spec).len() == 2 {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "no second job: {:?}",
            job_dirs(&spec)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    sweep_support::child::signal_group(&child, "INT");
    let out = wait_for(&s, child, 120, &spec.dir);
    assert_eq!(out.status.code(), Some(130), "{}", show(&out, &spec));
    assert!(s.queue().is_empty(), "{:?}", s.queue());
    assert_no_server_left(&spec.results());
    let recs = records(&spec.results()); // every line whole JSON
    let cut: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "interrupted").collect();
    assert_eq!(cut.len(), 1, "{recs:?}");
    assert_eq!(cut[0]["config"][STEPS], "2", "{}", cut[0]);
    let first_run = recs.len();
    let out = run_on(&s, &args.clone().arg("--resume"), 400);
    assert_eq!(out.status.code(), code, "{}", show(&out, &spec));
    let recs = records(&spec.results());
    assert_eq!(walk(&recs, &stderr(&out)), uncut, "{}", show(&out, &spec));
    let again = recs[first_run..]
        .iter()
        .filter(|r| r["type"] == "bench" && r["config"][STEPS] == "1")
        .count();
    assert_eq!(again, 0, "value 1 measured again: {}", show(&out, &spec));
    assert!(s.queue().is_empty());
    assert_no_server_left(&spec.results());
}
