//! What svc-swap's test binaries share: running svc-swap, a process spec
//! for llm-sim on a fresh port ([`SimSpec`]), and the kill tests' sleeper
//! ([`Sleeper`], [`kill_rounds`]). Each binary uses part of it.

#![allow(dead_code)]

mod sim_spec;
mod sleeper;

#[allow(unused_imports)] // each binary uses its part
pub use sim_spec::{quick_sim, SimSpec, SHELL_DIR};
#[allow(unused_imports)]
pub use sleeper::{job_ids, kill_after, kill_rounds, next, reattach_all, Sleeper};

use std::process::Command;

use testkit::Run;

/// SGLang's speculative flags as SGLang accepts them (EAGLE, topk 1,
/// steps 1), as a spec's words.
pub const EAGLE: &str =
    "--speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1";

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
