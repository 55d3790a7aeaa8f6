//! What svc-swap's test binaries share: running svc-swap, the process
//! spec for llm-sim on a fresh port (testkit's [`SimSpec`]), and the kill tests' sleeper
//! ([`Sleeper`], [`kill_rounds`]). Each binary uses part of it.

#![allow(dead_code)]

mod sleeper;

#[allow(unused_imports)]
pub use sleeper::{job_ids, kill_after, kill_rounds, next, reattach_all, Sleeper};
#[allow(unused_imports)] // each binary uses its part
pub use testkit::spec::{kill_spec_server, quick_sim, spec_pid, SimSpec, EAGLE, SHELL_DIR};

use std::process::Command;

use testkit::Run;

/// svc-swap, with no SSH agent to fall back on (the tests give keys).
pub fn command() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_svc-swap"));
    c.env_remove("SSH_AUTH_SOCK");
    c
}

/// `svc-swap ARGS` with empty stdin.
pub fn swap(args: &[&str]) -> Run {
    swap_with(&[], args, "")
}

/// `svc-swap PRE ARGS` fed `stdin` (PRE: transport flags, a target).
pub fn swap_with(pre: &[String], args: &[&str], stdin: &str) -> Run {
    let mut c = command();
    c.args(pre).args(args);
    testkit::run(c, stdin)
}

/// `svc-swap TARGET --set speculative-num-steps=2` over SSH to `sshd`
/// (TARGET: the target's flags): exit 0, and the record names the SSH
/// destination. The record.
#[track_caller]
pub fn swap_to_2_over_ssh(sshd: &testkit::sshd::Sshd, target: &[&str]) -> serde_json::Value {
    let args = [target, &["--set", "speculative-num-steps=2"]].concat();
    let rec = swap_with(&sshd.client_args(), &args, "").expect_one(0);
    assert_eq!(rec["target"]["ssh"], sshd.target());
    rec
}

/// `--set-file SET_FILE --set speculative-adaptive`, then `more`: an
/// adaptive schedule's file and switch (SET_FILE: `FLAG=PATH`).
pub fn set_adaptive<'a>(set_file: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["--set-file", set_file, "--set", "speculative-adaptive"];
    v.extend_from_slice(more);
    v
}

/// `--ssh TARGET --ssh-key KEY --known-hosts FILE` for the test sshd.
pub fn ssh_base(sshd: &testkit::sshd::Sshd) -> Vec<String> {
    sshd.client_args()
}

/// `wait-ready --server sglang http://127.0.0.1:PORT [EXTRA] --timeout T`
/// as one `--ready-cmd` line.
pub fn ready_cmd(port: u16, extra: &str, timeout: &str) -> String {
    format!(
        "{} --server sglang http://127.0.0.1:{port}{extra} --timeout {timeout}",
        testkit::bin("wait-ready").display()
    )
}

/// A config that crashes at the end of a 2 s load, after the far-side
/// job's start check, so only the ready command (wait-ready on `port`)
/// can tell; with --rollback-on-fail: exit 25, the old config running,
/// "rolled back" in the reason. `swap` runs svc-swap on the target with
/// these words added; the failure record.
pub fn late_crash_is_rolled_back(
    port: u16,
    swap: impl FnOnce(&[&str]) -> Run,
) -> serde_json::Value {
    let ready = ready_cmd(port, "", "20s");
    let r = swap(&[
        "--set",
        "crash-on-load",
        "--set",
        "load-time=2s",
        "--rollback-on-fail",
        "--ready-cmd",
        &ready,
    ]);
    let rec = r.expect_one(25);
    assert_eq!(rec["running"], "old", "{rec}");
    assert!(
        rec["reason"].as_str().unwrap().contains("rolled back"),
        "{rec}"
    );
    rec
}
