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
use sweep_support::{dump, records, sweep_behind, with_config};
use testkit::nspawn::{self, Container};

/// One container at a time: the machine has 2 cores.
static LOCK: Mutex<()> = Mutex::new(());

const KEY: &str = "speculative-num-steps";

/// The swap record a bench or failure record carries (its upstream chain).
fn swap_of(r: &Value) -> Option<&Value> {
    let mut cur = r;
    for _ in 0..4 {
        if cur["type"] == "swap" {
            return Some(cur);
        }
        cur = cur.get("upstream")?;
    }
    None
}

#[test]
fn sweep_a_systemd_unit_through_an_exec_prefix_with_a_crash_and_a_slow_stop() {
    if let Some(why) = nspawn::unavailable() {
        testkit::skip(&why);
        return;
    }
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let bin = testkit::bin("llm-sim");
    let c = Container::boot(&[(bin.parent().unwrap(), "/opt/sweepkit/bin")]).expect("boot");
    // KV capacity 8192: steps > 8 is an OOM at load. --ignore-sigterm 30s
    // with TimeoutStopSec=2: every stop of a running server is a SIGKILL
    // after 2 s, the reference campaign's stale-stop trouble.
    let exec = "/opt/sweepkit/bin/llm-sim --host 127.0.0.1 --port 8000 --load-time 200ms \
                --warmup-time 100ms --seed 1 --kv-capacity-tokens 8192 --ignore-sigterm 30s \
                --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 4";
    c.write_file(
        "/etc/systemd/system/sim.service",
        &format!("[Unit]\nDescription=llm-sim\n[Service]\nExecStart={exec}\nTimeoutStopSec=2\n"),
    );
    c.sh("systemctl daemon-reload && systemctl start sim.service");
    let original = c.sh("systemctl show -P ExecStart sim.service");

    // The sweep runs in the container's network namespace (its 127.0.0.1
    // is the server's); systemctl and journalctl go through the prefix.
    let pid = c.pid1.to_string();
    let dir = testkit::temp_dir("sweep-systemd");
    let results = dir.join("results.jsonl");
    let out = sweep_behind(
        &["nsenter", "-t", &pid, "-n", "--"],
        &[
            "--unit",
            "sim",
            "--exec-prefix",
            &c.exec_prefix(),
            "--url",
            "http://127.0.0.1:8000",
            "--server",
            "llm-sim",
            "--expect-config",
            "--param",
            KEY,
            "--values",
            "1,9,2",
            "--concurrency",
            "1,2",
            "--results",
            results.to_str().unwrap(),
            "--load-arg",
            "-n",
            "--load-arg",
            "4",
            "--load-arg",
            "--max-tokens",
            "--load-arg",
            "16",
            "--swap-arg",
            "--wait",
            "--swap-arg",
            "20s",
        ],
    )
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
    let now = c.sh("systemctl show -P ExecStart sim.service");
    let argv = |s: &str| {
        s.split("argv[]=")
            .nth(1)
            .and_then(|a| a.split(" ;").next())
            .map(str::to_string)
    };
    assert_eq!(argv(&now), argv(&original), "restored ExecStart");
    assert_eq!(
        c.sh("systemctl is-active sim.service; true").trim(),
        "active"
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("OOM") || table.contains("crashed"),
        "{table}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
