//! svc-swap over SSH against a real sshd on 127.0.0.1 (testkit::sshd): key
//! auth with a swap of a process-managed llm-sim, host key mismatch and
//! auth failure refused with the spec untouched, injection attempts
//! harmless. Skips with a note when sshd is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::sshd::Sshd;

mod support;

use support::{ssh_base, SimSpec, EAGLE};

/// llm-sim as SGLang, its spec in a shell-hostile directory name.
fn sim_spec() -> SimSpec {
    SimSpec::in_shell_dir("ssh", EAGLE)
}

fn swap(sshd: &Sshd, key: &Path, known: &Path, args: &[&str]) -> testkit::Run {
    let mut c = support::command();
    c.args(sshd.args_with(key, known)).args(args);
    testkit::run(c, "")
}

#[test]
fn swap_over_ssh_with_key_auth_and_nasty_values() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = sim_spec();
    let nasty = "n; touch PWNED2 $(touch PWNED3) `touch PWNED4` \"q' \\ 7% $HOME\nz";
    let r = support::swap_with(
        &ssh_base(&sshd),
        &[
            "--spec",
            &spec.spec,
            "--set",
            &format!("model-name={nasty}"),
        ],
        "",
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["target"]["ssh"], sshd.target());
    assert_eq!(rec["config"]["model-name"], nasty);
    assert_eq!(rec["start"]["cmdline_verified"], true, "{rec}");
    assert_eq!(spec.server_info()["served_model_name"], nasty);
    // Second swap over SSH: a clean stop of the first instance.
    let r = support::swap_with(
        &ssh_base(&sshd),
        &["--spec", &spec.spec, "--set", "speculative-num-steps=2"],
        "",
    );
    r.expect_code(0);
    assert_eq!(r.one()["stop"]["result"], "clean");
    assert_eq!(spec.server_info()["speculative_num_steps"], 2);
    testkit::assert_no_pwned(&[
        spec.dir.clone(),
        spec.dir.parent().unwrap().to_path_buf(),
        PathBuf::from("."),
        std::env::var("HOME").map(PathBuf::from).unwrap_or_default(),
    ]);
}

#[test]
fn host_key_mismatch_and_bad_key_are_refused() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = sim_spec();
    let before = spec.text();
    let set_a =
        |key: &Path, known: &Path| swap(&sshd, key, known, &["--spec", &spec.spec, "--set", "a=1"]);
    let r = set_a(&sshd.client_key, &sshd.wrong_known_hosts);
    let rec = r.expect_one(21);
    assert_eq!(
        (rec["type"].as_str(), rec["exit_code"].as_i64()),
        (Some("failure"), Some(21))
    );
    assert!(r.stderr().contains("HOST KEY MISMATCH"), "{}", r.stderr());
    let r = set_a(&sshd.unauthorized_key, &sshd.known_hosts);
    r.expect_code(21);
    assert_eq!(r.one()["exit_code"], 21);
    assert_eq!(spec.text(), before, "spec untouched");
    assert!(
        !std::path::Path::new(&format!("{}.pid", spec.spec)).exists(),
        "nothing started"
    );
}

/// Regression: the SSH code of the core crate printed its warnings as
/// `sweepkit: warning:`; they carry the running tool's name.
#[test]
fn new_host_key_warning_names_svc_swap() {
    let Some(sshd) = Sshd::start() else { return };
    let spec = sim_spec();
    let known = spec.dir.join("known_hosts.new");
    std::fs::write(&known, "").unwrap();
    let r = swap(
        &sshd,
        &sshd.client_key,
        &known,
        &[
            "--accept-new-host-key",
            "--spec",
            &spec.spec,
            "--set",
            "a=1",
            "--dry-run",
        ],
    );
    r.expect_code(0);
    let err = r.stderr();
    assert!(err.contains("svc-swap: warning: added "), "{err}");
    assert!(!err.contains("sweepkit:"), "{err}");
    assert!(!std::fs::read_to_string(&known).unwrap().is_empty());
}

/// svc-swap over SSH killed (its whole process group, SSH session with it)
/// at random moments: the old or the new config runs, never neither, and
/// `--reattach` over a new session says which.
#[test]
fn killed_over_ssh_at_random_moments_leaves_old_or_new_running() {
    let Some(sshd) = Sshd::start() else { return };
    let seen = support::kill_rounds(&ssh_base(&sshd), 10, 2000, Duration::from_millis(1500));
    eprintln!("rounds ending old / new: {seen:?}");
    assert_eq!(seen[0] + seen[1], 10);
}

/// sshd and its session processes (found through /proc by parent PID).
fn sshd_pids(master: u32) -> Vec<u32> {
    let mut all = vec![master];
    let mut i = 0;
    while i < all.len() {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let Some((name, rest)) = stat.split_once(") ") else {
                continue;
            };
            let ppid: u32 = rest
                .split(' ')
                .nth(1)
                .and_then(|p| p.parse().ok())
                .unwrap_or(0);
            if ppid == all[i] && name.contains("(sshd") && !all.contains(&pid) {
                all.push(pid);
            }
        }
        i += 1;
    }
    all
}

fn sshd_master(config: &std::path::Path) -> u32 {
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let argv = String::from_utf8_lossy(&argv);
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if comm.starts_with("sshd") && argv.contains(config.to_str().unwrap()) {
            return pid;
        }
    }
    panic!("no sshd running {}", config.display());
}

/// Cut the test sshd of `config` and every session it holds at once. Each
/// process is stopped before any is killed, till no new one appears, so
/// none forks a session between the listing and the kills (a connection
/// accepted in that gap once outlived the cut, and the swap it carried
/// finished with exit 0).
fn cut_sshd(config: &std::path::Path) {
    let master = sshd_master(config);
    let mut stopped: Vec<u32> = Vec::new();
    for _ in 0..50 {
        let new: Vec<u32> = sshd_pids(master)
            .into_iter()
            .filter(|p| !stopped.contains(p))
            .collect();
        if new.is_empty() {
            break;
        }
        for p in &new {
            let _ = Command::new("kill")
                .args(["-STOP", &p.to_string()])
                .status();
        }
        stopped.extend(new);
        std::thread::sleep(Duration::from_millis(10));
    }
    kill_all(&stopped);
}

/// SIGKILL each of `pids`, children (listed last) first.
fn kill_all(pids: &[u32]) {
    for p in pids.iter().rev() {
        let _ = Command::new("kill")
            .args(["-KILL", &p.to_string()])
            .status();
    }
}

/// The test sshd started again from its `config` (same port, same keys).
fn sshd_again(config: &std::path::Path) -> std::process::Child {
    Command::new("/usr/sbin/sshd")
        .args(["-D", "-e", "-f"])
        .arg(config)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// sshd (and every sshd session process) killed mid-swap and back 2 s
/// later on the same port: svc-swap reconnects, follows its far-side job
/// and reports how it ended; the old or the new config runs. Odd rounds
/// cut sshd at once (every process stopped, then killed); even rounds kill
/// its processes one by one, children first, so a session's sshd may
/// report its shell's SIGKILL just before it dies itself (that once
/// came back as the launch's "exit by signal", recorded as the config's
/// failure).
#[test]
fn sshd_killed_mid_swap_reconnects_and_reports() {
    let Some(sshd) = Sshd::start() else { return };
    let config = sshd.path("sshd_config");
    let s = support::Sleeper::new("sshdkill");
    let base = ssh_base(&sshd);
    let mut seed = u64::from(std::process::id());
    let mut restarted = Vec::new();
    let mut cur = "0".to_string();
    s.start(&base);
    for i in 1..=4u32 {
        let mut c = support::command();
        c.args(&base)
            .args(["--spec", &s.spec, "--set", &format!("k={i}")])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(100 + support::next(&mut seed) % 400));
        if i % 2 == 1 {
            cut_sshd(&config);
        } else {
            kill_all(&sshd_pids(sshd_master(&config)));
        }
        std::thread::sleep(Duration::from_secs(2));
        restarted.push(sshd_again(&config));
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        let recs: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        eprintln!("round {i}: {}", stderr.trim());
        assert_eq!(recs.len(), 1, "{stderr}");
        let rec = &recs[0];
        let k = s.file_k();
        let new = i.to_string();
        assert_eq!(
            s.running_k().as_deref(),
            Some(k.as_str()),
            "round {i}: {rec}"
        );
        match rec["type"].as_str() {
            Some("swap") => assert_eq!(k, new, "{rec}"),
            _ => {
                assert_eq!(rec["config"]["k"], new.as_str(), "{rec}");
                assert_eq!(rec["running"], "old", "{rec}");
                assert_eq!(k, cur, "{rec}");
            }
        }
        cur = k;
        // The restarted sshd is this test's own: stop it for the next round.
        let mut last = restarted.pop().unwrap();
        kill_all(&sshd_pids(last.id()));
        let _ = last.wait();
        restarted.push(sshd_again(&config));
        std::thread::sleep(Duration::from_millis(300));
    }
    for mut r in restarted {
        let _ = r.kill();
        let _ = r.wait();
    }
}

/// Regression: sshd's processes, killed one by one with children first,
/// took the shell of a far-side command (`sh -c` listing the job dir)
/// first; the session's sshd reported its SIGKILL, then died itself, and
/// the swap was recorded as the config's failure ("failed (exit by
/// signal)", class `config`). Here an exec prefix does the same to the
/// first such command (its login shell killed, the session's sshd 50 ms
/// later): svc-swap runs the command again, reconnects, and the swap goes
/// through.
#[test]
fn command_killed_as_its_sshd_dies_is_run_again() {
    let Some(sshd) = Sshd::start() else { return };
    let s = support::Sleeper::new("sigkill");
    let base = ssh_base(&sshd);
    s.start(&base);
    let (wrap, once) = (s.dir.join("wrap.sh"), s.dir.join("killed-once"));
    // $PPID: the login shell running the command line; its parent: the
    // session's sshd.
    let script = format!(
        r#"case $3 in *'"$1"/*.json'*)
  if mkdir '{}' 2>/dev/null; then
    s=$(awk '{{print $4}}' /proc/$PPID/stat)
    (sleep 0.05; kill -9 "$s") </dev/null >/dev/null 2>&1 &
    kill -9 $PPID $$
  fi ;;
esac
exec "$@"
"#,
        once.display()
    );
    std::fs::write(&wrap, script).unwrap();
    let prefix = format!("sh '{}'", wrap.display());
    let pre = [base, vec!["--exec-prefix".into(), prefix]].concat();
    let r = support::swap_with(&pre, &["--spec", &s.spec, "--set", "k=1"], "");
    let rec = r.expect_one(0);
    assert!(once.exists(), "the prefix never killed a command");
    assert!(
        r.stderr().contains("ended by a signal; running it again"),
        "{}",
        r.stderr()
    );
    assert_eq!(
        (rec["type"].as_str(), s.file_k()),
        (Some("swap"), "1".into())
    );
    assert_eq!(s.running_k().as_deref(), Some("1"));
}

/// An SSH drop mid-swap with no retry budget (`--ssh-retry 0`, sshd gone
/// for good): svc-swap ends with the transport code and one error line,
/// its failure record says `transport`; the detached job finishes on its
/// own, the spec is whole (old or new) and no staged or temp file stays.
#[test]
fn ssh_drop_mid_swap_without_retry_exits_21_and_leaves_the_spec_whole() {
    let Some(sshd) = Sshd::start() else { return };
    let config = sshd.path("sshd_config");
    // Its stop takes 2 s, so the cut below lands mid-swap (with a quick
    // stop a loaded machine could finish the swap before the kill).
    let s = support::Sleeper::slow_stop("sshdrop");
    let base = ssh_base(&sshd);
    s.start(&base);
    let state_dir = PathBuf::from(format!("{}.sweepkit-swap", s.spec));
    let mut c = Command::new(env!("CARGO_BIN_EXE_svc-swap"));
    c.env_remove("SSH_AUTH_SOCK")
        .args(&base)
        .args(["--ssh-retry", "0", "--spec", &s.spec, "--set", "k=1"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    // Cut once the far side is at work (its job dir exists; it may be
    // left from the start above, so the cut can also land before the
    // launch, which the wait for the job's state below allows for).
    let t0 = Instant::now();
    while !state_dir.exists() && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(1));
    }
    cut_sshd(&config);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(21), "{stderr}");
    let errors = stderr
        .lines()
        .filter(|l| l.starts_with("svc-swap: error: "));
    assert_eq!(errors.count(), 1, "{stderr}");
    assert!(
        stderr.lines().all(|l| l.starts_with("svc-swap: ")),
        "{stderr}"
    );
    let rec: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (rec["type"].as_str(), rec["class"].as_str()),
        (Some("failure"), Some("transport")),
        "{rec}"
    );
    assert_eq!(rec["exit_code"], 21, "{rec}");
    // The job needs no session: wait for its result, then look.
    let id = rec["swap_id"].as_str().expect("swap_id");
    let st = state_dir.join(format!("{id}.state"));
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let text = std::fs::read_to_string(&st).unwrap_or_default();
        // No state after 2 s: cut before the launch, no job ever ran.
        let never = text.is_empty() && t0.elapsed() > Duration::from_secs(2);
        if never || text.lines().any(|l| l.starts_with("result=")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let ls = |d: &std::path::Path| -> Vec<String> {
        std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    eprintln!(
        "{}; job state: {:?}; dir: {:?}; job dir: {:?}",
        stderr.trim(),
        std::fs::read_to_string(&st).ok(),
        ls(&s.dir),
        ls(&state_dir)
    );
    let k = s.file_k();
    assert!(k == "0" || k == "1", "{k}");
    assert_eq!(s.running_k().as_deref(), Some(k.as_str()));
    for e in std::fs::read_dir(&s.dir).unwrap().flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        assert!(
            !n.contains(".sweepkit-new.") && !n.contains(".sweepkit-tmp."),
            "left behind: {n}"
        );
    }
}
