//! `sweep --schedule sglang` against a systemd unit in a throw-away
//! container (testkit::nspawn; every far-side command through the
//! command-prefix transport, the adaptive config copied in through it),
//! llm-sim as the server, interrupted by SIGINT (Ctrl-C: the whole process
//! group) in the middle of the schedule's benchmark pass, then resumed:
//! the interrupted run ends 130 with the schedule's cut-short record and
//! the original unit back; `--resume` applies the same schedule record
//! (not derived again from a file that now holds more), measures it to the
//! end, and restores the original config again.
//! Needs `cargo build --workspace` first.

mod sweep_support;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::child::{signal_group, wait_within};
use sweep_support::sim::{boot, require_nspawn};
use sweep_support::{dump, fleet, records, upstream_of, SimExec, SweepArgs};
use testkit::nspawn::Container;

/// The schedule record a bench record was measured under.
fn schedule_of(r: &Value) -> Option<&Value> {
    upstream_of(r.get("upstream")?, "schedule")
}

/// The ExecStart argv of the unit, as systemd reports it.
fn argv(c: &Container) -> String {
    fleet::argv(&c.sh("systemctl show -P ExecStart sim.service")).unwrap_or_default()
}

/// The tokens the running server generated (SGLang's /metrics,
/// `--enable-metrics`); 0 when none answers (restarting).
fn tokens_generated(c: &Container) -> f64 {
    let text = c.sh("curl -s http://127.0.0.1:8000/metrics; true");
    text.lines()
        .filter(|l| l.starts_with("sglang:generation_tokens_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// The sweep's words; `extra` last (the resumed run adds `--resume`).
fn args(c: &str, results: &Path, n: &str, extra: &[&str]) -> SweepArgs {
    SweepArgs::new()
        .args(&["--unit", "sim", "--exec-prefix", c])
        .args(&["--url", "http://127.0.0.1:8000", "--server", "sglang"])
        .param("speculative-num-steps", "2,4")
        .levels("1,16")
        .args(&["--schedule", "sglang"])
        .results(results)
        .quick(n, "64")
        .load(&["--ignore-eos"])
        .swap_wait()
        .args(extra)
}

#[test]
fn a_schedule_step_cut_by_sigint_is_resumed_with_the_same_schedule_and_restored() {
    require_nspawn();
    let c = boot();
    // The swept flag stands mid-line: the restores below must give back
    // the very line, not one with the flag moved to the end (applying the
    // schedule once removed and re-appended it).
    SimExec::in_container(8000)
        .flags("--speculative-num-steps 1 --speculative-algorithm EAGLE --speculative-eagle-topk 1 --enable-metrics")
        .install(&c, "TimeoutStopSec=5\n");
    let original = argv(&c);
    let pid = c.pid1.to_string();
    let netns = ["nsenter", "-t", pid.as_str(), "-n", "--"];
    let dir = testkit::temp_dir("sweep-sched-resume");
    let results = dir.join("results.jsonl");
    let prefix = c.exec_prefix();

    // 400 requests of 64 tokens at c=1: several seconds a level, so the
    // signal lands inside the schedule's first level. Its own process
    // group, as a terminal's foreground job.
    // stderr to a file: loadgen's lines would fill a pipe nobody reads yet.
    let log = dir.join("stderr");
    let mut child = args(&prefix, &results, "400", &[])
        .behind(&netns)
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // The schedule is derived (its record in the file) and the unit runs it.
    while !(records(&results).iter().any(|r| r["type"] == "schedule")
        && argv(&c).contains("--speculative-adaptive"))
    {
        assert!(t0.elapsed() < Duration::from_secs(300), "no schedule step");
        assert!(child.try_wait().unwrap().is_none(), "sweep ended early");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The signal lands inside the schedule's first level: once the
    // restarted server (its counters seen low first: a new process) has
    // generated 256 tokens, past wait-ready's one-token health probes and
    // loadgen's one 64-token warm-up request, so some of the level's own
    // requests are done (an event, where a fixed 2.5 s sleep was a guess
    // at this shared machine's speed, and "a request running" also fired
    // during the warm-up).
    let mut fresh = false;
    loop {
        let n = tokens_generated(&c);
        fresh |= n < 256.0;
        if fresh && n >= 256.0 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(300), "no level started");
        assert!(child.try_wait().unwrap().is_none(), "sweep ended early");
        std::thread::sleep(Duration::from_millis(100));
    }
    signal_group(&child, "INT");
    let mut out = wait_within(child, Duration::from_secs(90), None);
    out.stderr = std::fs::read(&log).unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let recs = records(&results);
    let derived: Vec<&Value> = recs.iter().filter(|r| r["type"] == "schedule").collect();
    assert_eq!(derived.len(), 1, "{}", dump(&out));
    let cut: Vec<&Value> = recs.iter().filter(|r| schedule_of(r).is_some()).collect();
    assert_eq!(
        cut.len(),
        1,
        "one record of the schedule, cut short: {}",
        dump(&out)
    );
    assert_eq!(
        (&cut[0]["type"], &cut[0]["partial"]),
        (&"bench".into(), &true.into())
    );
    assert_eq!(argv(&c), original, "the original line is back after Ctrl-C");

    // --resume: the grid is done; the same schedule runs to the end.
    let out = args(&prefix, &results, "8", &["--resume"])
        .behind(&netns)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("deriving"), "derived again: {err}");
    assert!(err.contains("[schedule]"), "{err}");
    let recs = records(&results);
    assert_eq!(recs.iter().filter(|r| r["type"] == "schedule").count(), 1);
    let done: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "bench" && r["partial"] == false)
        .filter(|r| schedule_of(r).is_some())
        .collect();
    assert_eq!(done.len(), 2, "both levels of the schedule: {}", dump(&out));
    for r in &done {
        assert_eq!(schedule_of(r), Some(derived[0]), "the same schedule record");
    }
    assert_eq!(
        argv(&c),
        original,
        "the original line is back, word for word"
    );
    assert_eq!(
        c.sh("systemctl is-active sim.service; true").trim(),
        "active"
    );
    // The table shows the schedule as its own row.
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("schedule (sglang)") && table.contains("vs best static"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
