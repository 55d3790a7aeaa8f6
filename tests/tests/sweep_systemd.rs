//! The reference campaign's topology: sweep.sh against a systemd unit in a
//! throw-away container (testkit::nspawn), every far-side command through
//! the command-prefix transport (`--exec-prefix 'nsenter -t PID -a'`, as
//! `pct exec` was), llm-sim as the server, a value that crashes at load and
//! a server that ignores SIGTERM (a slow stop that systemd ends with
//! SIGKILL after TimeoutStopSec). Skips only when systemd-nspawn is missing.
//! Needs `cargo build --workspace` first.

mod sweep_support;

use std::sync::Mutex;

use serde_json::Value;
use sweep_support::fleet::assert_unit_restored;
use sweep_support::sim::{boot, require_nspawn};
use sweep_support::{dump, records, upstream_of, with_config, SimExec, SweepArgs};
use testkit::nspawn;

/// One container at a time: the machine has 2 cores.
static LOCK: Mutex<()> = Mutex::new(());

const KEY: &str = "speculative-num-steps";

/// The swap record a bench or failure record carries (its upstream chain).
fn swap_of(r: &Value) -> Option<&Value> {
    upstream_of(r, "swap")
}

#[test]
fn sweep_a_systemd_unit_through_an_exec_prefix_with_a_crash_and_a_slow_stop() {
    if let Some(why) = nspawn::unavailable() {
        testkit::skip(&why);
        return;
    }
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let c = boot();
    // KV capacity 8192: steps > 8 is an OOM at load. --ignore-sigterm 30s
    // with TimeoutStopSec=2: every stop of a running server is a SIGKILL
    // after 2 s, the reference campaign's stale-stop trouble.
    let sim = SimExec::in_container(8000)
        .kv(8192)
        .flags("--ignore-sigterm 30s");
    let original = sim.eagle(4).install(&c, "TimeoutStopSec=2\n");

    // The sweep runs in the container's network namespace (its 127.0.0.1
    // is the server's); systemctl and journalctl go through the prefix.
    let pid = c.pid1.to_string();
    let dir = testkit::temp_dir("sweep-systemd");
    let results = dir.join("results.jsonl");
    let out = SweepArgs::new()
        .args(&["--unit", "sim", "--exec-prefix", &c.exec_prefix()])
        .args(&["--url", "http://127.0.0.1:8000", "--server", "llm-sim"])
        .arg("--expect-config")
        .param(KEY, "1,9,2")
        .levels("1,2")
        .results(&results)
        .quick("4", "16")
        .swap_wait()
        .behind(&["nsenter", "-t", &pid, "-n", "--"])
        .output()
        .unwrap();
    let journal = || c.sh("journalctl -u sim -n 40 -o cat --no-pager; true");
    assert_eq!(
        out.status.code(),
        Some(40),
        "{}\n--- journal\n{}",
        dump(&out),
        journal()
    );

    let recs = records(&results);
    for v in ["1", "2"] {
        let b = with_config(&recs, "bench", KEY, v);
        assert_eq!(
            b.len(),
            2,
            "steps={v}: a bench record per level\n{}",
            dump(&out)
        );
        let s = swap_of(b[0]).expect("bench carries its swap record");
        assert_eq!(s["target"]["manager"], "systemd");
        assert_eq!(s["target"]["exec_prefix"], c.exec_prefix());
    }
    let f = with_config(&recs, "failure", KEY, "9");
    assert_eq!(f.len(), 1, "{}", dump(&out));
    assert_eq!(f[0]["stage"], "ready");
    assert!(
        ["oom", "crashed_at_load"].contains(&f[0]["kind"].as_str().unwrap()),
        "{}",
        f[0]
    );
    // The slow stop: the instance before steps=9 ignored SIGTERM and was
    // killed by systemd after TimeoutStopSec, and the records say so.
    let stop9 = &swap_of(f[0]).expect("failure carries its swap record")["stop"];
    assert_eq!(stop9["result"], "sigkill_after_timeout", "{stop9}");
    // After the crash the next swap found the unit already stopped.
    let stop2 = &swap_of(with_config(&recs, "bench", KEY, "2")[0]).unwrap()["stop"];
    assert_eq!(stop2["result"], "already_stopped", "{stop2}");

    // The original command line is back and the unit runs it.
    assert_unit_restored(&c, &original, &out);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("OOM") || table.contains("crashed"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The documented rollback example on the prefix topology: `--ready-cmd`
/// is a plain `wait-ready URL`; the record on its stdin carries the exec
/// prefix, so it watches the unit inside the container (before, the record
/// lacked it and systemctl ran on the host). svc-swap returns with the old
/// server ready, not loading.
#[test]
fn a_rollback_through_an_exec_prefix_returns_with_the_old_server_ready() {
    require_nspawn();
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let c = boot();
    // Steps 9 is an OOM at load (KV capacity 8192); the old server takes
    // 1.5 s to load, so returning before it is ready would show.
    let sim = SimExec::in_container(8000).load("1500ms").probe("0s");
    sim.kv(8192).eagle(2).install(&c, "");
    let pid = c.pid1.to_string();
    let wait_ready = testkit::bin("wait-ready");
    let ready_cmd = format!(
        "test -n \"$SWEEPKIT_EXEC_PREFIX\" && {} http://127.0.0.1:8000 --server llm-sim --timeout 30s",
        wait_ready.display()
    );
    let prefix = c.exec_prefix();
    let out = std::process::Command::new("nsenter")
        .args(["-t", &pid, "-n", "--"])
        .arg(testkit::bin("svc-swap"))
        .args(["--unit", "sim", "--exec-prefix", &prefix])
        .args(["--set", "speculative-num-steps=9", "--rollback-on-fail"])
        .args(["--ready-cmd", &ready_cmd])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(25), "{}", dump(&out));
    // Ready now: a probe with a 1 s budget, from the container's network.
    let now = std::process::Command::new("nsenter")
        .args(["-t", &pid, "-n", "--"])
        .arg(&wait_ready)
        .args([
            "http://127.0.0.1:8000",
            "--server",
            "llm-sim",
            "--timeout",
            "1s",
        ])
        .args(["--no-stdin", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(
        now.status.code(),
        Some(0),
        "not ready at return: {}\nsvc-swap: {}\n{}",
        dump(&now),
        dump(&out),
        c.sh("systemctl status --no-pager sim.service; journalctl --no-pager -n 30")
    );
    let line = c.sh("systemctl show -P ExecStart sim.service");
    assert!(line.contains("--speculative-num-steps 2"), "{line}");
}
