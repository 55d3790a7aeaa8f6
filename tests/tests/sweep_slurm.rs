//! `sweep --slurm` on a real Slurm 22.05 cluster (testkit::slurm: munged,
//! slurmctld and one or two slurmd on this machine, fake GPUs), llm-sim as
//! the server in each job. Needs `cargo build --workspace --bins`.

mod sweep_support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::slurm::*;
use sweep_support::{dump, records, SimExec, SweepArgs};
use testkit::slurm::Slurm;

/// The harness itself: a batch job whose step asks for two GPUs sees the
/// first two of its node's fake devices, as gres numbers them; once the
/// cluster is dropped, none of its processes is left.
#[test]
fn a_job_step_gets_the_gpus_its_gres_asks_for() {
    let Some(s) = Slurm::start(1) else { return };
    let script = s.dir.join("gpus.sh");
    std::fs::write(
        &script,
        "#!/bin/bash\nsrun --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES\n",
    )
    .unwrap();
    let out = s.dir.join("gpus.out");
    let o = format!("--output={}", out.display());
    let script = script.display().to_string();
    s.out("sbatch", &["--wait", "--gres=gpu:2", &o, &script]);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text, "0,1\n", "{text}");
    assert!(s.queue().is_empty());
    let dir = s.dir.clone();
    let daemons = testkit::slurm::left_behind(&dir);
    assert!(daemons.len() >= 3, "munged, slurmctld, slurmd: {daemons:?}");
    drop(s);
    let left = testkit::slurm::left_behind(&dir);
    assert!(left.is_empty(), "daemons or jobs left: {left:?}");
}

/// --dry-run prints the batch script (which shellcheck passes) and the
/// sbatch line, and submits nothing (no cluster is needed).
#[test]
fn dry_run_prints_the_batch_script_and_its_sbatch_line() {
    let (spec, url) = sim_spec("slurm-dry");
    let args = slurm_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .args(&["--partition", "gpu q", "--gres", "gpu:2", "--time", "5"])
        .args(&["--max-jobs", "1", "--sbatch-arg", "--qos=high", "--dry-run"])
        .arg("--exclusive");
    let out = args.expect(0);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    for part in [
        "#!/bin/bash",
        "1) set_=( --set speculative-num-steps=1 )",
        "2) set_=( --set speculative-num-steps=2 )",
        "--array=1\\,2%1",
        "--partition=gpu\\ q",
        "--gres=gpu:2 --time=5 --exclusive --signal=B:USR1@30",
        "--qos=high",
        "--no-requeue",
    ] {
        testkit::assert_contains(&text, part);
    }
    assert!(!spec.results().exists() || records(&spec.results()).is_empty());
    let script = spec.dir.join("dry.sbatch");
    let body: String = text.split("# the script above").next().unwrap().to_string();
    std::fs::write(&script, body).unwrap();
    let Ok(sc) = Command::new("shellcheck").arg(&script).output() else {
        testkit::skip("shellcheck not installed (make deps installs it)");
        return;
    };
    assert!(sc.status.success(), "{}", dump(&sc));
    // A cluster that rejects the gres directive: --gpus-per-node instead.
    let gpus =
        slurm_sweep(&spec, &url)
            .param(STEPS, "1")
            .args(&["--gpus-per-node", "2", "--dry-run"]);
    let text = String::from_utf8_lossy(&gpus.expect(0).stdout).into_owned();
    testkit::assert_contains(&text, " --gpus-per-node=2 ");
    testkit::assert_lacks(&text, "--gres");
}

/// --keep-winner with --slurm (no server outlives its job): one line
/// saying why, exit 2, nothing submitted. --adaptive and --schedule are
/// no longer refused (sweep_slurm_search.rs runs them).
#[test]
fn slurm_refuses_keep_winner_in_one_line() {
    let (spec, url) = sim_spec("slurm-refuse");
    let out = slurm_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .arg("--keep-winner")
        .expect(2);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    testkit::assert_contains(
        &err,
        "sweep: error: --keep-winner with --slurm: no server outlives its job",
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!spec.results().exists());
    // A systemd unit is no target on Slurm: the job runs a process spec.
    let res = spec.results();
    let out = sweep_support::SweepArgs::new()
        .args(&[
            "--unit",
            "sglang.service",
            "--url",
            &url,
            "--server",
            "llm-sim",
        ])
        .args(&["--results", res.to_str().unwrap(), "--slurm"])
        .param(STEPS, "1,2")
        .expect(2);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    testkit::assert_contains(
        &err,
        "sweep: error: --slurm runs the server from a process spec (--spec FILE)",
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(!res.exists());
    // The search and the schedule are planned, not refused.
    for (extra, says) in [
        (&["--adaptive"][..], "# --adaptive: the search submits only"),
        (
            &["--schedule", "sglang"],
            "array task 0 runs the derived schedule",
        ),
    ] {
        let out = slurm_sweep(&spec, &url)
            .param(STEPS, "1,2")
            .args(extra)
            .arg("--dry-run")
            .expect(0);
        testkit::assert_contains(&String::from_utf8_lossy(&out.stdout), says);
    }
}

/// A 2x2 grid at two levels on two nodes: one job per config, each
/// record names its job, array index, node, GPUs and Slurm's state, the
/// job's port stays out of the config, and no job or server is left.
#[test]
fn a_grid_of_four_configs_runs_as_four_jobs_at_two_levels() {
    let Some(s) = Slurm::start(2) else { return };
    let (spec, url) = sim_spec("slurm-grid");
    let args = slurm_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .param(MRR, "8,16")
        .args(&["--gres", "gpu:1"]);
    let t0 = Instant::now();
    let out = run_on(&s, &args, 240);
    eprintln!("grid of 4 on 2 nodes: {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let mut jobs = std::collections::BTreeSet::new();
    for (i, (steps, mrr)) in [("1", "8"), ("1", "16"), ("2", "8"), ("2", "16")]
        .iter()
        .enumerate()
    {
        let b: Vec<&Value> = benches(&recs, STEPS, steps)
            .into_iter()
            .filter(|r| r["config"][MRR] == *mrr)
            .collect();
        assert_eq!(b.len(), 2, "{steps}/{mrr}: {}", dump(&out));
        for r in &b {
            let j = slurm_of(r);
            assert_eq!(j["array_index"], i as u64 + 1, "{r}");
            assert_eq!(j["state"], "COMPLETED");
            // task/none: the node's own index of the one GPU it got.
            assert!(
                ["0", "1", "2", "3"].contains(&j["gpus"].as_str().unwrap()),
                "{j}"
            );
            assert!(j["node"] == "n1" || j["node"] == "n2", "{j}");
            assert_eq!(j["state_from"], "scontrol");
            assert!(j["port"].as_u64().is_some() && j["port_from"].is_string());
            assert!(r["config"].get("port").is_none(), "{r}");
            jobs.insert(j["job_id"].as_str().unwrap().to_string());
        }
    }
    assert_eq!(jobs.len(), 4, "one job per config");
    for r in &recs {
        sweep_support::records::conforms(r, "a --slurm record");
    }
    assert!(s.queue().is_empty());
    assert_no_server_left(&spec.results());
    testkit::assert_contains(&String::from_utf8_lossy(&out.stdout), "speculative");
    let dir = s.dir.clone();
    drop(s);
    let left = testkit::slurm::left_behind(&dir);
    assert!(left.is_empty(), "daemons or jobs left: {left:?}");
}

/// The server runs as a step of the config's job (srun --overlap) and
/// sees the GPUs the job's gres gave, which its records name; its stop
/// goes to the step (a TERM), never through srun (which would SIGKILL it).
#[test]
fn the_server_runs_as_a_job_step_with_the_gres_gpus() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-steps");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1")
        .levels("1")
        .args(&["--gres", "gpu:2"])
        .load(&["--duration", "3s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let job = wait_serving(&spec.results(), 1, Duration::from_secs(60))[0]
        .0
        .clone();
    let server = step_tasks(&job)
        .into_iter()
        .find(|(name, _, _)| name == "llm-sim");
    let steps = s.out("squeue", &["-h", "-s", "-j", &job, "-o", "%i %j"]);
    let out = wait_for(&s, child, 120, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let (_, step, gpus) = server.unwrap_or_else(|| panic!("no server step: {steps}"));
    assert!(step.parse::<u32>().is_ok(), "the server's step: {step}");
    // squeue names an array task's step ARRAY_TASK.STEP.
    testkit::assert_contains(&steps, &format!(".{step} sweep-server"));
    assert_eq!(gpus, "0,1", "the GPUs gres gave");
    let recs = records(&spec.results());
    let b = benches(&recs, STEPS, "1");
    assert_eq!(b.len(), 1, "{}", show(&out, &spec));
    assert_eq!(slurm_of(b[0])["gpus"], "0,1", "{}", b[0]);
    let log = spec.results().with_extension("jsonl.slurm");
    let log = std::fs::read_to_string(log.join(format!("job-{job}/server.spec.log"))).unwrap();
    testkit::assert_lacks(&log, "forcing job termination");
    assert!(s.queue().is_empty());
    assert_no_server_left(&spec.results());
}

/// Two jobs at once on one node take different ports (from their job
/// ids): both are measured, and their levels overlap in time.
#[test]
fn two_jobs_on_one_node_never_share_a_port() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-ports");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .args(&["--max-jobs", "2"])
        .load(&["--duration", "3s"]);
    let out = run_on(&s, &args, 180);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let first = |v: &str| benches(&recs, STEPS, v)[0].clone();
    let (a, b) = (first("1"), first("2"));
    assert_eq!(slurm_of(&a)["node"], "n1");
    assert_eq!(slurm_of(&b)["node"], "n1");
    assert_ne!(slurm_of(&a)["port"], slurm_of(&b)["port"], "{a}\n{b}");
    let span = |r: &Value| {
        let p = &r["provenance"];
        (
            p["started_at"].as_str().unwrap().to_string(),
            p["finished_at"].as_str().unwrap().to_string(),
        )
    };
    let ((a0, a1), (b0, b1)) = (span(&a), span(&b));
    assert!(
        a0 < b1 && b0 < a1,
        "the jobs ran one after the other: {a0}..{a1}, {b0}..{b1}"
    );
}

/// A cluster whose slurmctld does not answer (here: one that was shut
/// down, its slurm.conf still named by SLURM_CONF): one line saying so,
/// exit 47, before any record is written or any job submitted.
#[test]
fn a_controller_that_does_not_answer_is_refused_before_anything_is_written() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-down");
    let conf = spec.dir.join("slurm.conf");
    std::fs::copy(&s.conf, &conf).unwrap();
    drop(s);
    let args = slurm_sweep(&spec, &url).param(STEPS, "1,2");
    let mut c = args.behind(&["timeout", "60"]);
    let out = c.env("SLURM_CONF", &conf).output().unwrap();
    assert_eq!(out.status.code(), Some(47), "{}", dump(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    testkit::assert_contains(
        errors[0],
        "sweep: error: slurmctld does not answer `scontrol ping` (",
    );
    testkit::assert_contains(
        errors[0],
        "is DOWN); point SLURM_CONF at your cluster's slurm.conf",
    );
    // Regression (issue 47): an empty results file was left behind.
    assert!(!spec.results().exists(), "no results file");
    // A SLURM_CONF that names no file: at once, not after Slurm's own
    // minute of retries.
    let none = spec.dir.join("none.conf");
    let t0 = Instant::now();
    let mut c = args.behind(&["timeout", "60"]);
    let out = c.env("SLURM_CONF", &none).output().unwrap();
    assert_eq!(out.status.code(), Some(47), "{}", dump(&out));
    assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
    testkit::assert_contains(
        &String::from_utf8_lossy(&out.stderr),
        &format!(
            "sweep: error: SLURM_CONF names {}, which does not exist",
            none.display()
        ),
    );
}

/// An unknown partition or a gres the cluster lacks: sbatch's own line
/// in each config's failure record and on stderr, exit 46, and nothing in
/// the queue.
#[test]
fn an_unknown_partition_is_sbatchs_refusal_and_nothing_is_submitted() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-partition");
    let args = slurm_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .args(&["--partition", "nosuch"]);
    let out = run_on(&s, &args, 60);
    assert_eq!(out.status.code(), Some(46), "{}", show(&out, &spec));
    let err = String::from_utf8_lossy(&out.stderr);
    testkit::assert_contains(
        &err,
        "sweep: error: sbatch refused the job: sbatch: error: invalid partition specified: nosuch",
    );
    // Regression (issue 47): a summary of nothing followed, with an
    // error of its own; nothing was submitted, so no table.
    let errors: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "no table");
    let recs = records(&spec.results());
    assert_eq!(recs.len(), 2, "{recs:?}");
    for r in &recs {
        assert_eq!(r["kind"], "submit_rejected");
        assert_eq!(r["class"], "transport");
        testkit::assert_contains(
            r["reason"].as_str().unwrap(),
            "invalid partition specified: nosuch",
        );
    }
    assert!(s.queue().is_empty());
    // A gres the cluster lacks: sbatch's own words again (--resume, as
    // the line says: the file holds this sweep's origin).
    let more = slurm_sweep(&spec, &url)
        .param(STEPS, "3")
        .args(&["--gres", "gpu:9", "--resume"]);
    let out = run_on(&s, &more, 60);
    assert_eq!(out.status.code(), Some(46), "{}", show(&out, &spec));
    let last = records(&spec.results()).pop().unwrap();
    assert_eq!(last["kind"], "submit_rejected");
    testkit::assert_contains(
        last["reason"].as_str().unwrap(),
        "Requested node configuration is not available",
    );
    assert!(s.queue().is_empty());
}

/// A config still pending at --queue-timeout is cancelled and recorded
/// as queue_timeout, not a result (exit 43); the one that ran stands.
#[test]
fn a_job_pending_past_the_queue_timeout_is_cancelled_not_a_result() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-queue");
    // gpu:4 is the whole node: the second config waits for the first
    // (20 s), past the timeout, which the first meets with room to
    // spare on a busy machine.
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .levels("1")
        .args(&["--gres", "gpu:4", "--queue-timeout", "8s"])
        .load(&["--duration", "20s"]);
    let out = run_on(&s, &args, 120);
    assert_eq!(out.status.code(), Some(43), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let late: Vec<&Value> = recs
        .iter()
        .filter(|r| r["kind"] == "queue_timeout")
        .collect();
    assert_eq!(late.len(), 1, "{recs:?}");
    assert_eq!(late[0]["class"], "transport");
    assert_eq!(slurm_of(late[0])["state"], "CANCELLED");
    // Regression (issue 47): "slurmctld purged the job's record", state
    // EXPIRED, though sweep had cancelled it itself.
    let why = late[0]["reason"].as_str().unwrap();
    testkit::assert_contains(why, "cancelled by sweep");
    testkit::assert_lacks(why, "purged");
    let ran = late[0]["config"][STEPS].as_str().unwrap() == "2";
    assert!(ran, "the second config waited: {recs:?}");
    assert_eq!(benches(&recs, STEPS, "1").len(), 1);
    assert!(s.queue().is_empty());
}

/// A time limit hit while loadgen measures: the job is warned ahead of it
/// (USR1), loadgen writes the level it was measuring as a partial record,
/// and a time_limit failure record with the config says Slurm's TIMEOUT.
#[test]
fn a_time_limit_hit_during_load_is_a_timeout_record_with_its_config() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-timeout");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "2")
        .levels("1")
        .args(&["--time", "1", "--flush-before", "25s"])
        .load(&["--duration", "300s"]);
    let t0 = Instant::now();
    let out = run_on(&s, &args, 200);
    eprintln!("time limit: {:?}", t0.elapsed());
    assert_eq!(out.status.code(), Some(41), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let partial = benches(&recs, STEPS, "2");
    assert_eq!(partial.len(), 1, "{}", show(&out, &spec));
    assert_eq!(partial[0]["partial"], true);
    assert!(partial[0]["counts"]["completed"].as_u64().unwrap() > 0);
    assert_eq!(slurm_of(partial[0])["state"], "TIMEOUT");
    let f = recs.last().unwrap();
    assert_eq!(f["type"], "failure");
    assert_eq!(f["kind"], "time_limit");
    assert_eq!(f["class"], "config");
    assert_eq!(f["config"][STEPS], "2");
    assert_eq!(slurm_of(f)["state"], "TIMEOUT");
    testkit::assert_contains(f["reason"].as_str().unwrap(), "1 cut short");
    sweep_support::records::conforms(f, "a time_limit record");
    assert_no_server_left(&spec.results());
}

/// A job cancelled from outside mid-bench: a cancelled record (Slurm's
/// CANCELLED), then the config runs again and is measured.
#[test]
fn a_job_cancelled_from_outside_mid_bench_is_retried() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-cancel");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "3")
        .levels("1")
        .load(&["--duration", "4s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let jobs = wait_serving(&spec.results(), 1, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500)); // loadgen is measuring
    s.out("scancel", &[&jobs[0].0]);
    let out = wait_for(&s, child, 120, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let f: Vec<&Value> = recs.iter().filter(|r| r["type"] == "failure").collect();
    assert_eq!(f.len(), 1, "{recs:?}");
    assert_eq!(f[0]["kind"], "cancelled");
    assert_eq!(slurm_of(f[0])["state"], "CANCELLED");
    assert_eq!(slurm_of(f[0])["job_id"], jobs[0].0.as_str());
    let last = recs.last().unwrap();
    assert_eq!(last["type"], "bench");
    assert_eq!(last["partial"], false);
    assert_eq!(slurm_of(last)["state"], "COMPLETED");
    assert_ne!(slurm_of(last)["job_id"], jobs[0].0.as_str(), "a new job");
    assert!(s.queue().is_empty());
}

/// Ctrl-C: every job of the sweep is cancelled, what they measured is
/// kept with an interrupted record each, the file is whole, exit 130.
#[test]
fn ctrl_c_cancels_every_job_and_keeps_the_file_whole() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-ctrl-c");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1,2,3")
        .args(&["--max-jobs", "2"])
        .levels("1")
        .load(&["--duration", "60s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    wait_serving(&spec.results(), 2, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    sweep_support::child::signal_group(&child, "INT");
    let out = wait_for(&s, child, 60, &spec.dir);
    assert_eq!(out.status.code(), Some(130), "{}", show(&out, &spec));
    assert!(s.queue().is_empty(), "{:?}", s.queue());
    let recs = records(&spec.results()); // every line whole JSON
    let interrupted = recs.iter().filter(|r| r["kind"] == "interrupted").count();
    assert_eq!(interrupted, 3, "two running, one pending: {recs:?}");
    // Regression (issue 47): an interruption was the config's fault.
    for r in recs.iter().filter(|r| r["kind"] == "interrupted") {
        assert_eq!(r["class"], "transport", "{r}");
    }
    let partial = recs.iter().filter(|r| r["partial"] == true).count();
    assert_eq!(partial, 2, "the running levels kept: {recs:?}");
    assert_no_server_left(&spec.results());
}

/// Regression (issue 47): a SIGHUP (the SSH session to the login node
/// dropped) ended sweep at once (exit 129) with its jobs still queued, a
/// leftover child cancelling them later, and no table. It is an
/// interrupt as Ctrl-C is: every job cancelled and collected, the table,
/// exit 130.
#[test]
fn a_hangup_cancels_every_job_as_ctrl_c_does() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-hup");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .args(&["--max-jobs", "1"])
        .levels("1")
        .load(&["--duration", "60s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    wait_serving(&spec.results(), 1, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1500));
    sweep_support::child::signal_group(&child, "HUP");
    let out = wait_for(&s, child, 60, &spec.dir);
    assert_eq!(out.status.code(), Some(130), "{}", show(&out, &spec));
    assert!(s.queue().is_empty(), "{:?}", s.queue());
    let recs = records(&spec.results());
    let interrupted = recs.iter().filter(|r| r["kind"] == "interrupted").count();
    assert_eq!(interrupted, 2, "one running, one pending: {recs:?}");
    testkit::assert_contains(&String::from_utf8_lossy(&out.stdout), "speculative");
    assert_no_server_left(&spec.results());
}

/// Regression (issue 47): the Slurm path wrote no origin record, so a
/// second sweep on a finished results file was accepted and merged both
/// runs into medians of two. It is refused as without --slurm, nothing
/// submitted; --append adds to it on purpose.
#[test]
fn a_second_slurm_sweep_on_the_same_results_is_refused_unless_resume_or_append() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-twice");
    let args = slurm_sweep(&spec, &url).param(STEPS, "1").levels("1");
    let out = run_on(&s, &args, 120);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let all = sweep_support::all_records(&spec.results());
    assert_eq!(all[0]["type"], "origin", "{all:?}");
    assert_eq!(all[0]["config"][STEPS], "1", "the spec's own value");
    let before = std::fs::read_to_string(spec.results()).unwrap();
    let out = run_on(&s, &args, 60);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out, &spec));
    let err = String::from_utf8_lossy(&out.stderr);
    testkit::assert_contains(&err, "already holds a sweep started at");
    testkit::assert_contains(&err, "--resume to continue it, or a new --results");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(std::fs::read_to_string(spec.results()).unwrap(), before);
    assert!(s.queue().is_empty());
    let out = run_on(&s, &args.arg("--append"), 120);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    assert_eq!(benches(&records(&spec.results()), STEPS, "1").len(), 2);
}

/// Regression (issue 47): `--resume` after the sweep itself was killed
/// (SIGKILL, a lost login node) submitted every config again while the
/// old jobs ran on, and their records never reached the results file.
/// It takes over the job still running, collects the one that ended
/// unseen, and submits nothing: one measurement per config.
#[test]
fn resume_after_a_killed_sweep_takes_over_its_jobs_and_collects_them() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-adopt");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .args(&["--max-jobs", "1"])
        .levels("1")
        .load(&["--duration", "4s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let first = wait_serving(&spec.results(), 1, Duration::from_secs(60));
    sweep_support::child::signal_group(&child, "KILL");
    let _ = wait_for(&s, child, 10, &spec.dir);
    // The first job ends unseen; the second starts.
    let t0 = Instant::now();
    while !s.queue().iter().any(|j| j.ends_with("_2")) || s.queue().len() != 1 {
        assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", s.queue());
        std::thread::sleep(Duration::from_millis(200));
    }
    let out = run_on(&s, &args.clone().arg("--resume"), 120);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let err = String::from_utf8_lossy(&out.stderr);
    testkit::assert_lacks(&err, "submitted array job");
    testkit::assert_contains(&err, "this sweep takes it over");
    testkit::assert_contains(&err, &format!("job {} of an earlier sweep", first[0].0));
    let recs = records(&spec.results());
    for v in ["1", "2"] {
        let b = benches(&recs, STEPS, v);
        assert_eq!(
            b.len(),
            1,
            "config {v} measured once: {}",
            show(&out, &spec)
        );
        assert_eq!(slurm_of(b[0])["state"], "COMPLETED");
    }
    assert_eq!(
        slurm_of(benches(&recs, STEPS, "1")[0])["job_id"],
        first[0].0.as_str()
    );
    assert!(s.queue().is_empty());
}

/// --resume submits only the configs without a result.
#[test]
fn resume_submits_only_what_is_missing() {
    let Some(s) = Slurm::start(1) else { return };
    let (spec, url) = sim_spec("slurm-resume");
    let out = run_on(&s, &slurm_sweep(&spec, &url).param(STEPS, "1"), 120);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let before = benches(&records(&spec.results()), STEPS, "1").len();
    let args = slurm_sweep(&spec, &url).param(STEPS, "1,2").arg("--resume");
    let out = run_on(&s, &args, 120);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    testkit::assert_contains(&String::from_utf8_lossy(&out.stderr), "(config 2)");
    let recs = records(&spec.results());
    assert_eq!(
        benches(&recs, STEPS, "1").len(),
        before,
        "config 1 not run again"
    );
    assert_eq!(benches(&recs, STEPS, "2").len(), 2);
}

/// A node dies mid-bench (its slurmd and everything of its jobs killed):
/// Slurm fails the job NODE_FAIL, and the config runs again on the other
/// node.
#[test]
fn a_node_failure_is_retried_on_the_other_node() {
    let Some(mut s) = Slurm::start(2) else { return };
    let (spec, url) = sim_spec("slurm-node-fail");
    // gpu:4 takes a whole node: the two configs land on both nodes.
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "1,2")
        .args(&["--gres", "gpu:4"])
        .levels("1")
        .load(&["--duration", "5s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let jobs = wait_serving(&spec.results(), 2, Duration::from_secs(60));
    let (dead_job, _, dead) = jobs[0].clone();
    s.kill_node(&dead);
    let out = wait_for(&s, child, 150, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let f: Vec<&Value> = recs.iter().filter(|r| r["kind"] == "node_fail").collect();
    assert_eq!(f.len(), 1, "{recs:?}");
    assert_eq!(slurm_of(f[0])["state"], "NODE_FAIL");
    assert_eq!(slurm_of(f[0])["job_id"], dead_job.as_str());
    assert_eq!(f[0]["class"], "transport");
    let steps = f[0]["config"][STEPS].as_str().unwrap();
    let again = benches(&recs, STEPS, steps);
    let whole: Vec<&&Value> = again.iter().filter(|r| r["partial"] == false).collect();
    assert_eq!(whole.len(), 1, "{recs:?}");
    assert_ne!(
        slurm_of(whole[0])["node"],
        dead.as_str(),
        "run on the other node"
    );
    assert_eq!(
        s.node_states()
            .iter()
            .filter(|(_, st)| st.starts_with("down"))
            .count(),
        1
    );
}

/// A job preempted by a higher-priority partition's job (Slurm ends it
/// PREEMPTED): a `preempted` record of class transport, and once the
/// urgent job is done the config runs again, on the same node: unlike a
/// node failure, a preemption says nothing against the node.
#[test]
fn a_preempted_job_is_retried_and_its_node_kept() {
    let preempt = testkit::slurm::Options {
        preempt: true,
        ..Default::default()
    };
    let Some(s) = Slurm::start_with(1, preempt) else {
        return;
    };
    let (spec, url) = sim_spec("slurm-preempt");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "2")
        .args(&["--gres", "gpu:4"])
        .levels("1")
        .load(&["--duration", "4s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let jobs = wait_serving(&spec.results(), 1, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1000)); // loadgen is measuring
    let urgent = format!("--partition={}", s.urgent.as_deref().unwrap());
    let log = format!("--output={}", s.dir.join("urgent.out").display());
    s.out(
        "sbatch",
        &[&urgent, "--gres=gpu:4", &log, "--wrap", "sleep 3"],
    );
    let out = wait_for(&s, child, 150, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    let f: Vec<&Value> = recs.iter().filter(|r| r["type"] == "failure").collect();
    assert_eq!(f.len(), 1, "{recs:?}");
    assert_eq!(f[0]["kind"], "preempted");
    assert_eq!(f[0]["class"], "transport");
    assert_eq!(f[0]["config"][STEPS], "2");
    assert_eq!(slurm_of(f[0])["state"], "PREEMPTED");
    assert_eq!(slurm_of(f[0])["job_id"], jobs[0].0.as_str());
    let whole: Vec<&Value> = benches(&recs, STEPS, "2")
        .into_iter()
        .filter(|r| r["partial"] == false)
        .collect();
    assert_eq!(whole.len(), 1, "{recs:?}");
    assert_eq!(slurm_of(whole[0])["state"], "COMPLETED");
    assert_eq!(slurm_of(whole[0])["node"], jobs[0].2.as_str());
    assert_ne!(
        slurm_of(whole[0])["job_id"],
        jobs[0].0.as_str(),
        "a new job"
    );
    assert!(s.queue().is_empty(), "{:?}", s.queue());
    assert_no_server_left(&spec.results());
}

/// sweep stopped (SIGSTOP) while its job ends, long enough for slurmctld
/// to purge the job (MinJobAge=2; it purges every 60 s): scontrol no
/// longer knows it, this cluster keeps no accounting for sacct, so the
/// state is sweep's own EXPIRED and the job's records decide: the
/// measured config stands, nothing is submitted again.
#[test]
fn a_job_purged_before_sweep_read_its_end_is_decided_by_its_records() {
    let quick_purge = testkit::slurm::Options {
        min_job_age_s: 2,
        ..Default::default()
    };
    let Some(s) = Slurm::start_with(1, quick_purge) else {
        return;
    };
    let (spec, url) = sim_spec("slurm-purged");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "2")
        .levels("1")
        .load(&["--duration", "2s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let jobs = wait_serving(&spec.results(), 1, Duration::from_secs(60));
    sweep_support::child::signal_group(&child, "STOP");
    let t0 = Instant::now();
    let purged = loop {
        let o = s
            .cmd("scontrol")
            .args(["show", "job", &jobs[0].0])
            .output()
            .unwrap();
        if !o.status.success() {
            break true;
        }
        if t0.elapsed() > Duration::from_secs(150) {
            break false;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    sweep_support::child::signal_group(&child, "CONT");
    assert!(purged, "slurmctld kept job {} for 150 s", jobs[0].0);
    let out = wait_for(&s, child, 60, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    assert!(recs.iter().all(|r| r["type"] != "failure"), "{recs:?}");
    let b = benches(&recs, STEPS, "2");
    assert_eq!(b.len(), 1, "measured once, not submitted again: {recs:?}");
    assert_eq!(b[0]["partial"], false);
    assert_eq!(slurm_of(b[0])["state"], "EXPIRED");
    assert_eq!(slurm_of(b[0])["state_from"], "sweep");
    assert_eq!(slurm_of(b[0])["job_id"], jobs[0].0.as_str());
}

/// A job Slurm requeues (`--sbatch-arg --requeue`, then `scontrol
/// requeue` mid-bench) starts over in the same job: the records of its
/// first run move aside, the config is measured once, and its record says
/// the restart (SLURM_RESTART_COUNT). Slurm holds a requeued job back for
/// the credential's life (`AuthInfo=cred_expire`, 120 s by default; 10 s
/// on this cluster) and starts it again itself: forcing it sooner
/// (`scontrol update StartTime=now`) races slurmd, which refuses the
/// revoked credential and ends the job FAILED.
#[test]
fn a_requeued_job_starts_over_and_its_record_says_so() {
    let quick_requeue = testkit::slurm::Options {
        cred_expire_s: 10,
        ..Default::default()
    };
    let Some(s) = Slurm::start_with(1, quick_requeue) else {
        return;
    };
    let (spec, url) = sim_spec("slurm-requeue");
    let args = timed_sweep(&spec, &url)
        .param(STEPS, "2")
        .args(&["--sbatch-arg", "--requeue"])
        .levels("1")
        .load(&["--duration", "3s"]);
    let child = spawn_on(&s, &args, &spec.dir);
    let jobs = wait_serving(&spec.results(), 1, Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(1000)); // loadgen is measuring
    s.out("scontrol", &["requeue", &jobs[0].0]);
    let out = wait_for(&s, child, 150, &spec.dir);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    let recs = records(&spec.results());
    assert!(recs.iter().all(|r| r["type"] != "failure"), "{recs:?}");
    let b = benches(&recs, STEPS, "2");
    assert_eq!(b.len(), 1, "measured once: {recs:?}");
    assert_eq!(b[0]["partial"], false);
    let job = slurm_of(b[0]);
    assert_eq!(job["job_id"], jobs[0].0.as_str(), "the same job");
    assert_eq!(job["restart_count"], 1, "{job}");
    assert_eq!(job["state"], "COMPLETED");
    assert!(s.queue().is_empty(), "{:?}", s.queue());
    assert_no_server_left(&spec.results());
}

/// Regression (issue 47): with --slurm a misspelt --param was submitted
/// (every job failed at its start, exit 41) and a --param the launch line
/// lacks was added to every job's server (exit 0), where a plain sweep
/// refuses both before its first stop. The newcomer's mistakes meet one
/// refusal on every path: here, a pool's host, --slurm, and the dry run
/// of each; the same line, exit 2, no results file, nothing submitted.
#[test]
fn a_newcomer_s_mistakes_are_refused_alike_on_every_path() {
    let Some(s) = Slurm::start(1) else { return };
    // llm-sim without --max-running-requests on its line.
    let (spec, url) = SimExec::free().eagle(1).spec("slurm-newcomer");
    let base = || {
        SweepArgs::on_spec(&spec, &url, "llm-sim")
            .levels("1")
            .load(&["-n", "2", "--warmup", "0", "--max-tokens", "8"])
    };
    let paths: [(&str, &[&str]); 6] = [
        ("here", &[]),
        ("here, dry run", &["--dry-run"]),
        ("pool", &["--hosts", "-"]),
        ("pool, dry run", &["--hosts", "-", "--dry-run"]),
        ("slurm", &["--slurm"]),
        ("slurm, dry run", &["--slurm", "--dry-run"]),
    ];
    for (key, says) in [
        (
            "speculative-num-step",
            "sweep: error: --param speculative-num-step: the launch line has no --speculative-num-step (closest: --speculative-num-steps); fix the name, or give --param-new speculative-num-step to add the flag (the target was not touched)\n",
        ),
        (
            MRR,
            "sweep: error: --param max-running-requests: the launch line has no --max-running-requests; fix the name, or give --param-new max-running-requests to add the flag (the target was not touched)\n",
        ),
    ] {
        for (path, words) in paths {
            let args = base().param(key, "2,3").args(words);
            let out = run_on(&s, &args, 60);
            let what = format!("{key} on path {path}: {}", show(&out, &spec));
            assert_eq!(out.status.code(), Some(2), "{what}");
            assert_eq!(String::from_utf8_lossy(&out.stderr), says, "{what}");
            assert!(!spec.results().exists(), "no results file: {what}");
            assert!(s.queue().is_empty(), "nothing submitted: {what}");
        }
    }
    // Declared new, it is added on every path alike.
    let out = run_on(&s, &base().param_new(MRR, "8").arg("--slurm"), 120);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out, &spec));
    assert_eq!(benches(&records(&spec.results()), MRR, "8").len(), 1);
}
