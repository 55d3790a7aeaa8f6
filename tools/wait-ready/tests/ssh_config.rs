//! `wait-ready --ssh ALIAS --ssh-config FILE`: the alias's HostName, Port,
//! User, IdentityFile and ProxyJump taken from an ssh config, through a
//! second real sshd as the jump host (testkit's harness, 127.0.0.1 only;
//! never the real ~/.ssh), and a malformed config line's exit code.

mod common;

use common::{run_timed, wr};
use testkit::sshd::Sshd;
use testkit::Sim;

fn started(s: Option<Sshd>) -> Sshd {
    s.expect("sshd installed (scripts/deps.sh installs openssh-server)")
}

/// `Host gpu1` reached through `Host jumpbox`; both keys in one known_hosts.
fn write_config(target: &Sshd, j: &Sshd) -> String {
    let kh = target.path("all_known_hosts");
    let keys = std::fs::read_to_string(&target.known_hosts).unwrap()
        + &std::fs::read_to_string(&j.known_hosts).unwrap();
    std::fs::write(&kh, keys).unwrap();
    let text = format!(
        "Host jumpbox\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n\
         Host gpu1\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n  \
         ProxyJump jumpbox\n\
         Host *\n  UserKnownHostsFile {}\n",
        j.port,
        j.user,
        j.client_key.display(),
        target.port,
        target.user,
        target.client_key.display(),
        kh.display()
    );
    let p = target.path("ssh_config");
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn ssh_alias_through_proxy_jump_watches_the_far_pid() {
    let (target, j) = (started(Sshd::start()), started(Sshd::start_jump()));
    let cfg = write_config(&target, &j);
    let sim = Sim::start(&testkit::words("--load-time 300ms --warmup-time 200ms"));
    let pid = sim.pid().to_string();
    let mut c = wr(&["--ssh", "gpu1", "--ssh-config", &cfg]);
    c.args(["--server", "llm-sim", "--pid", &pid, "--timeout", "20s"]);
    c.arg(sim.base_url());
    let (r, _) = run_timed(c, "");
    let rec = r.expect_one(0);
    assert_eq!(rec["outcome"], "ready", "{rec}");
    assert!(rec["via"].as_str().unwrap().starts_with("ssh "), "{rec}");
    let log = j.log_text();
    assert!(
        log.contains(&format!("target 127.0.0.1 port {}", target.port)),
        "not through the jump host; its log:\n{log}"
    );
}

#[test]
fn malformed_ssh_config_line_exits_27_naming_file_and_line() {
    let target = started(Sshd::start());
    let cfg = target.path("bad_config");
    std::fs::write(&cfg, "Host gpu1\n  HostName 127.0.0.1\n  Port twenty-two\n").unwrap();
    let cfg = cfg.display().to_string();
    let mut c = wr(&["--ssh", "gpu1", "--ssh-config", &cfg, "--timeout", "5s"]);
    c.arg("http://127.0.0.1:1/health");
    let (r, _) = run_timed(c, "");
    r.expect_code(27);
    assert!(r.stdout().is_empty(), "{}", r.stdout());
    let err = r.stderr();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.starts_with(&format!("wait-ready: error: {cfg}:3: ")),
        "{err}"
    );
}

#[test]
fn swap_record_alias_is_resolved_through_the_env_named_config() {
    let (target, j) = (started(Sshd::start()), started(Sshd::start_jump()));
    let cfg = write_config(&target, &j);
    let sim = Sim::start(&testkit::words("--load-time 200ms --warmup-time 200ms"));
    // As svc-swap --ssh gpu1 writes it: the alias, not the resolved host.
    let line = serde_json::json!({
        "type": "swap", "schema": 1,
        "config": {"speculative-num-steps": "3"},
        "provenance": {"tool": "svc-swap", "version": "0.1.0",
                       "started_at": "2026-11-30T05:00:00Z", "finished_at": "2026-11-30T05:00:01Z"},
        "target": {"manager": "process", "unit": "sim.spec", "port": sim.port, "ssh": "gpu1"},
        "changes": [], "exec_start": ["llm-sim"],
        "stop": {"result": "clean", "duration_s": 0.1},
        "start": {"started_at": "2026-11-30T05:00:01Z", "main_pid": sim.pid()},
        "method": "spec"
    })
    .to_string()
        + "\n";
    let mut c = wr(&["--timeout", "20s"]);
    c.env("SWEEPKIT_SSH_CONFIG", &cfg);
    let (r, _) = run_timed(c, &line);
    let rec = r.expect_one(0);
    assert_eq!(rec["outcome"], "ready", "{rec}");
    assert!(rec["via"].as_str().unwrap().starts_with("ssh "), "{rec}");
    assert!(
        j.log_text()
            .contains(&format!("target 127.0.0.1 port {}", target.port)),
        "not through the jump host"
    );
}

#[test]
fn sshd_down_for_five_seconds_at_start_costs_a_pause_not_the_run() {
    let mut s = started(Sshd::start());
    let sim = Sim::start(&testkit::words("--load-time 200ms --warmup-time 200ms"));
    let pid = sim.pid().to_string();
    let (key, kh) = (s.client_key.clone(), s.known_hosts.clone());
    let mut c = wr(&["--ssh", &s.target(), "--ssh-config", "/dev/null"]);
    c.arg("--ssh-key").arg(&key).arg("--known-hosts").arg(&kh);
    c.args(["--server", "llm-sim", "--pid", &pid, "--timeout", "30s"]);
    c.arg(sim.base_url());
    s.stop();
    let back = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(5));
        s.restart();
        s
    });
    let (r, wall) = run_timed(c, "");
    r.expect_code(0);
    assert_eq!(r.one()["outcome"], "ready");
    assert!(wall >= 4.5, "connected during the outage? {wall:.1}s");
    assert!(r.stderr().contains("retrying"), "{}", r.stderr());
    back.join().unwrap();
}
