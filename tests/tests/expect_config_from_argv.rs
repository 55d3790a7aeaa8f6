//! `wait-ready --server vllm --expect-config` against the real
//! `llm-sim --personality vllm` (no server args exposed, as vLLM without
//! VLLM_SERVER_DEV_MODE), read from `/proc/PID/cmdline`: locally, through
//! an exec prefix, and over the test sshd; a wrong value is exit 13.

use testkit::sshd::Sshd;
use testkit::{cmd, run, Run, Sim};

const SPEC: &str = r#"{"method":"eagle","num_speculative_tokens":3}"#;
const EXPECT: &str = "speculative-config.num_speculative_tokens=3";

fn vllm_sim() -> Sim {
    Sim::start_ready(&["--personality", "vllm", "--speculative-config", SPEC])
}

/// wait-ready on `sim` by its PID, with `extra` (transport) and `expect`.
fn check(sim: &Sim, extra: &[&str], expect: &str) -> Run {
    let pid = sim.pid().to_string();
    let url = sim.base_url();
    let mut a = vec![
        "--server",
        "vllm",
        url.as_str(),
        "--pid",
        &pid,
        "--no-stdin",
        "--timeout",
        "20s",
        "--expect-config",
        expect,
    ];
    a.extend_from_slice(extra);
    run(cmd("wait-ready", &a), "")
}

/// The ready record read its config from the sim's own argv.
fn from_argv(r: &Run) {
    r.expect_code(0);
    let rec = &r.json_lines()[0];
    assert_eq!(rec["config_source"], "argv", "{rec}");
    let argv = rec["server"]["argv"].as_array().expect("argv kept");
    assert!(argv.iter().any(|w| w == SPEC), "{rec}");
    assert!(
        argv.iter().any(|w| w == "vllm"),
        "the sim's personality: {rec}"
    );
}

#[test]
fn vllm_sim_argv_checked_locally() {
    let sim = vllm_sim();
    from_argv(&check(&sim, &[], EXPECT));
    let bad = check(&sim, &[], "speculative-config.num_speculative_tokens=5");
    bad.expect_code(13);
    let reason = bad.json_lines()[0]["reason"].to_string();
    assert!(
        reason.contains("num_speculative_tokens is 3, want 5"),
        "{reason}"
    );
}

#[test]
fn vllm_sim_argv_checked_through_an_exec_prefix() {
    let sim = vllm_sim();
    let dir = testkit::temp_dir("i11-argv-prefix");
    let script = dir.join("prefix.sh");
    let calls = dir.join("calls");
    // A prefix that logs what ran through it, then runs it (as `pct exec`).
    let body = format!(
        "#!/bin/sh\necho \"$*\" >> {}\nexec \"$@\"\n",
        calls.display()
    );
    std::fs::write(&script, body).unwrap();
    let prefix = format!("sh {}", script.display());
    from_argv(&check(&sim, &["--exec-prefix", &prefix], EXPECT));
    let log = std::fs::read_to_string(&calls).unwrap_or_default();
    let read = format!("cat /proc/{}/cmdline", sim.pid());
    assert!(log.contains(&read), "argv read behind the prefix: {log}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn vllm_sim_argv_checked_over_ssh() {
    let Some(sshd) = Sshd::start() else { return };
    let sim = vllm_sim();
    let args = sshd.client_args();
    let ssh: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = check(&sim, &ssh, EXPECT);
    from_argv(&r);
    let rec = &r.json_lines()[0];
    assert!(
        rec["via"].as_str().unwrap_or("").starts_with("ssh "),
        "{rec}"
    );
    let bad = check(&sim, &ssh, "speculative_config.method=ngram");
    bad.expect_code(13);
}
