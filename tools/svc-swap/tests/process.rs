//! svc-swap's process manager against a real llm-sim on 127.0.0.1: swaps,
//! a SIGTERM-ignoring server, rollback, restore, bad input, injection
//! attempts, and SIGKILL of svc-swap mid-write. Needs `cargo build -p llm-sim`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::SimSpec;
use testkit::{alive, Run};

mod support;

fn swap(args: &[&str], stdin: &str) -> Run {
    support::swap_with(&[], args, stdin)
}

/// A spec for llm-sim on a fresh port (a comment, a section header, a
/// continued line, an environment value with a space), in a directory
/// whose name would run commands if anything spliced it into a shell.
fn fixture(tag: &str, extra: &str, timeout_stop: &str) -> SimSpec {
    SimSpec::write(tag, Some("a b $(touch PWNED) 'q"), |sim, port| {
        format!(
            "# test spec\n[Service]\nExecStart={sim} --host 127.0.0.1 --port {port} \\\n  --load-time 10ms --warmup-time 10ms --speculative-algorithm EAGLE \\\n  --speculative-eagle-topk 1 --speculative-num-steps 1{extra}\n\
             Environment=SIM_TAG=\"x y\"\nTimeoutStopSec={timeout_stop}\nPort={port}\n"
        )
    })
}

fn assert_no_injection(f: &SimSpec) {
    testkit::assert_no_pwned(&[f.dir.as_path(), f.dir.parent().unwrap(), Path::new(".")]);
}

#[test]
fn swap_restart_restore_against_llm_sim() {
    let f = fixture("swap", "", "10");
    // Nothing running yet: already_stopped, then started with the new value.
    let r = f.swap(&["--set", "speculative-num-steps=2"]);
    let rec = r.expect_one(0);
    assert_eq!(rec["type"], "swap");
    assert_eq!(rec["stop"]["result"], "already_stopped");
    assert_eq!(rec["config"]["speculative-num-steps"], "2");
    assert_eq!(rec["method"], "spec");
    let pid1 = rec["start"]["main_pid"].as_u64().unwrap() as u32;
    assert_eq!(rec["start"]["cmdline_verified"], true, "{rec}");
    assert_eq!(f.server_info()["speculative_num_steps"], 2);
    assert!(
        f.text().contains("--speculative-num-steps 2"),
        "{}",
        f.text()
    );

    // A real swap: clean stop of pid1, new PID, new value live.
    let r = f.swap(&testkit::words(
        "--set --speculative-num-steps=4 --set max-running-requests=7",
    ));
    let rec = r.expect_one(0);
    assert_eq!(rec["stop"]["result"], "clean", "{rec}");
    assert_eq!(rec["stop"]["old_main_pid"], pid1);
    // Issue 21: the record was finished before its own start began.
    // RFC 3339 UTC stamps of one format compare as text.
    let (started, finished) = (
        rec["start"]["started_at"]
            .as_str()
            .expect("start.started_at"),
        rec["provenance"]["finished_at"].as_str().unwrap(),
    );
    assert!(
        rec["provenance"]["started_at"].as_str().unwrap() <= started && started <= finished,
        "provenance {} .. {finished}, start {started}",
        rec["provenance"]["started_at"]
    );
    // This instance's log lines begin at start.log_offset: before it, the
    // first instance's lines; from it, none of them.
    f.server_info();
    let off = rec["start"]["log_offset"].as_u64().expect("log_offset") as usize;
    let log = f.log();
    assert!(off > 0 && off < log.len(), "offset {off} of {}", log.len());
    assert!(log[off..].contains("max_running_requests") || log[off..].contains("SIMULATED"));
    assert!(!log[off..].contains("received SIGTERM"), "{}", &log[off..]);
    assert!(log[..off].contains("received SIGTERM") || log[..off].contains("SIMULATED"));
    assert!(!alive(pid1), "old PID still there");
    let ch = &rec["changes"];
    assert_eq!(
        (
            ch[0]["flag"].as_str(),
            ch[0]["old"].as_str(),
            ch[0]["new"].as_str()
        ),
        (Some("--speculative-num-steps"), Some("2"), Some("4"))
    );
    assert_eq!(ch[1]["old"], Value::Null);
    let info = f.server_info();
    assert_eq!(
        (
            info["speculative_num_steps"].as_u64(),
            info["max_running_requests"].as_u64()
        ),
        (Some(4), Some(7))
    );
    let backup = rec["backup"].as_str().unwrap();
    assert!(std::fs::read_to_string(backup)
        .unwrap()
        .contains("--speculative-num-steps 2"));

    // --restore: the backup goes back, the old value runs again.
    let r = f.swap(&["--restore", "--gpu"]);
    let rec = r.expect_one(0);
    assert_eq!(rec["method"], "restore");
    let has_smi = Command::new("sh")
        .args(["-c", "command -v nvidia-smi"])
        .output()
        .unwrap()
        .status
        .success();
    if !has_smi {
        assert_eq!(rec["stop"]["gpu"], "skipped: nvidia-smi not found", "{rec}");
    }
    assert_eq!(rec["config"]["speculative-num-steps"], "2", "{rec}");
    assert_eq!(f.server_info()["speculative_num_steps"], 2);
    assert!(!Path::new(backup).exists(), "restored backup is consumed");
    assert!(
        f.log().contains("llm-sim") || !f.log().is_empty(),
        "log file written"
    );
}

#[test]
fn ignore_sigterm_needs_force_kill_and_reports_it() {
    let f = fixture("sigterm", " --ignore-sigterm 60s", "0.5");
    f.swap(&["--set", "speculative-num-steps=2"]).expect_code(0);
    f.server_info();
    let old_pid = f.pid().unwrap();
    let before = f.text();
    // Without --force-kill: exit 23, the spec restored, the old server kept.
    let r = f.swap(&["--set", "speculative-num-steps=3"]);
    let rec = r.expect_one(23);
    assert_eq!(
        (
            rec["type"].as_str(),
            rec["stage"].as_str(),
            rec["kind"].as_str()
        ),
        (Some("failure"), Some("swap"), Some("swap_failed"))
    );
    assert_eq!(rec["exit_code"], 23);
    assert!(r.stderr().contains("--force-kill"), "{}", r.stderr());
    assert_eq!(
        f.text(),
        before,
        "spec must be restored after a failed stop"
    );
    assert!(alive(old_pid));
    // With --force-kill: SIGKILL after the timeout, reported as such.
    let r = f.swap(&["--set", "speculative-num-steps=3", "--force-kill"]);
    let rec = r.expect_one(0);
    assert_eq!(rec["stop"]["result"], "sigkill_after_timeout", "{rec}");
    assert!(!alive(old_pid));
    assert_eq!(f.server_info()["speculative_num_steps"], 3);
}

#[test]
fn rollback_on_fail_restores_the_old_config() {
    let f = fixture("rollback", "", "5");
    f.swap(&["--set", "speculative-num-steps=2"]).expect_code(0);
    f.server_info();
    let before = f.text();
    // Fails for the new config; the rollback runs it again on the old one
    // (a record with method "rollback"), where it passes.
    let ready = "read rec; case \"$rec\" in *'\"method\":\"rollback\"'*) exit 0;; esac; \
                 echo \"$rec\" | grep -q '\"type\":\"swap\"' && [ -n \"$SWEEPKIT_MAIN_PID\" ] && exit 9";
    let r = f.swap(&[
        "--set",
        "speculative-num-steps=5",
        "--rollback-on-fail",
        "--ready-cmd",
        ready,
    ]);
    let rec = r.expect_one(25);
    assert_eq!(rec["type"], "failure");
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("ready command exited 9"),
        "{rec}"
    );
    assert_eq!(f.text(), before);
    assert_eq!(
        f.server_info()["speculative_num_steps"],
        2,
        "old config running again"
    );
    // A start that fails at once (bad flag value): the far-side job puts
    // the old config back itself, without --rollback-on-fail: exit 25.
    // (--no-preflight: pre-flight would refuse the non-integer with 26.)
    let r = f.swap(&[
        "--no-preflight",
        "--set",
        "speculative-num-steps=not-a-number",
    ]);
    let rec = r.expect_one(25);
    assert!(
        !rec["log_tail"].as_array().unwrap().is_empty(),
        "{}",
        r.stdout()
    );
    assert_eq!(rec["running"], "old", "{rec}");
    assert_eq!(rec["config"]["speculative-num-steps"], "not-a-number");
    assert_eq!(f.text(), before);
    assert_eq!(f.server_info()["speculative_num_steps"], 2);
}

#[test]
fn injection_attempts_stay_one_argument() {
    let f = fixture("inject", "", "5");
    let nasty = "x; touch PWNED $(touch PWNED2) `touch PWNED3` 'q\" \\ 100% $HOME\nline2";
    let r = f.swap(&["--set", &format!("model-name={nasty}")]);
    r.expect_code(0);
    assert_eq!(r.one()["config"]["model-name"], nasty);
    assert_eq!(f.server_info()["served_model_name"], nasty);
    assert_no_injection(&f);
    // The spec still parses and reads back the same value.
    let r = f.swap(&["--set", "model-name=plain", "--dry-run"]);
    r.expect_code(0);
    assert_eq!(r.one()["changes"][0]["old"], nasty);
    assert_no_injection(&f);
}

#[test]
fn dry_run_apply_from_and_bad_input() {
    let f = fixture("dry", "", "5");
    let before = f.text();
    let r = f.swap(&["--set", "speculative-num-steps=6", "--dry-run"]);
    r.expect_code(0);
    assert_eq!(r.one()["method"], "dry-run");
    // The diff: only the continued line that holds the value (issue 33:
    // the edit keeps the spec's layout, so a restore is byte for byte).
    assert!(
        r.stderr()
            .contains("\n-  --speculative-eagle-topk 1 --speculative-num-steps 1\n")
            && r.stderr()
                .contains("\n+  --speculative-eagle-topk 1 --speculative-num-steps 6\n")
            && !r.stderr().contains("-ExecStart="),
        "{}",
        r.stderr()
    );
    assert_eq!(f.text(), before);
    assert!(f.pid().is_none(), "dry run started nothing");

    let summary = r#"{"type":"summary","schema":1,"provenance":{"tool":"summarize","version":"0","started_at":"x","finished_at":"y"},"metric":"m","objective":"max","best_config":{"speculative-num-steps":"4"},"best_per_level":{},"best_unset":["warmup-time"]}"#;
    let r = f.swap_in(&["--apply-from", "-", "--dry-run"], summary);
    let rec = r.expect_one(0);
    assert_eq!(rec["config"]["speculative-num-steps"], "4");
    assert_eq!(rec["upstream"]["type"], "summary");
    // Keys the pick leaves unset are removed from the command line.
    let changes = rec["changes"].as_array().unwrap();
    assert!(
        changes
            .iter()
            .any(|c| c["flag"] == "--warmup-time" && c["new"].is_null()),
        "{changes:?}"
    );
    assert!(!rec["exec_start"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w == "--warmup-time"));

    // A sweep's origin record: its values set, its absent flags removed.
    let origin = r#"{"type":"origin","schema":1,"config":{"speculative-num-steps":"3"},"provenance":{"tool":"summarize","version":"0","started_at":"x","finished_at":"y"},"unset":["--warmup-time"],"set":{"--speculative-num-steps":"3"}}"#;
    let r = f.swap_in(&["--apply-from", "-", "--dry-run"], origin);
    let rec = r.expect_one(0);
    assert_eq!(rec["config"]["speculative-num-steps"], "3", "{rec}");
    let argv = rec["exec_start"].as_array().unwrap();
    assert!(!argv.iter().any(|w| w == "--warmup-time"), "{rec}");

    let failure = r#"{"type":"failure","schema":1,"config":{"a":"1"},"provenance":{"tool":"t","version":"0","started_at":"x","finished_at":"y"},"stage":"ready","kind":"oom","reason":"r"}"#;
    let r = f.swap_in(&["--apply-from", "-"], failure);
    r.expect_code(4);
    assert_eq!(r.one()["kind"], "oom", "passed through unchanged");
    f.swap_in(&["--apply-from", "-"], "not json\n")
        .expect_code(3);

    // Missing spec, spec without ExecStart: exit 20, failure record, no change.
    let r = swap(
        &[
            "--spec",
            &format!("{}/nope.spec", f.dir.display()),
            "--set",
            "a=1",
        ],
        "",
    );
    r.expect_code(20);
    assert_eq!(r.one()["config"]["a"], "1");
    assert!(
        r.stderr().starts_with("svc-swap: error: ") && r.stderr().lines().count() == 1,
        "{}",
        r.stderr()
    );
    let bad = f.dir.join("bad.spec");
    std::fs::write(&bad, "Port=1\n").unwrap();
    let r = swap(&["--spec", bad.to_str().unwrap(), "--set", "a=1"], "");
    r.expect_code(20);
    assert!(r.stderr().contains("no ExecStart"), "{}", r.stderr());
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "Port=1\n");
    // A prefix command that does not exist is a transport error.
    let r = f.swap(&["--exec-prefix", "/nonexistent/prefix --", "--set", "a=1"]);
    r.expect_code(21);
}

/// SIGKILL svc-swap (its whole process group) at random moments of a
/// swap: the far-side job carries on, the spec parses, the live process runs
/// the spec's config, old or new, and `--reattach` says which.
#[test]
fn killed_at_random_moments_leaves_old_or_new_running() {
    let seen = support::kill_rounds(&[], 12, 600, Duration::ZERO);
    eprintln!("rounds ending old / new: {seen:?}");
    assert_eq!(seen[0] + seen[1], 12);
}

/// Swapping to what already runs does not restart it (same PID), unless
/// --force-restart; backups are pruned to --keep-backups.
#[test]
fn noop_swap_and_bounded_backups() {
    let s = support::Sleeper::new("noop");
    let spec = s.spec.as_str();
    swap(&["--spec", spec, "--set", "k=1"], "").expect_code(0);
    let pid = s.pid().unwrap();
    let r = swap(&["--spec", spec, "--set", "k=1"], "");
    let rec = r.expect_one(0);
    assert_eq!(rec["noop"], true, "{rec}");
    assert_eq!(s.pid(), Some(pid), "a no-op swap restarted the server");
    assert!(alive(pid));
    let r = swap(&["--spec", spec, "--set", "k=1", "--force-restart"], "");
    r.expect_code(0);
    assert!(r.one().get("noop").is_none());
    assert_ne!(s.pid(), Some(pid), "--force-restart did not restart");
    assert_eq!(s.running_k().as_deref(), Some("1"));
    for k in 2..=6 {
        swap(
            &[
                "--spec",
                spec,
                "--set",
                &format!("k={k}"),
                "--keep-backups",
                "2",
            ],
            "",
        )
        .expect_code(0);
    }
    let backups: Vec<String> = std::fs::read_dir(&s.dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.contains(".sweepkit-bak."))
        .collect();
    assert_eq!(backups.len(), 2, "{backups:?}");
    // The newest two: the texts of k=4 and k=5.
    let mut texts: Vec<String> = backups
        .iter()
        .map(|n| std::fs::read_to_string(s.dir.join(n)).unwrap())
        .collect();
    texts.sort();
    assert!(
        texts[0].contains("--k 4") && texts[1].contains("--k 5"),
        "{texts:?}"
    );
    assert_eq!(s.running_k().as_deref(), Some("6"));
    assert!(
        support::job_ids(&s.state_dir()).is_empty(),
        "job files left"
    );
}

/// A run killed once its job started leaves the job unreported: the next
/// run waits for it, says how it ended, then does its own swap.
#[test]
fn next_run_reports_a_job_an_earlier_run_lost() {
    use std::os::unix::process::CommandExt;
    let s = support::Sleeper::new("earlier");
    s.start(&[]);
    let mut child = support::command()
        .process_group(0)
        .args(["--spec", &s.spec, "--set", "k=1"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !support::job_ids(&s.state_dir())
        .iter()
        .any(|id| s.state_dir().join(format!("{id}.lock")).exists())
    {
        assert!(t0.elapsed() < Duration::from_secs(20), "no job started");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
    let r = swap(&["--spec", &s.spec, "--set", "k=2"], "");
    let rec = r.expect_one(0);
    let w = rec["warnings"].to_string();
    assert!(
        w.contains("an earlier swap (job") && w.contains("new config running"),
        "{rec}"
    );
    assert_eq!(s.running_k().as_deref(), Some("2"));
    assert!(support::job_ids(&s.state_dir()).is_empty());
}

/// Orphaned workers holding GPU memory (the brief's campaign): a server's
/// worker (vLLM's EngineCore, SGLang's scheduler) outlives the leader's
/// exit for 2 s after SIGTERM while a stand-in nvidia-smi lists it as
/// holding GPU memory. The stop waits for the whole group, not only the
/// main PID, and the record names the worker among the old PIDs. Before
/// the fix the new server started while the worker still held the GPU.
#[test]
fn a_worker_that_outlives_the_leader_is_waited_for() {
    let dir = testkit::temp_dir("group");
    let d = dir.display();
    std::fs::write(
        dir.join("server.sh"),
        format!(
            "sh -c 'trap \"sleep 2; exit 0\" TERM; echo $$ >{d}/worker.pid; \
             while :; do sleep 0.1; done' &\nsleep 300 &\nwait\n"
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("nvidia-smi"),
        format!("#!/bin/sh\nw=$(cat {d}/worker.pid) && [ -d /proc/$w ] && echo \"$w\"\nexit 0\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        dir.join("nvidia-smi"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let spec = dir.join("w.spec").to_str().unwrap().to_string();
    std::fs::write(
        &spec,
        format!("ExecStart=/bin/sh {d}/server.sh worker --k 0\nTimeoutStopSec=10\n"),
    )
    .unwrap();
    let path = format!("{d}:{}", std::env::var("PATH").unwrap_or_default());
    let go = |k: &str| {
        let mut c = support::command();
        c.env("PATH", &path)
            .args(["--spec", &spec, "--gpu", "--set", &format!("k={k}")]);
        testkit::run(c, "")
    };
    go("0").expect_code(0);
    let worker_pid = || -> u32 {
        let t0 = Instant::now();
        loop {
            if let Some(p) = std::fs::read_to_string(dir.join("worker.pid"))
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                return p;
            }
            assert!(t0.elapsed() < Duration::from_secs(10), "no worker");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let worker = worker_pid();
    std::fs::remove_file(dir.join("worker.pid")).unwrap();
    let r = go("1");
    let rec = r.expect_one(0);
    assert!(
        !alive(worker),
        "the new server started beside the old worker: {rec}"
    );
    assert_eq!(rec["stop"]["gpu"], "freed", "{rec}");
    let old: Vec<u64> = rec["stop"]["old_pids"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    assert!(old.contains(&u64::from(worker)), "worker {worker}: {rec}");
    assert!(rec["stop"]["duration_s"].as_f64().unwrap() >= 1.5, "{rec}");
    let new_worker = worker_pid();
    if let Some(pid) = support::spec_pid(&spec) {
        support::kill_spec_server(pid);
    }
    let t0 = Instant::now();
    while alive(new_worker) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
