//! svc-swap's pre-flight of SGLang's speculative flags against a real
//! llm-sim (SGLang personality) on 127.0.0.1 under the process manager: a
//! refused config exits 26 with one line on stderr and a failure record
//! that keeps the config, and the running server is left untouched (same
//! PID, same spec, same live args); what SGLang forces is said on stderr and
//! in the swap record; --no-preflight lets the config through.
//! Needs `cargo build -p llm-sim`.

use std::time::{Duration, Instant};

use serde_json::Value;
use support::SimSpec;
use testkit::alive;

mod support;

use support::EAGLE;

/// llm-sim speculating the way SGLang accepts it (EAGLE, topk 1, steps 1),
/// its spec under a `[Service]` header.
fn sim(tag: &str) -> SimSpec {
    SimSpec::write(tag, None, |sim, port| {
        format!("[Service]\n{}", support::quick_sim(sim, port, EAGLE))
    })
}

/// The refusal: exit 26, exactly one stderr line, a failure record with the
/// config, and the old server still the one serving.
fn assert_refused(sim: &SimSpec, pid: u32, args: &[&str], says: &str) -> Value {
    let before = sim.text();
    let t0 = Instant::now();
    let r = sim.swap(args);
    r.expect_code(26);
    assert!(t0.elapsed() < Duration::from_secs(5), "refused at once");
    let err = r.stderr();
    assert_eq!(err.lines().count(), 1, "one line on stderr: {err}");
    assert!(err.starts_with("svc-swap: error: pre-flight: "), "{err}");
    assert!(err.contains(says), "{err}");
    let rec = r.one();
    assert_eq!(
        (
            rec["type"].as_str(),
            rec["stage"].as_str(),
            rec["kind"].as_str()
        ),
        (Some("failure"), Some("swap"), Some("preflight_rejected")),
        "{rec}"
    );
    assert_eq!(rec["exit_code"], 26);
    assert!(rec["reason"].as_str().unwrap().contains(says), "{rec}");
    assert_eq!(sim.text(), before, "the spec was not touched");
    assert_eq!(sim.pid().unwrap(), pid, "no restart");
    assert!(alive(pid), "the old server still runs");
    assert_eq!(sim.server_info()["speculative_num_steps"], 1);
    rec
}

#[test]
fn refused_configs_leave_the_old_server_running() {
    let sim = sim("preflight-refuse");
    let pid = sim.start();
    let rec = assert_refused(
        &sim,
        pid,
        &testkit::words("--unset speculative-eagle-topk --set speculative-num-steps=2"),
        "--speculative-num-steps 2 without --speculative-eagle-topk",
    );
    assert_eq!(rec["config"]["speculative-num-steps"], "2", "{rec}");
    let rec = assert_refused(
        &sim,
        pid,
        &["--set", "speculative-algorithm=MTP"],
        "--speculative-algorithm MTP: SGLang has no algorithm MTP",
    );
    assert_eq!(rec["config"]["speculative-algorithm"], "MTP");
    assert!(rec["reason"].as_str().unwrap().contains("NEXTN"));
    let rec = assert_refused(
        &sim,
        pid,
        &testkit::words("--set speculative-eagle-topk=2 --set speculative-num-draft-tokens=4"),
        "--speculative-num-draft-tokens 4: more than",
    );
    assert_eq!(rec["config"]["speculative-eagle-topk"], "2");
    // A dry run is checked too, and changes nothing either.
    assert_refused(
        &sim,
        pid,
        &["--dry-run", "--unset", "speculative-eagle-topk"],
        "--speculative-num-steps 1 without",
    );
}

#[test]
fn what_sglang_forces_is_said_and_recorded() {
    let sim = sim("preflight-notes");
    let pid = sim.start();
    let r = sim.swap(&testkit::words(
        "--set speculative-num-steps=3 --set speculative-num-draft-tokens=8",
    ));
    let rec = r.expect_one(0);
    let notes: Vec<&str> = rec["preflight"]
        .as_array()
        .unwrap_or_else(|| panic!("no preflight notes: {rec}"))
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(
            |n| n.contains("--speculative-num-draft-tokens 8 is overridden")
                && n.contains("forces 4")
        ),
        "{notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("48")), "{notes:?}");
    let err = r.stderr();
    for n in &notes {
        assert!(
            err.contains(&format!("svc-swap: warning: pre-flight: {n}")),
            "{err}"
        );
    }
    assert_ne!(sim.pid().unwrap(), pid, "a valid config is swapped in");
    assert_eq!(sim.server_info()["speculative_num_steps"], 3);
    // With the cap set explicitly there is nothing to say about it.
    let r = sim.swap(&["--set", "max-running-requests=64"]);
    let rec = r.expect_one(0);
    let text = rec["preflight"].to_string();
    assert!(!text.contains("48"), "{rec}");
}

#[test]
fn no_preflight_lets_the_refused_config_through() {
    let sim = sim("preflight-bypass");
    let pid = sim.start();
    let r = sim.swap(&testkit::words(
        "--no-preflight --unset speculative-eagle-topk --set speculative-num-steps=2",
    ));
    assert_ne!(r.code(), 26, "{}", r.stderr());
    assert!(!r.stderr().contains("pre-flight"), "{}", r.stderr());
    assert!(!r.stdout().contains("preflight_rejected"), "{}", r.stdout());
    // The server was stopped and the new line started: it dies in its
    // argument check as SGLang does, and the far-side job puts the old
    // config back (exit 25), with the server's own error in the record.
    assert!(!alive(pid), "the old server was stopped");
    let rec = r.expect_one(25);
    assert_eq!(rec["kind"], "swap_failed", "{rec}");
    assert_eq!(rec["running"], "old", "{rec}");
    assert!(rec["log_tail"].to_string().contains("TypeError"), "{rec}");
    assert!(
        !sim.text().contains("--speculative-num-steps 2"),
        "{}",
        sim.text()
    );
}
