//! `--unit` through `--exec-prefix`: a stand-in for systemctl and
//! journalctl (a shell script behind the prefix, as `pct exec 129 --` would
//! be) plays a unit that fails or restarts while the port stays closed.

mod common;

use common::{fake_systemd, run_timed, wr};

const ACTIVATING: &str = "LoadState=loaded\nActiveState=activating\nSubState=start\nResult=success\nNRestarts=0\nInvocationID=aaa\nExecMainCode=0\nExecMainStatus=0\nMainPID=0\n";

fn run_unit(tag: &str, state2: &str) -> (testkit::Run, f64) {
    watch_unit(
        tag,
        state2,
        &["--unit", "model.service", "--timeout", "10s"],
    )
}

/// wait-ready with `flags` on a closed port, behind a stand-in systemd
/// (`--exec-prefix`) whose unit is activating, then in `state2`.
fn watch_unit(tag: &str, state2: &str, flags: &[&str]) -> (testkit::Run, f64) {
    let dir = testkit::temp_dir(tag);
    std::fs::write(dir.join("state1"), ACTIVATING).unwrap();
    std::fs::write(dir.join("state2"), state2).unwrap();
    let prefix = fake_systemd(&dir);
    let url = format!("http://127.0.0.1:{}/health", testkit::free_port());
    let mut c = wr(flags);
    c.args(["--exec-prefix", &prefix, &url]);
    let out = run_timed(c, "");
    let _ = std::fs::remove_dir_all(dir);
    out
}

#[test]
fn failed_unit_is_a_crash_with_the_journal_tail() {
    let (r, wall) = run_unit(
        "unit-failed",
        "LoadState=loaded\nActiveState=failed\nSubState=failed\nResult=exit-code\nNRestarts=0\nInvocationID=aaa\nExecMainCode=1\nExecMainStatus=1\n",
    );
    r.expect_code(10);
    assert!(wall < 4.0, "{wall}");
    let rec = r.one();
    assert_eq!(rec["kind"], "oom", "the journal shows an OOM: {rec}");
    let reason = rec["reason"].as_str().unwrap();
    assert!(reason.contains("Result=exit-code"), "{reason}");
    assert!(reason.contains("exited with status 1"), "{reason}");
    assert_eq!(rec["log_tail"].as_array().unwrap().len(), 3);
}

#[test]
fn rising_nrestarts_is_a_restart_loop() {
    let (r, _) = run_unit(
        "unit-loop",
        "LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nResult=exit-code\nNRestarts=2\nInvocationID=bbb\nExecMainCode=1\nExecMainStatus=1\n",
    );
    let rec = r.expect_one(11);
    assert_eq!(rec["kind"], "restart_loop");
    assert!(
        rec["reason"].as_str().unwrap().contains("NRestarts 0 -> 2"),
        "{rec}"
    );
}

#[test]
fn activating_unit_means_loading_not_unreachable() {
    let (r, _) = watch_unit(
        "unit-loading",
        ACTIVATING,
        &["--unit", "m.service", "--timeout", "2500ms"],
    );
    r.expect_code(124);
}

#[test]
fn dead_main_pid_of_a_restarting_unit_is_a_restart_loop_not_a_crash() {
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id().to_string();
    gone.wait().unwrap();
    let (r, _) = watch_unit(
        "unit-pid-loop",
        "LoadState=loaded\nActiveState=activating\nSubState=auto-restart\nResult=exit-code\nNRestarts=1\nInvocationID=aaa\n",
        &["--unit", "m.service", "--pid", &pid, "--timeout", "10s"],
    );
    r.expect_code(11);
}
