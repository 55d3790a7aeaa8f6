//! scripts/sweep.sh against a newcomer's mistakes (issue 33): each ends
//! within seconds with one line saying what to write instead, and where
//! it was detectable before the first stop the running server (llm-sim as
//! a process spec) keeps its PID and its spec. Needs `cargo build
//! --workspace --bins` first.

mod sweep_support;

use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

use sweep_support::child::{signal_group, to_files, wait_within};
use sweep_support::{all_records, dump, records, stderr, stdout, SimExec, SpecFile, SweepArgs};

const KEY: &str = "speculative-num-steps";

/// llm-sim (EAGLE, steps 1) running before the sweep, as a newcomer's
/// server is; the spec, its URL and the server's PID.
fn running(tag: &str) -> (SpecFile, String, u32) {
    let sim = SimExec::free().load("100ms").warmup("50ms").eagle(1);
    let (spec, url) = sim.running(tag);
    let pid = spec.live_pid().expect("the server runs");
    (spec, url, pid)
}

/// A sweep of steps 2 on `spec` at `url`, one short level.
fn one_config(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::new()
        .args(&["--spec", spec.s(), "--url", url])
        .results(&spec.results())
        .param(KEY, "2")
        .quick("2", "8")
}

/// Run `args`, which must exit `code` within `limit` with exactly one line
/// on stderr (`sweep: error: ...`) that contains every one of `words`.
fn refused(args: &SweepArgs, code: i32, limit: Duration, words: &[&str]) -> String {
    let t0 = Instant::now();
    let out = args.expect(code);
    let took = t0.elapsed();
    assert!(took < limit, "took {took:?}: {}", dump(&out));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("sweep: error: "), "{err}");
    for w in words {
        assert!(err.contains(w), "{w}: {err}");
    }
    eprintln!("refused in {took:?}: {err}");
    err
}

/// The server runs as before: same PID, spec unchanged, no results.
fn untouched(spec: &SpecFile, pid: u32, exec: &str) {
    assert_eq!(spec.live_pid(), Some(pid), "the server was not restarted");
    assert_eq!(spec.exec_start(), exec, "the spec was not edited");
    assert!(records(&spec.results()).is_empty(), "no result recorded");
}

#[test]
fn a_url_port_other_than_the_spec_s_is_refused_before_the_first_stop() {
    let (spec, url, pid) = running("new-port");
    let exec = spec.exec_start();
    let port = sweep_support::sim::url_port(&url);
    let wrong = format!("http://127.0.0.1:{}", testkit::free_port());
    let args = one_config(&spec, &wrong).args(&["--server", "llm-sim"]);
    let want = format!("listens on port {port} (the spec's Port=)");
    refused(&args, 2, Duration::from_secs(10), &[&wrong, &want]);
    untouched(&spec, pid, &exec);
}

#[test]
fn a_misspelt_param_is_refused_with_the_closest_flag_and_param_new_adds_one() {
    let (spec, url, pid) = running("new-typo");
    let exec = spec.exec_start();
    let typo = SweepArgs::new()
        .args(&["--spec", spec.s(), "--url", &url, "--server", "llm-sim"])
        .results(&spec.results())
        .param("speculative-num-step", "2,3");
    let words = [
        "--param speculative-num-step",
        "closest: --speculative-num-steps",
        "--param-new speculative-num-step",
        "not touched",
    ];
    refused(&typo, 2, Duration::from_secs(10), &words);
    untouched(&spec, pid, &exec);
    // Declared new, the flag is added (llm-sim takes --max-running-requests).
    let results = spec.dir.join("new.jsonl");
    let out = SweepArgs::new()
        .args(&["--spec", spec.s(), "--url", &url, "--server", "llm-sim"])
        .results(&results)
        .param_new("max-running-requests", "8")
        .quick("2", "8")
        .expect(0);
    let recs = records(&results);
    assert_eq!(recs.len(), 1, "{}", dump(&out));
    assert_eq!(recs[0]["config"]["max-running-requests"], "8");
    assert_eq!(spec.exec_start(), exec, "restored: the added flag is gone");
}

#[test]
fn no_server_preset_against_a_running_server_that_answers_404_is_refused() {
    let (spec, url, pid) = running("new-404");
    let exec = spec.exec_start();
    let words = ["answers HTTP 404", "--server KIND", "not touched"];
    refused(&one_config(&spec, &url), 2, Duration::from_secs(10), &words);
    untouched(&spec, pid, &exec);
}

#[test]
fn no_server_preset_with_the_server_down_stops_within_seconds_at_the_404() {
    // Not running yet: nothing answers before the first start, so the
    // first config's wait-ready meets the 404 at / and stops the sweep.
    let (spec, url) = SimExec::free()
        .load("100ms")
        .warmup("50ms")
        .eagle(1)
        .spec("new-404-down");
    let exec = spec.exec_start();
    let t0 = Instant::now();
    let out = one_config(&spec, &url).expect(2);
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "took {took:?}: {}",
        dump(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains("wait-ready: error:") && err.contains("HTTP 404 (no such path)"),
        "{err}"
    );
    assert!(
        err.contains("sweep: error: wait-ready's probe got HTTP 404/405"),
        "{err}"
    );
    assert!(!err.contains("fix the pass-through options"), "{err}");
    assert!(
        !err.contains("check the server"),
        "the restore stood: {err}"
    );
    let recs = records(&spec.results());
    assert_eq!(recs.len(), 1, "{}", dump(&out));
    assert_eq!(
        (&recs[0]["kind"], &recs[0]["class"]),
        (&"not_found".into(), &"usage".into())
    );
    assert_eq!(recs[0]["exit_code"], 14);
    assert_eq!(spec.exec_start(), exec, "the original config is back");
    eprintln!("stopped in {took:?}");
}

#[test]
fn a_url_without_a_scheme_is_refused_saying_what_to_write() {
    let (spec, url, pid) = running("new-scheme");
    let exec = spec.exec_start();
    let bare = url.trim_start_matches("http://").to_string();
    let args = one_config(&spec, &bare).args(&["--server", "llm-sim"]);
    let hint = format!("write --url http://{bare}");
    refused(&args, 2, Duration::from_secs(10), &[&hint]);
    untouched(&spec, pid, &exec);
}

#[test]
fn spaces_in_values_are_dropped_before_anything_runs() {
    let plan = SweepArgs::new()
        .args(&["--spec", "x.spec", "--url", "http://127.0.0.1:1"])
        .args(&["--results", "r", "--dry-run"])
        .param(KEY, "1, 2 ")
        .expect(0);
    let plan = stdout(&plan);
    for v in ["1", "2"] {
        assert!(plan.contains(&format!("--set {KEY}={v} ")), "{plan}");
    }
    assert!(!plan.contains("=\\ "), "no value with a space: {plan}");
}

#[test]
fn a_second_sweep_on_the_same_results_is_refused_unless_resume_or_append() {
    let (spec, url, _) = running("new-twice");
    let args = one_config(&spec, &url).args(&["--server", "llm-sim"]);
    let first = args.expect(0);
    // No --concurrency: the plan line says only 1 is measured.
    let err = stderr(&first);
    assert!(err.contains("1 config(s); results: "), "{err}");
    assert!(
        err.contains("concurrency 1 only (loadgen's default); give --concurrency 1,4,16"),
        "{err}"
    );
    // No level above SGLang's 48-request cap: no word about it.
    assert!(!err.contains("max_running_requests to 48"), "{err}");
    let n = all_records(&spec.results()).len();
    let pid = spec.live_pid().unwrap();
    let exec = spec.exec_start();
    let origin = &all_records(&spec.results())[0];
    let started = origin["provenance"]["started_at"]
        .as_str()
        .unwrap()
        .to_string();
    let results = spec.results().display().to_string();
    let words = [
        &format!("{results} already holds a sweep started at {started}")[..],
        "--resume to continue it, or a new --results",
    ];
    refused(&args, 2, Duration::from_secs(10), &words);
    assert_eq!(all_records(&spec.results()).len(), n, "nothing appended");
    assert_eq!((spec.live_pid(), spec.exec_start()), (Some(pid), exec));
    // --append: this run's records go on, on purpose.
    let out = args.clone().arg("--append").expect(0);
    assert_eq!(records(&spec.results()).len(), 2, "{}", dump(&out));
    // With levels given, the plan line has no note.
    let out = args.arg("--resume").levels("1").expect(0);
    assert!(
        !stderr(&out).contains("concurrency 1 only"),
        "{}",
        dump(&out)
    );
}

#[test]
fn ctrl_c_during_a_hopeless_wait_bounds_the_restore_and_a_second_one_ends_it() {
    // The original itself loads for ten minutes: neither the config nor the
    // restore can be ready in time, as after a wrong --url.
    let sim = SimExec::free().load("600s").warmup("0s").eagle(1);
    let (spec, url) = sim.spec("new-ctrl-c");
    let exec = spec.exec_start();
    let args = one_config(&spec, &url).args(&["--server", "llm-sim"]);
    let mut cmd = args.cmd();
    cmd.process_group(0);
    to_files(&mut cmd, &spec.dir);
    let child = cmd.spawn().unwrap();
    let err = || std::fs::read_to_string(spec.dir.join("err")).unwrap_or_default();
    let until = |what: &str| {
        let t0 = Instant::now();
        while !err().contains(what) {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no '{what}': {}",
                err()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    until("[1/1]");
    std::thread::sleep(Duration::from_millis(1500)); // wait-ready is waiting
    let config_pid = spec.live_pid().expect("the config's server loads");
    signal_group(&child, "INT");
    until("after the interrupt the restore waits at most 60s (no time to ready measured yet)");
    // The original started again (svc-swap is done): wait-ready waits.
    let t0 = Instant::now();
    while spec.live_pid().is_none_or(|p| p == config_pid) {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no restore: {}",
            err()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let t0 = Instant::now();
    signal_group(&child, "INT");
    let out = wait_within(child, Duration::from_secs(30), Some(&spec.dir));
    let took = t0.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "took {took:?}: {}",
        dump(&out)
    );
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let e = stderr(&out);
    assert!(
        e.contains(
            "the original config is back in place but was not ready yet (interrupted again)"
        ),
        "{e}"
    );
    assert_eq!(spec.exec_start(), exec, "the original config is in place");
}

#[test]
fn a_stray_process_holding_the_port_is_named_before_the_first_stop() {
    let (spec, url) = SimExec::free().eagle(1).spec("new-stray");
    let exec = spec.exec_start();
    let port = sweep_support::sim::url_port(&url);
    // This test plays the stray: a leftover server on the spec's port.
    let stray = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    let args = one_config(&spec, &url).args(&["--server", "llm-sim"]);
    let held = format!("port {port} of --url is held by PID {}", std::process::id());
    let words = [&held[..], "not the target's server", "not touched"];
    refused(&args, 2, Duration::from_secs(10), &words);
    assert_eq!(spec.live_pid(), None, "nothing was started");
    assert_eq!(spec.exec_start(), exec, "the spec was not edited");
    drop(stray);
}

#[test]
fn the_48_request_cap_is_said_once_per_sweep_when_a_level_exceeds_it() {
    let (spec, url, _) = running("new-cap");
    let out = SweepArgs::new()
        .args(&["--spec", spec.s(), "--url", &url, "--server", "llm-sim"])
        .results(&spec.results())
        .param(KEY, "2,3")
        .levels("64")
        .quick("64", "4")
        .expect(0);
    let err = stderr(&out);
    let cap = "sweep: warning: pre-flight: SGLang sets max_running_requests to 48";
    assert_eq!(err.matches(cap).count(), 1, "once, not per config: {err}");
    assert!(!err.contains("svc-swap: warning: pre-flight"), "{err}");
    // A note that depends on the value is said for each value.
    for d in ["3 (steps + 1)", "4 (steps + 1)"] {
        assert!(
            err.contains(&format!("speculative_num_draft_tokens to {d}")),
            "{err}"
        );
    }
    // Every swap record keeps its notes.
    let recs = records(&spec.results());
    let swap = |r: &serde_json::Value| {
        sweep_support::upstream_of(r, "swap").unwrap()["preflight"].to_string()
    };
    assert!(
        recs.iter()
            .all(|r| swap(r).contains("max_running_requests to 48")),
        "{recs:?}"
    );
}

/// Issue 46: `--url http://HOST:PORT/v1`, the OpenAI API base every client
/// library takes, was probed as a path: the server was restarted, then
/// wait-ready failed on HTTP 404 saying "give --server KIND" to a user who
/// had. It is the API base for every tool, with or without --server.
#[test]
fn an_openai_base_url_ending_in_v1_is_taken_as_the_api_base() {
    let (spec, url, _) = running("new-v1");
    for (base, server) in [
        (format!("{url}/v1"), Some("llm-sim")),
        (format!("{url}/v1/"), None),
    ] {
        let results = spec.dir.join(format!("v1-{}.jsonl", server.is_some()));
        let mut args = SweepArgs::new()
            .args(&["--spec", spec.s(), "--url", &base])
            .results(&results)
            .param(KEY, "2")
            .quick("2", "8");
        if let Some(s) = server {
            args = args.args(&["--server", s]);
        }
        let out = args.expect(0);
        let recs = records(&results);
        assert_eq!(recs.len(), 1, "{}", dump(&out));
        assert_eq!(recs[0]["type"], "bench", "{}", dump(&out));
        let err = stderr(&out);
        assert!(!err.contains("no such path"), "{err}");
    }
}

/// Issue 46: `--values 1..10` (how the reference campaign wrote its range)
/// was one literal value that failed pre-flight. Inclusive ranges with an
/// optional step expand, in --dry-run too; a bad one is one usage line.
#[test]
fn a_range_of_values_expands_and_a_bad_one_says_how_to_write_it() {
    let dry = |values: &str| {
        SweepArgs::new()
            .args(&["--spec", "x.spec", "--url", "http://127.0.0.1:1"])
            .args(&["--results", "r", "--dry-run"])
            .param(KEY, values)
    };
    let plan = stdout(&dry("1..3, 8,10..14:2").expect(0));
    for v in ["1", "2", "3", "8", "10", "12", "14"] {
        assert!(plan.contains(&format!("--set {KEY}={v} ")), "{v}: {plan}");
    }
    assert!(!plan.contains(".."), "expanded: {plan}");
    for (bad, says) in [
        (
            "1..10:4",
            "10 is not 1 plus a multiple of 4; end the range at 9 or 13",
        ),
        ("10..1", "a range is START..END or START..END:STEP"),
    ] {
        let t0 = Instant::now();
        let out = dry(bad).expect(2);
        assert!(t0.elapsed() < Duration::from_secs(10));
        let err = stderr(&out);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.starts_with("sweep: error: --values '"), "{err}");
        assert!(err.contains(says), "{says}: {err}");
    }
}
