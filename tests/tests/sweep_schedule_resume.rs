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
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::{dump, records, sweep_behind};
use testkit::nspawn::{self, Container};

/// The schedule record a bench record was measured under.
fn schedule_of(r: &Value) -> Option<&Value> {
    let mut u = r.get("upstream");
    while let Some(x) = u {
        if x["type"] == "schedule" {
            return Some(x);
        }
        u = x.get("upstream");
    }
    None
}

/// The ExecStart argv of the unit, as systemd reports it.
fn argv(c: &Container) -> String {
    let s = c.sh("systemctl show -P ExecStart sim.service");
    s.split("argv[]=")
        .nth(1)
        .and_then(|a| a.split(" ;").next())
        .unwrap_or_default()
        .to_string()
}

/// The sweep's words; `extra` last (the resumed run adds `--resume`).
fn args<'a>(c: &'a str, results: &'a str, n: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--unit",
        "sim",
        "--exec-prefix",
        c,
        "--url",
        "http://127.0.0.1:8000",
        "--server",
        "sglang",
        "--param",
        "speculative-num-steps",
        "--values",
        "2,4",
        "--concurrency",
        "1,16",
        "--schedule",
        "sglang",
        "--results",
        results,
        "--load-arg",
        "-n",
        "--load-arg",
        n,
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "64",
        "--load-arg",
        "--ignore-eos",
        "--swap-arg",
        "--wait",
        "--swap-arg",
        "20s",
    ];
    v.extend(extra);
    v
}

#[test]
fn a_schedule_step_cut_by_sigint_is_resumed_with_the_same_schedule_and_restored() {
    assert!(
        nspawn::unavailable().is_none(),
        "{:?}",
        nspawn::unavailable()
    );
    let bin = testkit::bin("llm-sim");
    let c = Container::boot(&[(bin.parent().unwrap(), "/opt/sweepkit/bin")]).expect("boot");
    let exec = "/opt/sweepkit/bin/llm-sim --host 127.0.0.1 --port 8000 --load-time 200ms \
                --warmup-time 100ms --seed 1 --speculative-algorithm EAGLE \
                --speculative-eagle-topk 1 --speculative-num-steps 1";
    c.write_file(
        "/etc/systemd/system/sim.service",
        &format!("[Unit]\nDescription=llm-sim\n[Service]\nExecStart={exec}\nTimeoutStopSec=5\n"),
    );
    c.sh("systemctl daemon-reload && systemctl start sim.service");
    let original = argv(&c);
    let pid = c.pid1.to_string();
    let netns = ["nsenter", "-t", pid.as_str(), "-n", "--"];
    let dir = testkit::temp_dir("sweep-sched-resume");
    let results = dir.join("results.jsonl");
    let res = results.to_str().unwrap();
    let prefix = c.exec_prefix();

    // 400 requests of 64 tokens at c=1: several seconds a level, so the
    // signal lands inside the schedule's first level. Its own process
    // group, as a terminal's foreground job.
    // stderr to a file: loadgen's lines would fill a pipe nobody reads yet.
    let log = dir.join("stderr");
    let mut child = sweep_behind(&netns, &args(&prefix, res, "400", &[]))
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
    std::thread::sleep(Duration::from_millis(2500));
    let pgid = child.id();
    Command::new("kill")
        .args(["-INT", "--", &format!("-{pgid}")])
        .status()
        .unwrap();
    let mut out = wait(child, Duration::from_secs(90));
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
    assert_eq!(argv(&c), original, "the original unit is back after Ctrl-C");

    // --resume: the grid is done; the same schedule runs to the end.
    let out = sweep_behind(&netns, &args(&prefix, res, "8", &["--resume"]))
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
    assert_eq!(argv(&c), original, "the original unit is back");
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

/// Wait for `child` at most `limit` (then kill its group and fail).
fn wait(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > limit {
            let g = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &g]).status();
            panic!("sweep did not end within {limit:?} after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    child.wait_with_output().unwrap()
}
