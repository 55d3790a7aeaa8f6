//! `sweep --hosts` with hosts reached over SSH, the reference campaign's
//! shape: SSH to a machine (the real test sshd, testkit::sshd, its host
//! key checked against a known_hosts file), then an exec prefix into a
//! container on it (`nsenter -t PID -a`, as `pct exec 129 --` on Proxmox).
//! Two systemd-in-nspawn containers share a network namespace
//! (testkit::netns) that this machine reaches by address: the sshd listens
//! there, each container's llm-sim on its own port. Booted once for every
//! check. sshd, systemd-nspawn and GNU parallel are prerequisites: missing,
//! the test fails. Needs `cargo build --workspace` first.

mod sweep_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;
use sweep_support::fleet::KEY;
use sweep_support::fleet::{self, Host};
use sweep_support::{dump, records, upstream_of, with_config, SweepArgs};
use testkit::netns::Netns;
use testkit::nspawn::Container;
use testkit::sshd::Sshd;

/// Two containers in `ns` (each reached as `USER@ADDR:PORT exec=nsenter
/// -t PID -a`), sim.service on ADDR:8001 and ADDR:8002.
fn boot_pool(ns: &Netns) -> Vec<Host> {
    fleet::boot_pool(2, &ns.addr, "100ms", |binds| {
        Container::boot_in_netns(binds, ns)
    })
}

/// sweep --hosts over SSH: one line per host, the SSH key and known_hosts
/// given once; `--url` a template filled from each line.
fn fleet_sweep(s: &Sshd, known_hosts: &Path, pool: &[Host], dir: &Path, values: &str) -> Command {
    let lines: Vec<String> = pool
        .iter()
        .map(|h| format!("{} port={} exec={}", s.target(), h.port, h.c.exec_prefix()))
        .collect();
    let file = dir.join("hosts");
    std::fs::write(&file, format!("# over SSH\n{}\n", lines.join("\n"))).unwrap();
    let results = dir.join("results.jsonl");
    let mut cmd = SweepArgs::new()
        .args(&[
            "--hosts",
            file.to_str().unwrap(),
            "--url",
            "http://{host}:{port}",
        ])
        .args(&["--ssh-key", s.client_key.to_str().unwrap()])
        .args(&["--known-hosts", known_hosts.to_str().unwrap()])
        .extend(fleet::unit_sweep(values, &results))
        .args(&["--drop-after", "1"])
        .load(&fleet::QUICK)
        .cmd();
    cmd.stdin(Stdio::null());
    cmd
}

/// The swap record a bench record carries: how its host was reached.
fn target_of(r: &Value) -> Value {
    upstream_of(r, "swap").map_or(Value::Null, |s| s["target"].clone())
}

#[test]
fn a_grid_over_two_hosts_reached_over_ssh_then_an_exec_prefix() {
    fleet::require_parallel_and_nspawn();
    let t0 = Instant::now();
    let ns = Netns::create().expect("a network namespace (needs iproute2 and root)");
    let s = Sshd::start_in(&ns).expect("sshd (scripts/deps.sh installs openssh-server)");
    let pool = boot_pool(&ns);
    eprintln!("sshd and 2 hosts up in {:?}", t0.elapsed());
    split_over_ssh(&s, &pool);
    eprintln!("split done at {:?}", t0.elapsed());
    a_wrong_host_key_touches_nothing(&s, &pool);
    eprintln!("host key check done at {:?}", t0.elapsed());
}

/// Four configs over the two hosts: each measured once, both hosts used,
/// every far-side command through sshd, both restored.
fn split_over_ssh(s: &Sshd, pool: &[Host]) {
    let dir = testkit::temp_dir("fleet-ssh");
    let values = ["1", "2", "3", "5"];
    let out = fleet_sweep(s, &s.known_hosts, pool, &dir, &values.join(","))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&dir.join("results.jsonl"));
    for v in values {
        assert_eq!(
            with_config(&recs, "bench", KEY, v).len(),
            1,
            "{v}: {}",
            dump(&out)
        );
    }
    let benches: Vec<&Value> = recs.iter().filter(|r| r["type"] == "bench").collect();
    let mut used = BTreeSet::new();
    for b in &benches {
        let t = target_of(b);
        assert_eq!(t["ssh"], s.target(), "reached over SSH: {t}");
        used.insert(t["exec_prefix"].as_str().unwrap_or("").to_string());
        let h = &b["server"]["host"];
        assert_eq!(h["name"], s.target(), "hardware read over SSH: {h}");
    }
    let prefixes: BTreeSet<String> = pool.iter().map(|h| h.c.exec_prefix()).collect();
    assert_eq!(used, prefixes, "both hosts took configs: {}", dump(&out));
    assert!(
        s.log_text().contains("Accepted publickey"),
        "sshd log:\n{}",
        s.log_text()
    );
    for h in pool {
        h.assert_restored(&out);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A known_hosts file with another key for the address: no host may be
/// used (exit 43, every config left unrun), no server touched, and the
/// refusal names the host key.
fn a_wrong_host_key_touches_nothing(s: &Sshd, pool: &[Host]) {
    let dir = testkit::temp_dir("fleet-ssh-key");
    let before: Vec<String> = pool
        .iter()
        .map(|h| h.c.sh("systemctl show -P MainPID sim.service"))
        .collect();
    let out = fleet_sweep(s, &s.wrong_known_hosts, pool, &dir, "1,2")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(43), "{}", dump(&out));
    let recs = records(&dir.join("results.jsonl"));
    assert_eq!(recs.iter().filter(|r| r["type"] == "bench").count(), 0);
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(err.contains("host key"), "{}", dump(&out));
    let after: Vec<String> = pool
        .iter()
        .map(|h| h.c.sh("systemctl show -P MainPID sim.service"))
        .collect();
    assert_eq!(before, after, "no server restarted");
    let _ = std::fs::remove_dir_all(&dir);
}
