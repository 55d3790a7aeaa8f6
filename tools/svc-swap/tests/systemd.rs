//! svc-swap against a real systemd booted in a throw-away container
//! (testkit::nspawn), driven through `--exec-prefix 'nsenter -t PID -a'`:
//! clean stop, SIGKILL after TimeoutStopSec, Restart=on-failure with
//! start-limit-hit, drop-in and in-place edits verified, an overriding
//! drop-in caught, rollback. Skips (passes with a note) only when
//! systemd-nspawn is missing. Needs `cargo build -p llm-sim`.

use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::nspawn::{boot_with_bins as boot, Container};
use testkit::Run;

mod support;

const SIM: &str = "/opt/sweepkit/bin/llm-sim --host 127.0.0.1 --port 8000 --load-time 10ms \
                   --warmup-time 10ms --speculative-algorithm EAGLE --speculative-eagle-topk 1 \
                   --speculative-num-steps 1";

/// Our drop-in.
const DROP_IN: &str = "/etc/systemd/system/sim.service.d/50-sweepkit.conf";

/// Install and start `sim.service`.
fn install(c: &Container, unit_extra: &str, service_extra: &str, args: &str) {
    c.write_file(
        "/etc/systemd/system/sim.service",
        &format!("[Unit]\nDescription=llm-sim\n{unit_extra}\n[Service]\nExecStart={SIM}{args}\n{service_extra}\n"),
    );
    c.sh("systemctl daemon-reload && systemctl start sim.service");
}

fn swap(c: &Container, args: &[&str]) -> Run {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_svc-swap"));
    cmd.args(["--exec-prefix", &c.exec_prefix(), "--wait", "20s"])
        .args(args);
    testkit::run(cmd, "")
}

/// `svc-swap --unit sim --set speculative-num-steps=2`, which exits 0; its
/// record.
#[track_caller]
fn swap_to_2(c: &Container) -> Value {
    swap(
        c,
        &testkit::words("--unit sim --set speculative-num-steps=2"),
    )
    .expect_one(0)
}

fn prop(c: &Container, unit: &str, p: &str) -> String {
    c.sh(&format!("systemctl show -P {p} {unit}"))
        .trim()
        .to_string()
}

/// /server_info from inside the container once /health is 200.
fn server_info(c: &Container) -> Value {
    c.sim_server_info(8000, "sim")
}

/// Whether `path` exists inside the container.
fn exists(c: &Container, path: &str) -> bool {
    c.run(&["test", "-e", path]).status.success()
}

fn gone(c: &Container, pid: &Value) -> bool {
    !exists(c, &format!("/proc/{pid}"))
}

#[test]
fn drop_in_swap_clean_stop_dry_run_and_restore() {
    let Some((c, _g)) = boot() else { return };
    install(&c, "", "TimeoutStopSec=10", "");
    let drop_in = DROP_IN;

    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=3 --dry-run"),
    );
    r.expect_code(0);
    assert_eq!(r.one()["method"], "dry-run");
    assert!(
        r.stderr().contains("+ExecStart=\n") && r.stderr().contains("--speculative-num-steps 3"),
        "{}",
        r.stderr()
    );
    assert!(!exists(&c, drop_in), "dry run wrote the drop-in");

    let old_pid = prop(&c, "sim", "MainPID");
    let old_inv = prop(&c, "sim", "InvocationID");
    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=3 --port 8000"),
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["method"], "drop-in");
    assert_eq!(rec["target"]["unit"], "sim.service");
    assert_eq!(rec["target"]["exec_prefix"], c.exec_prefix());
    assert_eq!(rec["stop"]["result"], "clean", "{rec}");
    assert_eq!(rec["stop"]["systemd_result"], "success");
    assert_eq!(rec["stop"]["old_main_pid"].to_string(), old_pid);
    assert_eq!(rec["stop"]["old_invocation_id"], old_inv);
    assert!(rec["stop"]["old_pids"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| gone(&c, p)));
    assert_ne!(rec["start"]["main_pid"].to_string(), old_pid);
    assert_eq!(
        rec["start"]["invocation_id"].as_str().unwrap(),
        prop(&c, "sim", "InvocationID")
    );
    assert_eq!(rec["start"]["cmdline_verified"], true);
    assert_eq!(rec["config"]["speculative-num-steps"], "3");
    let text = c.sh(&format!("cat {drop_in}"));
    assert!(
        text.contains("[Service]\nExecStart=\nExecStart=/opt/sweepkit/bin/llm-sim"),
        "{text}"
    );
    assert_eq!(server_info(&c)["speculative_num_steps"], 3);

    // A second swap backs the drop-in up; --restore walks back one at a time.
    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=4"),
    );
    r.expect_code(0);
    assert!(r.one()["backup"]
        .as_str()
        .unwrap()
        .starts_with(&format!("{drop_in}.sweepkit-bak.")));
    assert_eq!(server_info(&c)["speculative_num_steps"], 4);
    let r = swap(&c, &["--unit", "sim", "--restore"]);
    r.expect_code(0);
    assert_eq!(r.one()["config"]["speculative-num-steps"], "3");
    assert_eq!(server_info(&c)["speculative_num_steps"], 3);
    let r = swap(&c, &["--unit", "sim", "--restore"]);
    r.expect_code(0);
    assert_eq!(r.one()["config"]["speculative-num-steps"], "1");
    assert!(!exists(&c, drop_in), "last restore removes the drop-in");
    assert_eq!(server_info(&c)["speculative_num_steps"], 1);
    assert_eq!(prop(&c, "sim", "NeedDaemonReload"), "no");
}

#[test]
fn timeout_stop_sigkill_is_reported() {
    let Some((c, _g)) = boot() else { return };
    install(&c, "", "TimeoutStopSec=1", " --ignore-sigterm 60s");
    server_info(&c);
    let rec = swap_to_2(&c);
    assert_eq!(rec["stop"]["result"], "sigkill_after_timeout", "{rec}");
    assert_eq!(rec["stop"]["systemd_result"], "timeout");
    assert!(
        rec["stop"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("timed out"),
        "{rec}"
    );
    assert!(rec["stop"]["duration_s"].as_f64().unwrap() >= 0.9);
    assert_eq!(server_info(&c)["speculative_num_steps"], 2);
}

#[test]
fn restart_on_failure_and_start_limit_hit() {
    let Some((c, _g)) = boot() else { return };
    install(
        &c,
        "StartLimitIntervalSec=60\nStartLimitBurst=3",
        "Restart=on-failure\nRestartSec=50ms\nTimeoutStopSec=5",
        " --crash-after 100ms",
    );
    // Restart=on-failure restarts the crashing server until the start limit
    // stops it ("Start request repeated too quickly"; Result stays
    // exit-code on systemd 252); a manual start is then refused with
    // Result=start-limit-hit.
    let t0 = Instant::now();
    while prop(&c, "sim", "ActiveState") != "failed" {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "never hit the start limit"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(prop(&c, "sim", "NRestarts").parse::<u32>().unwrap() >= 2);
    assert!(
        !c.run(&["systemctl", "start", "sim"]).status.success(),
        "start limit not in force"
    );
    let journal = c.sh("journalctl -q -o cat -u sim");
    assert!(
        journal.contains("Start request repeated too quickly"),
        "{journal}"
    );
    let r = swap(&c, &testkit::words("--unit sim --unset crash-after"));
    let rec = r.expect_one(0);
    assert_eq!(rec["stop"]["result"], "already_stopped");
    assert!(
        matches!(
            rec["stop"]["systemd_result"].as_str(),
            Some("start-limit-hit" | "exit-code")
        ),
        "{rec}"
    );
    assert_eq!(rec["start"]["reset_failed"], true);
    assert_eq!(rec["changes"][0]["old"], "100ms");
    assert_eq!(rec["changes"][0]["new"], Value::Null);
    server_info(&c);
    // A graceful swap of a Restart=on-failure unit is not restarted behind
    // our back: one new PID, no restarts.
    let rec = swap_to_2(&c);
    assert_eq!(rec["stop"]["result"], "clean");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        prop(&c, "sim", "MainPID"),
        rec["start"]["main_pid"].to_string()
    );
    assert_eq!(prop(&c, "sim", "NRestarts"), "0");
    assert_eq!(prop(&c, "sim", "ActiveState"), "active");
}

#[test]
fn in_place_override_caught_and_bad_units() {
    let Some((c, _g)) = boot() else { return };
    install(&c, "", "TimeoutStopSec=10", "");
    let frag = "/etc/systemd/system/sim.service";
    let original = c.sh(&format!("cat {frag}"));
    let nasty = "m; touch /PWNED $(touch /PWNED2) 'q\" 100% $HOME\nx";
    let r = swap(
        &c,
        &[
            "--unit",
            "sim",
            "--in-place",
            "--set",
            "speculative-num-steps=5",
            "--set",
            &format!("model-name={nasty}"),
        ],
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["method"], "in-place");
    assert_eq!(rec["start"]["cmdline_verified"], true, "{rec}");
    let backup = rec["backup"].as_str().unwrap().to_string();
    assert_eq!(c.sh(&format!("cat '{backup}'")), original);
    let info = server_info(&c);
    assert_eq!(
        (
            info["speculative_num_steps"].as_u64(),
            info["served_model_name"].as_str()
        ),
        (Some(5), Some(nasty))
    );
    assert!(
        !c.run(&["sh", "-c", "ls /PWNED* 2>/dev/null | grep -q ."])
            .status
            .success(),
        "injection ran"
    );
    let r = swap(&c, &testkit::words("--unit sim --in-place --restore"));
    r.expect_code(0);
    assert_eq!(c.sh(&format!("cat {frag}")), original);
    assert!(!exists(&c, &backup));

    // A later drop-in overrides ours: exit 22, our drop-in removed, the
    // running unit untouched.
    c.write_file(
        "/etc/systemd/system/sim.service.d/60-override.conf",
        &format!("[Service]\nExecStart=\nExecStart={SIM} --seed 1\n"),
    );
    c.sh("systemctl daemon-reload && systemctl restart sim");
    let pid = prop(&c, "sim", "MainPID");
    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=2"),
    );
    r.expect_code(22);
    assert_eq!(r.one()["exit_code"], 22);
    assert!(!exists(&c, DROP_IN));
    assert_eq!(prop(&c, "sim", "MainPID"), pid);
    assert_eq!(prop(&c, "sim", "NeedDaemonReload"), "no");

    let r = swap(&c, &testkit::words("--unit nosuch --set a=1"));
    r.expect_code(20);
    assert!(
        r.stderr().contains("nosuch.service not found"),
        "{}",
        r.stderr()
    );
    c.write_file(
        "/etc/systemd/system/noexec.service",
        "[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStop=/bin/true\n",
    );
    c.sh("systemctl daemon-reload");
    let r = swap(&c, &testkit::words("--unit noexec --set a=1"));
    r.expect_code(20);
    assert!(r.stderr().contains("has no ExecStart"), "{}", r.stderr());
    assert!(!exists(&c, "/etc/systemd/system/noexec.service.d"));
}

#[test]
fn rollback_on_fail_restores_and_restarts() {
    let Some((c, _g)) = boot() else { return };
    install(&c, "", "TimeoutStopSec=10", "");
    server_info(&c);
    let before = prop(&c, "sim", "MainPID");
    // Fails for the new config; the rollback runs it again on the old one
    // (a record with method "rollback"), where it passes.
    let ready = "read rec; case \"$rec\" in *'\"method\":\"rollback\"'*) exit 0;; esac; \
                 [ \"$SWEEPKIT_UNIT\" = sim.service ] && [ -n \"$SWEEPKIT_MAIN_PID\" ] && exit 3";
    let r = swap(
        &c,
        &[
            "--unit",
            "sim",
            "--set",
            "speculative-num-steps=6",
            "--rollback-on-fail",
            "--ready-cmd",
            ready,
        ],
    );
    let rec = r.expect_one(25);
    assert_eq!(
        (rec["type"].as_str(), rec["kind"].as_str()),
        (Some("failure"), Some("swap_failed"))
    );
    assert!(
        rec["reason"]
            .as_str()
            .unwrap()
            .contains("ready command exited 3"),
        "{rec}"
    );
    assert!(!exists(&c, DROP_IN));
    assert_eq!(
        server_info(&c)["speculative_num_steps"],
        1,
        "old config running"
    );
    assert_ne!(prop(&c, "sim", "MainPID"), before, "restarted");
}

/// svc-swap killed (its whole process group) at random moments of swaps of
/// a real unit: the far-side job (a transient systemd unit) carries on; the
/// unit is active afterwards with the old or the new config, never stopped
/// or failed, and `--reattach` says which.
#[test]
fn killed_at_random_moments_leaves_the_unit_active_old_or_new() {
    let Some((c, _g)) = boot() else { return };
    install(&c, "", "TimeoutStopSec=10", "");
    server_info(&c);
    let dir = "/run/sweepkit-swap/sim.service";
    let mut seed = u64::from(std::process::id());
    let mut cur = 1u64;
    let mut seen = [0usize; 2];
    for i in 2..=7u64 {
        let args = [
            "--exec-prefix".to_string(),
            c.exec_prefix(),
            "--unit".into(),
            "sim".into(),
            "--set".into(),
            format!("speculative-num-steps={i}"),
        ];
        support::kill_after(
            &args,
            Duration::from_millis(support::next(&mut seed) % 1500),
        );
        let ids = c.sh(&format!(
            "ls {dir} 2>/dev/null | sed -n 's/[.]json$//p'; true"
        ));
        let mut reported = None;
        for id in ids.split_whitespace() {
            let r = swap(&c, &["--unit", "sim", "--reattach", id]);
            let rec = r.one();
            reported = Some(match rec["type"].as_str() {
                Some("swap") => {
                    r.expect_code(0);
                    assert_eq!(rec["reattached"], true);
                    i
                }
                _ => {
                    assert_eq!(rec["running"], "old", "{rec}");
                    cur
                }
            });
        }
        assert_eq!(prop(&c, "sim", "ActiveState"), "active", "round {i}");
        let k = server_info(&c)["speculative_num_steps"].as_u64().unwrap();
        assert!(k == cur || k == i, "round {i}: running {k}, was {cur}");
        if let Some(said) = reported {
            assert_eq!(said, k, "round {i}: the record says {said}, {k} runs");
        }
        seen[usize::from(k == i)] += 1;
        cur = k;
        assert_eq!(prop(&c, "sim", "NeedDaemonReload"), "no");
    }
    eprintln!("rounds ending old / new: {seen:?}");
}

/// A swap to the config that runs does not restart the unit (same MainPID
/// and InvocationID); --force-restart does; backups are bounded.
#[test]
fn noop_swap_keeps_the_instance_and_backups_are_bounded() {
    let Some((c, _g)) = boot() else { return };
    install(&c, "", "TimeoutStopSec=10", "");
    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=2"),
    );
    r.expect_code(0);
    server_info(&c);
    let (pid, inv) = (prop(&c, "sim", "MainPID"), prop(&c, "sim", "InvocationID"));
    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=2"),
    );
    r.expect_code(0);
    assert_eq!(r.one()["noop"], true);
    assert_eq!(prop(&c, "sim", "MainPID"), pid);
    assert_eq!(prop(&c, "sim", "InvocationID"), inv);
    let r = swap(
        &c,
        &testkit::words("--unit sim --set speculative-num-steps=2 --force-restart"),
    );
    r.expect_code(0);
    assert_ne!(prop(&c, "sim", "InvocationID"), inv);
    for k in 3..=7 {
        let r = swap(
            &c,
            &[
                "--unit",
                "sim",
                "--set",
                &format!("speculative-num-steps={k}"),
            ],
        );
        r.expect_code(0);
    }
    let n = c.sh("ls /etc/systemd/system/sim.service.d/ | grep -c sweepkit-bak; true");
    assert_eq!(n.trim(), "3", "default --keep-backups 3");
    assert_eq!(server_info(&c)["speculative_num_steps"], 7);
    let left = c.sh("ls /run/sweepkit-swap/sim.service/ 2>/dev/null; true");
    assert!(left.trim().is_empty(), "job files left: {left}");
}
