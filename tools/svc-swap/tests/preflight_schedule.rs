//! Pre-flight of both servers' per-load schedules against a running llm-sim
//! (as SGLang, as vLLM) under the process manager: each refusal is exit 26,
//! one line on stderr carrying the server's own message, a failure record,
//! and the running server untouched (same PID, same spec); the silent
//! fall-backs warn on stderr and in the record's `preflight`, and serve.

use support::SimSpec;

mod support;

use support::EAGLE;

/// llm-sim with `flags`, started (restarted) from its spec and healthy.
fn sim(tag: &str, flags: &str) -> SimSpec {
    let s = SimSpec::new(tag, flags);
    s.swap(&["--force-restart"]).expect_code(0);
    s.server_info();
    s
}

/// Refused with exit 26 and `msg` in the one error line; untouched.
fn refused(s: &SimSpec, args: &[&str], msg: &str) {
    let (pid, text) = (s.pid().unwrap(), s.text());
    let r = s.swap(args);
    r.expect_one_error(26, msg);
    let err = r.stderr();
    assert!(
        err.lines()
            .any(|l| l.contains("error:") && l.ends_with("nothing was stopped")),
        "{err}"
    );
    let rec = &r.json_lines()[0];
    assert_eq!(
        (rec["type"].as_str(), rec["exit_code"].as_i64()),
        (Some("failure"), Some(26))
    );
    assert_eq!(rec["kind"], "preflight_rejected");
    assert_eq!(s.pid().unwrap(), pid, "restarted");
    assert_eq!(s.text(), text, "spec changed");
    s.server_info();
}

#[test]
fn sglang_steps_outside_the_candidates_and_a_missing_config_are_refused() {
    let s = sim("pf-sched-sg", EAGLE);
    let cfg = s.file(
        "a.json",
        "{\"1\": {\"candidate_steps\": [3, 5]}, \"16\": {\"candidate_steps\": [1]}}",
    );
    let set_file = format!("speculative-adaptive-config={cfg}");
    refused(&s, &support::set_adaptive(&set_file, &["--set", "speculative-num-steps=2"]),
        "ValueError: --speculative-num-steps=2 is not in the adaptive config candidate_steps [1, 3, 5]. Pass one of those values.",
    );
    refused(
        &s,
        &testkit::words(
            "--set speculative-adaptive-config=/nonexistent/a.json --set speculative-adaptive",
        ),
        "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/a.json'",
    );
    let bad = s.file("bad.json", "{\"1\": {\"candidate_steps\": []}}");
    refused(
        &s,
        &[
            "--set-file",
            &format!("speculative-adaptive-config={bad}"),
            "--set",
            "speculative-adaptive",
        ],
        "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got []",
    );
    // Steps among the candidates: served adaptive.
    let r = s.swap(&support::set_adaptive(
        &set_file,
        &["--set", "speculative-num-steps=5"],
    ));
    r.expect_code(0);
    assert_eq!(s.server_info()["speculative_adaptive"], true);
}

#[test]
fn sglang_topk_above_one_and_a_non_eagle_algorithm_warn_and_serve_static() {
    let s = sim("pf-sched-fb", EAGLE);
    let cfg = s.file("a.json", "{\"1\": {\"candidate_steps\": [3]}}");
    let set_file = format!("speculative-adaptive-config={cfg}");
    let r = s.swap(&support::set_adaptive(
        &set_file,
        &testkit::words(
            "--set speculative-eagle-topk=2 --set speculative-num-steps=2 \
         --set speculative-num-draft-tokens=4",
        ),
    ));
    r.expect_code(0);
    let rec = &r.json_lines()[0];
    let pf = rec["preflight"].to_string();
    assert!(
        pf.contains("speculative_eagle_topk=2 (only topk=1 is supported)"),
        "{pf}"
    );
    assert!(
        r.stderr()
            .contains("warning: pre-flight: SGLang runs static"),
        "{}",
        r.stderr()
    );
    let info = s.server_info();
    assert_eq!(info["speculative_adaptive"], false, "{info}");
    assert_eq!(info["speculative_num_steps"], 2);
}

#[test]
fn vllm_schedules_vllm_refuses_are_refused_with_its_message() {
    let s = sim("pf-sched-vllm", "--personality vllm");
    let sc = |sched: &str| {
        format!(
            "speculative-config={{\"method\":\"ngram\",\"num_speculative_tokens\":4,\
             \"num_speculative_tokens_per_batch_size\":{sched}}}"
        )
    };
    refused(&s, &["--set", &sc("[[2,8,4],[9,64,1]]")],
        "ValueError: The first batch-size range must start at 1 so every runtime batch size has a defined schedule.",
    );
    refused(
        &s,
        &["--set", &sc("[[1,8,4],[8,64,1]]")],
        "ValueError: Batch-size ranges must be non-overlapping and sorted.",
    );
    refused(
        &s,
        &["--set", &sc("[[1,8,-1]]")],
        "ValueError: num_speculative_tokens_per_batch_size values must be >= 0.",
    );
    // Data parallelism: a dry run says vLLM will run static.
    let r = s.swap(&[
        "--dry-run",
        "--set",
        &sc("[[1,1,4],[2,64,1]]"),
        "--set",
        "data-parallel-size=2",
    ]);
    r.expect_code(0);
    let pf = r.json_lines()[0]["preflight"].to_string();
    assert!(pf.contains("falling back to static"), "{pf}");
}
