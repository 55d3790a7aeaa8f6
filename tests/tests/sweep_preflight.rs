//! scripts/sweep.sh with svc-swap's SGLang pre-flight, against llm-sim (its
//! SGLang personality) under the process manager: a sweep of steps without
//! topk is refused config by config before any restart (the server's PID
//! never changes) and every config is recorded as a pre-flight failure;
//! coupled flags (`--param A,B --values 1:2,...`) move together and are
//! measured. Needs `cargo build --workspace` first.

mod sweep_support;

use std::time::Duration;

use sweep_support::{dump, records, sweep, SpecFile};

const STEPS: &str = "speculative-num-steps";
const DRAFT: &str = "speculative-num-draft-tokens";

/// llm-sim with `flags`, started once through svc-swap (no edits) so a
/// server runs before the sweep; returns the spec, its URL and the PID.
fn running_sim(tag: &str, flags: &str) -> (SpecFile, String, u32) {
    let port = testkit::free_port();
    let exec = format!(
        "{} --host 127.0.0.1 --port {port} --load-time 100ms --warmup-time 50ms --seed 1 {flags}",
        testkit::bin("llm-sim").display()
    );
    let spec = SpecFile::new(tag, &exec, port);
    let out = std::process::Command::new(testkit::bin("svc-swap"))
        .args(["--spec", spec.s()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "first start: {}", dump(&out));
    let url = format!("http://127.0.0.1:{port}");
    let t0 = std::time::Instant::now();
    while testkit::http_get(port, "/health").map(|r| r.0) != Some(200) {
        assert!(t0.elapsed() < Duration::from_secs(20), "never healthy");
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = spec.live_pid().expect("the first instance runs");
    (spec, url, pid)
}

fn common<'a>(spec: &'a SpecFile, url: &'a str, results: &'a str) -> Vec<&'a str> {
    vec![
        "--spec",
        spec.s(),
        "--url",
        url,
        "--server",
        "llm-sim",
        "--results",
        results,
        "--concurrency",
        "1",
        "--load-arg",
        "-n",
        "--load-arg",
        "2",
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "8",
    ]
}

#[test]
fn steps_without_topk_is_refused_by_preflight_before_any_restart() {
    let (spec, url, pid) = running_sim("sweep-preflight", "--speculative-algorithm EAGLE");
    let original = spec.exec_start();
    let results = spec.results();
    let mut args = common(&spec, &url, results.to_str().unwrap());
    args.extend(["--param", STEPS, "--values", "1,2,3"]);
    let out = sweep(&args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(41),
        "every config failed: {}",
        dump(&out)
    );
    let recs = records(&results);
    let got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r["type"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["config"][STEPS].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("failure", "preflight_rejected", "1"),
            ("failure", "preflight_rejected", "2"),
            ("failure", "preflight_rejected", "3"),
        ],
        "{}",
        dump(&out)
    );
    for r in &recs {
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("without --speculative-eagle-topk"),
            "{reason}"
        );
        assert_eq!(r["exit_code"], 26);
    }
    assert_eq!(spec.live_pid(), Some(pid), "the server was never restarted");
    assert_eq!(spec.exec_start(), original, "the spec was never edited");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("restoring"), "nothing to restore: {err}");
    // svc-swap's and wait-ready's lines may interleave on the shared stderr.
    for v in ["1", "2", "3"] {
        let line = format!("pre-flight: --speculative-num-steps {v} without");
        assert!(err.contains(&line), "{err}");
    }
}

#[test]
fn coupled_flags_move_together_and_are_measured() {
    let flags = "--speculative-algorithm EAGLE --speculative-eagle-topk 1 \
                 --speculative-num-steps 1 --speculative-num-draft-tokens 2";
    let (spec, url, _) = running_sim("sweep-coupled", flags);
    let original = spec.exec_start();
    let results = spec.results();
    let mut args = common(&spec, &url, results.to_str().unwrap());
    let pair = format!("{STEPS},{DRAFT}");
    args.extend(["--param", &pair, "--values", "2:3,3:4", "--expect-config"]);
    let out = sweep(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&results);
    let got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r["type"].as_str().unwrap_or(""),
                r["config"][STEPS].as_str().unwrap_or(""),
                r["config"][DRAFT].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("bench", "2", "3"), ("bench", "3", "4")],
        "{}",
        dump(&out)
    );
    assert!(recs.iter().all(|r| r["counts"]["completed"] == 2));
    // --expect-config checked both flags live; pairs at steps + 1 at topk 1
    // are what SGLang keeps, so pre-flight had nothing to warn about.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("overridden"), "{err}");
    assert_eq!(spec.exec_start(), original, "both flags restored");
}

#[test]
fn coupled_values_must_match_their_flags() {
    let base = [
        "--spec",
        "x.spec",
        "--url",
        "http://127.0.0.1:1",
        "--results",
        "r",
    ];
    let mut bad = base.to_vec();
    bad.extend(["--param", "a,b", "--values", "1:2,3"]);
    let out = sweep(&bad).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", dump(&out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("sweep: error: --param a,b --values ...3...: expected 2 values"),
        "{err}"
    );
    let mut bad = base.to_vec();
    bad.extend(["--param", "a,", "--values", "1:2"]);
    assert_eq!(sweep(&bad).output().unwrap().status.code(), Some(2));
    // A dry run shows each pair as two --set edits in one swap.
    let mut ok = base.to_vec();
    ok.extend([
        "--param",
        "a,b",
        "--values",
        "1:2,3:4",
        "--param",
        "c",
        "--values",
        "x:y",
        "--dry-run",
    ]);
    let out = sweep(&ok).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(plan.contains("--set a=1 --set b=2 --set c=x:y"), "{plan}");
    assert!(plan.contains("--set a=3 --set b=4 --set c=x:y"), "{plan}");
    assert!(plan.contains("# [2/2] a=3 b=4 c=x:y"), "{plan}");
}
