//! `--expect-config` from the live process's argv when the server reports
//! no arguments (vLLM without VLLM_SERVER_DEV_MODE): `--pid`'s
//! /proc/PID/cmdline read locally and through an exec prefix, JSON-valued
//! flags (`--speculative-config`) matched and mismatched, the source named
//! in the record, secrets in argv redacted. (Over SSH: tests/ssh.rs.)

mod common;

use std::time::Duration;

use common::{run_timed, stub_server, wr, wr_line, ArgvProc};

pub const SPEC: &str = r#"{"method":"eagle","num_speculative_tokens":3}"#;

fn vllm() -> (String, ArgvProc) {
    let port = testkit::free_port();
    stub_server(port, Duration::ZERO, 200, Duration::ZERO);
    let p = ArgvProc::start(&[
        "vllm",
        "serve",
        "tiny",
        "--speculative-config",
        SPEC,
        "--max-num-seqs",
        "8",
        "--api-key",
        "sk-argv-secret-1",
    ]);
    (format!("http://127.0.0.1:{port}"), p)
}

/// wait-ready on the stand-in vLLM, its config read from the argv of its
/// `--pid`, expecting `expect` (`--expect-config` words).
fn expect_from_argv(expect: &str) -> testkit::Run {
    let (url, p) = vllm();
    let pid = p.pid();
    let line = format!("--server vllm {url} --pid {pid} --no-stdin --timeout 10s {expect}");
    run_timed(wr_line(&line), "").0
}

#[test]
fn json_valued_flag_matches_from_argv() {
    let r = expect_from_argv(
        "--expect-config speculative-config.num_speculative_tokens=3 \
         --expect-config max-num-seqs=8",
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["config_source"], "argv", "{rec}");
    assert_eq!(rec["server"]["kind"], "vllm");
    assert_eq!(rec["server"]["version"], "0.32.0", "from /version");
    let argv = rec["server"]["argv"].as_array().unwrap();
    assert!(argv.iter().any(|w| w == SPEC), "{rec}");
    assert!(argv.iter().any(|w| w == "<redacted>"), "{rec}");
    let all = format!("{}{}", r.stdout(), r.stderr());
    assert!(!all.contains("sk-argv-secret-1"), "{all}");
}

#[test]
fn json_valued_flag_mismatch_is_exit_13() {
    let r = expect_from_argv("--expect-config speculative-config.num_speculative_tokens=4");
    r.expect_code(13);
    let reason = r.one()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("num_speculative_tokens is 3, want 4"),
        "{reason}"
    );
    assert!(r.stderr().contains(&reason[..20]), "{}", r.stderr());
}

#[test]
fn argv_is_read_through_the_exec_prefix() {
    let (url, p) = vllm();
    let pid = p.pid();
    let dir = testkit::temp_dir("argv-prefix");
    let script = dir.join("prefix.sh");
    let calls = dir.join("calls");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec \"$@\"\n",
            calls.display()
        ),
    )
    .unwrap();
    let prefix = format!("sh {}", script.display());
    let (r, _) = run_timed(
        wr(&[
            "--server",
            "vllm",
            &url,
            "--pid",
            &pid,
            "--exec-prefix",
            &prefix,
            "--no-stdin",
            "--timeout",
            "10s",
            "--expect-config",
            "speculative_config.method=eagle",
        ]),
        "",
    );
    r.expect_code(0);
    assert_eq!(r.one()["config_source"], "argv");
    let log = std::fs::read_to_string(&calls).unwrap();
    assert!(log.contains(&format!("cat /proc/{pid}/cmdline")), "{log}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn no_args_and_no_process_is_a_mismatch_that_says_why() {
    let (url, _p) = vllm();
    let (r, _) = run_timed(
        wr_line(&format!(
            "--server vllm {url} --no-stdin --timeout 10s --expect-config max-num-seqs=8"
        )),
        "",
    );
    r.expect_code(13);
    let reason = r.one()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("give --pid, --unit or --container"),
        "{reason}"
    );
}
