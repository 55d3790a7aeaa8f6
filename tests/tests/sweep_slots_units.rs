//! GPU slots served by real service managers: a systemd template unit in
//! a throw-away container (testkit::nspawn; `llmsim@.service`, whose `%i`
//! picks each instance's port and GPU), and podman containers, one per
//! slot (testkit::podman), each with its own fake GPU list. Benches never
//! overlap, every record names the slot whose server it measured, every
//! slot is restored. Needs `cargo build --workspace`.

mod sweep_support;

use std::sync::Mutex;

use serde_json::Value;
use sweep_support::fleet::{argv, require_parallel};
use sweep_support::sim::boot;
use sweep_support::slots::{bench_window, overlap, KEY};
use sweep_support::{dump, records, with_config, SimExec, SweepArgs};
use testkit::nspawn;
use testkit::podman::Ctr;

/// One container test at a time: the machine has 2 cores.
static LOCK: Mutex<()> = Mutex::new(());

/// One bench record per value, no two at once, each by the server of the
/// slot it names (the GPUs it was given are the slot's).
fn assert_slots_measured(results: &std::path::Path, values: &[&str], out: &std::process::Output) {
    assert_eq!(out.status.code(), Some(0), "{}", dump(out));
    let recs = records(results);
    let mut windows = Vec::new();
    for v in values {
        let b = with_config(&recs, "bench", KEY, v);
        assert_eq!(b.len(), 1, "{KEY}={v}: {}", dump(out));
        let b: &Value = b[0];
        assert_eq!(
            b["server"]["args"]["simulated_cuda_visible_devices"], b["slot"]["gpus"],
            "{b}"
        );
        assert_eq!(b["server"]["args"]["speculative_num_steps"].to_string(), *v);
        windows.push(bench_window(b));
    }
    for (i, a) in windows.iter().enumerate() {
        for b in &windows[..i] {
            assert!(
                !overlap(*a, *b),
                "benches at once {a:?} {b:?}: {}",
                dump(out)
            );
        }
    }
}

/// `--unit 'llmsim@{slot}'`: instance 0 on port 8000 with GPU 0, instance
/// 1 on 8001 with GPU 1, both from one template; `--url` leaves `{port}`
/// to be read from each instance's launch line (`--port 800%i`).
#[test]
fn slots_as_instances_of_a_systemd_template_unit() {
    if let Some(why) = nspawn::unavailable() {
        testkit::skip(&why);
        return;
    }
    require_parallel();
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let c = boot();
    let sim = SimExec::in_container(8000)
        .load("1s")
        .warmup("0s")
        .probe("0s")
        .eagle(4);
    let exec = sim.exec().replace("--port 8000", "--port 800%i");
    let unit = format!(
        "[Unit]\nDescription=llm-sim slot %i\n[Service]\n\
         Environment=CUDA_VISIBLE_DEVICES=%i\nExecStart={exec}\nTimeoutStopSec=10\n"
    );
    c.write_file("/etc/systemd/system/llmsim@.service", &unit);
    c.sh("systemctl daemon-reload && systemctl start llmsim@0 llmsim@1");
    let show = |k: usize| c.sh(&format!("systemctl show -P ExecStart llmsim@{k}.service"));
    let originals = [argv(&show(0)), argv(&show(1))];
    assert!(originals[1]
        .as_deref()
        .unwrap_or("")
        .contains("--port 8001"));
    let pid = c.pid1.to_string();
    let dir = testkit::temp_dir("slots-systemd");
    let results = dir.join("r.jsonl");
    let out = SweepArgs::new()
        .args(&["--gpus", "0,1", "--unit", "llmsim@{slot}"])
        .args(&["--exec-prefix", &c.exec_prefix()])
        .args(&["--url", "http://127.0.0.1:{port}", "--server", "llm-sim"])
        .args(&["--ready-timeout", "60s"])
        .param(KEY, "1,2,3")
        .results(&results)
        .load(&["--duration", "1s", "--warmup", "0", "--max-tokens", "8"])
        .swap_wait()
        .behind(&["nsenter", "-t", &pid, "-n", "--"])
        .output()
        .unwrap();
    let journal = || c.sh("journalctl -u 'llmsim@*' -n 40 -o cat --no-pager; true");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n--- journal\n{}",
        dump(&out),
        journal()
    );
    assert_slots_measured(&results, &["1", "2", "3"], &out);
    for (k, original) in originals.iter().enumerate() {
        assert_eq!(
            &argv(&show(k)),
            original,
            "llmsim@{k} restored: {}",
            dump(&out)
        );
        let active = c.sh(&format!("systemctl is-active llmsim@{k}.service; true"));
        assert_eq!(active.trim(), "active", "{}", dump(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--container` per slot (podman), written as `--hosts` lines with each
/// slot's GPU and port (a container's own port is not read).
#[test]
fn slots_as_podman_containers_one_per_slot() {
    if !testkit::podman::gate() {
        return;
    }
    require_parallel();
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let ports = [testkit::free_port(), testkit::free_port()];
    let ctrs: Vec<Ctr> = (0..2)
        .map(|k| {
            let env = format!("CUDA_VISIBLE_DEVICES={k}");
            Ctr::run_sim(None, &format!("slot{k}"), &["-e", &env], ports[k], &[])
        })
        .collect();
    let originals: Vec<String> = ctrs
        .iter()
        .map(|c| c.inspect("{{json .Config.Cmd}}"))
        .collect();
    let template = ctrs[0].name.replace("slot0", "slot{slot}");
    let dir = testkit::temp_dir("slots-podman");
    let pool = dir.join("pool");
    let lines = format!("- gpus=0 port={}\n- gpus=1 port={}\n", ports[0], ports[1]);
    std::fs::write(&pool, lines).unwrap();
    let results = dir.join("r.jsonl");
    let out = SweepArgs::new()
        .args(&["--hosts", pool.to_str().unwrap()])
        .args(&["--container", &template, "--engine", "podman"])
        .args(&["--url", "http://127.0.0.1:{port}", "--server", "llm-sim"])
        .args(&["--ready-timeout", "60s"])
        .param(KEY, "2,3,4")
        .results(&results)
        .load(&["--duration", "1s", "--warmup", "0", "--max-tokens", "8"])
        .output();
    assert_slots_measured(&results, &["2", "3", "4"], &out);
    for (c, original) in ctrs.iter().zip(&originals) {
        assert_eq!(
            &c.inspect("{{json .Config.Cmd}}"),
            original,
            "{}",
            dump(&out)
        );
        assert_eq!(c.inspect("{{.State.Status}}"), "running", "{}", dump(&out));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
