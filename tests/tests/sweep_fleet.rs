//! `sweep --hosts`: one grid spread over a pool of hosts by GNU parallel.
//! The hosts are systemd-in-nspawn containers sharing one network namespace
//! (each its own unit and port, reached through `nsenter -t PID -a` exec
//! prefixes), llm-sim the server. One set of three containers serves every
//! check (boots cost seconds): the split, `--resume` over a different pool,
//! a host that fails at load mid-sweep and is dropped, Ctrl-C, and
//! `--keep-winner` on hosts of different hardware.
//! GNU parallel and systemd-nspawn are prerequisites: missing, the test
//! fails. Needs `cargo build --workspace` first. Local hosts (`-`), usage
//! errors and dry runs: sweep_fleet_local.rs; over SSH: sweep_fleet_ssh.rs.

mod sweep_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sweep_support::child::{signal, signal_group, spawn_piped};
use sweep_support::fleet::{self, Host};
use sweep_support::{all_records, dump, records, upstream_of, with_config, SweepArgs};
use testkit::nspawn::Container;

use sweep_support::fleet::KEY;

/// A host's line in a pool file: reached through its exec prefix.
fn line(h: &Host) -> String {
    format!("- port={} exec={}", h.port, h.c.exec_prefix())
}

/// Three containers on one network namespace, sim.service on 8001..8003.
fn boot_pool(load_time: &str) -> Vec<Host> {
    fleet::boot_pool(3, "127.0.0.1", load_time, Container::boot)
}

/// sweep --hosts FILE over `hosts`, run in their network namespace.
fn fleet_sweep(hosts: &[&Host], dir: &Path, values: &str, extra: &[&str]) -> Command {
    let lines: Vec<String> = hosts.iter().map(|h| line(h)).collect();
    fleet_sweep_lines(&lines, hosts[0], dir, values, extra)
}

/// sweep --hosts FILE with these host lines, in `net`'s network namespace.
fn fleet_sweep_lines(
    lines: &[String],
    net: &Host,
    dir: &Path,
    values: &str,
    extra: &[&str],
) -> Command {
    let file = dir.join("hosts");
    std::fs::write(&file, format!("# test pool\n{}\n", lines.join("\n"))).unwrap();
    let target = [
        "--hosts",
        file.to_str().unwrap(),
        "--url",
        "http://127.0.0.1:{port}",
    ];
    sweep_in(net, &target, dir, values, extra)
}

/// sweep (one host, no --hosts) of `host`, in its network namespace.
fn plain_sweep(host: &Host, dir: &Path, values: &str, extra: &[&str]) -> Command {
    let url = format!("http://127.0.0.1:{}", host.port);
    let prefix = host.c.exec_prefix();
    let target = ["--exec-prefix", &prefix, "--url", &url];
    sweep_in(host, &target, dir, values, extra)
}

fn sweep_in(net: &Host, target: &[&str], dir: &Path, values: &str, extra: &[&str]) -> Command {
    let pid = net.c.pid1.to_string();
    let mut args = SweepArgs::new()
        .args(target)
        .extend(fleet::unit_sweep(values, &dir.join("results.jsonl")));
    // Few short requests unless the caller says otherwise.
    if !extra.contains(&"--load-arg") {
        args = args.load(&fleet::QUICK);
    }
    let mut cmd = args
        .args(extra)
        .behind(&["nsenter", "-t", &pid, "-n", "--"]);
    cmd.stdin(Stdio::null());
    cmd
}

/// The exec prefix of the swap a bench or failure record carries.
fn host_of(r: &Value) -> String {
    upstream_of(r, "swap")
        .and_then(|s| s["target"]["exec_prefix"].as_str())
        .unwrap_or("")
        .into()
}

fn benches_per_value(recs: &[Value], values: &[&str]) -> Vec<usize> {
    values
        .iter()
        .map(|v| with_config(recs, "bench", KEY, v).len())
        .collect()
}

#[test]
fn one_grid_over_a_pool_of_systemd_hosts() {
    fleet::require_parallel_and_nspawn();
    let t0 = Instant::now();
    let pool = boot_pool("100ms");
    eprintln!("booted 3 hosts in {:?}", t0.elapsed());
    split_over_three_hosts(&pool);
    eprintln!("split done at {:?}", t0.elapsed());
    a_failing_host_is_dropped(&pool);
    eprintln!("drop done at {:?}", t0.elapsed());
    ctrl_c_restores_every_host(&pool, false);
    eprintln!("SIGINT to sweep done at {:?}", t0.elapsed());
    ctrl_c_restores_every_host(&pool, true);
    eprintln!("SIGINT to the group done at {:?}", t0.elapsed());
    // Last: it leaves the pooled winner running.
    keep_winner_on_mixed_hardware(&pool);
    eprintln!("keep-winner done at {:?}", t0.elapsed());
}

/// Six configs over three hosts, each measured once, every host used and
/// restored; then `--resume` over two of them runs only the new values.
fn split_over_three_hosts(pool: &[Host]) {
    let dir = testkit::temp_dir("fleet-split");
    let all: Vec<&Host> = pool.iter().collect();
    let out = fleet_sweep(&all, &dir, "1,2,3,5,6,7", &[])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&dir.join("results.jsonl"));
    let values = ["1", "2", "3", "5", "6", "7"];
    assert_eq!(
        benches_per_value(&recs, &values),
        vec![1; 6],
        "{}",
        dump(&out)
    );
    let used: BTreeSet<String> = recs.iter().map(host_of).collect();
    let prefixes: BTreeSet<String> = pool.iter().map(|h| h.c.exec_prefix()).collect();
    assert_eq!(used, prefixes, "every host took configs");
    // One origin record per host, in the results file.
    let origins = all_records(&dir.join("results.jsonl"))
        .into_iter()
        .filter(|r| r["type"] == "origin")
        .count();
    assert_eq!(origins, 3);
    for h in pool {
        h.assert_restored(&out);
    }
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("7"), "the table: {table}");

    // --resume over a pool of two: only 8 and 9 are new.
    let two = [&pool[0], &pool[1]];
    let out = fleet_sweep(&two, &dir, "1,2,3,5,6,7,8,9", &["--resume"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&dir.join("results.jsonl"));
    let values = ["1", "2", "3", "5", "6", "7", "8", "9"];
    assert_eq!(
        benches_per_value(&recs, &values),
        vec![1; 8],
        "{}",
        dump(&out)
    );
    for h in &two {
        h.assert_restored(&out);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Host 3 fails every start after its first config (an ExecStartPre that
/// fails unless the original command line is being started): its configs
/// are run on the others, it is dropped after two failures with a record
/// saying so, and it is still restored at the end (exit 45).
fn a_failing_host_is_dropped(pool: &[Host]) {
    let bad = &pool[2];
    bad.c.write_file(
        "/etc/flaky.sh",
        "#!/bin/sh\nn=$(cat /run/sim-starts 2>/dev/null || echo 0)\necho $((n + 1)) > /run/sim-starts\n\
         [ \"$n\" -lt 1 ] && exit 0\nsystemctl show -P ExecStart sim.service | grep -q -- '--speculative-num-steps 4 '\n",
    );
    bad.c.write_file(
        "/etc/systemd/system/sim.service.d/flaky.conf",
        "[Service]\nExecStartPre=/bin/sh /etc/flaky.sh\n",
    );
    bad.c.sh("systemctl daemon-reload");
    // The good hosts start slower than host 3 fails, so host 3 is back for
    // another config before the others have run them all (with 100 ms
    // loads on both, the good hosts could finish the grid while host 3's
    // failed swap rolled back, and host 3 failed only once).
    for h in &pool[..2] {
        h.c.write_file(
            "/etc/systemd/system/sim.service.d/slow.conf",
            "[Service]\nExecStartPre=/bin/sleep 1\n",
        );
        h.c.sh("systemctl daemon-reload");
    }
    let dir = testkit::temp_dir("fleet-drop");
    let all: Vec<&Host> = pool.iter().collect();
    // Enough configs that host 3 takes a second and a third one.
    let values = ["1", "2", "3", "5", "6", "7", "8", "9", "10", "11", "12"];
    let out = fleet_sweep(&all, &dir, &values.join(","), &[])
        .output()
        .unwrap();
    let journal = bad.c.sh("journalctl -u sim -n 30 -o cat --no-pager; true");
    assert_eq!(
        out.status.code(),
        Some(45),
        "{}\n--- journal\n{journal}",
        dump(&out)
    );
    let recs = records(&dir.join("results.jsonl"));
    assert_eq!(
        benches_per_value(&recs, &values),
        vec![1; 11],
        "{}",
        dump(&out)
    );
    let dropped: Vec<&Value> = recs
        .iter()
        .filter(|r| r["kind"] == "host_dropped")
        .collect();
    assert_eq!(dropped.len(), 1, "{}", dump(&out));
    assert_eq!(dropped[0]["class"], "transport");
    assert_eq!(
        dropped[0]["upstream"]["target"]["exec_prefix"],
        bad.c.exec_prefix()
    );
    // Only host 3 fails (svc-swap's swap_failed record names no target).
    let bad_failures = recs
        .iter()
        .filter(|r| r["type"] == "failure" && r["kind"] != "host_dropped")
        .count();
    assert!(bad_failures >= 2, "{}", dump(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("dropped after 2 failures"),
        "{}",
        dump(&out)
    );
    for h in pool {
        h.assert_restored(&out);
    }
    bad.c
        .sh("rm -r /etc/systemd/system/sim.service.d && systemctl daemon-reload");
    for h in &pool[..2] {
        h.c.sh("rm -f /etc/systemd/system/sim.service.d/slow.conf && systemctl daemon-reload");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--keep-winner` over two hosts of different hardware (one sees a fake
/// `nvidia-smi` through its exec prefix's PATH): one pick would compare
/// the hosts, so it is refused in one line naming --pool-hosts (exit 42)
/// and both hosts get their original back; with `--summarize-arg
/// --pool-hosts` the pooled pick runs on both.
fn keep_winner_on_mixed_hardware(pool: &[Host]) {
    let (a, b) = (&pool[0], &pool[1]);
    b.c.write_file(
        "/run/fake-gpu/nvidia-smi",
        "#!/bin/sh\nprintf 'NVIDIA L4, 23034 MiB\\n'\n",
    );
    b.c.sh("chmod +x /run/fake-gpu/nvidia-smi");
    let lines = [
        line(a),
        format!(
            "- port={} exec={} env PATH=/run/fake-gpu:/usr/sbin:/usr/bin:/sbin:/bin",
            b.port,
            b.c.exec_prefix()
        ),
    ];
    let dir = testkit::temp_dir("fleet-winner");
    let out = fleet_sweep_lines(&lines, a, &dir, "1,2", &["--keep-winner"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(42), "{}", dump(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let refusal: Vec<&str> = err.lines().filter(|l| l.contains("error")).collect();
    assert_eq!(refusal.len(), 1, "{err}");
    assert!(
        refusal[0].starts_with("sweep: error: --keep-winner: the hosts differ")
            && refusal[0].contains("--pool-hosts"),
        "{err}"
    );
    assert!(!err.contains("applying the winner failed"), "{err}");
    assert_eq!(
        benches_per_value(&records(&dir.join("results.jsonl")), &["1", "2"]),
        [1, 1]
    );
    a.assert_restored(&out);
    b.assert_restored(&out);
    // Pooled on purpose: the one pick runs on every host.
    let _ = std::fs::remove_dir_all(&dir);
    let dir = testkit::temp_dir("fleet-winner-pooled");
    let extra = ["--keep-winner", "--summarize-arg", "--pool-hosts"];
    let out = fleet_sweep_lines(&lines, a, &dir, "1,2", &extra)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&dir.join("results.jsonl"));
    let hosts: BTreeSet<String> = recs
        .iter()
        .filter(|r| r["type"] == "bench")
        .map(host_of)
        .collect();
    assert_eq!(hosts.len(), 2, "both hosts measured: {}", dump(&out));
    let steps = |h: &Host| {
        let a = h.argv().unwrap_or_default();
        let v = a.split(&format!("--{KEY} ")).nth(1).unwrap_or("");
        v.split(' ').next().unwrap_or("").to_string()
    };
    let (wa, wb) = (steps(a), steps(b));
    assert_eq!(wa, wb, "one pick on both: {}", dump(&out));
    assert!(wa == "1" || wa == "2", "the winner runs: {wa}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGINT to the sweep while all three hosts run configs: exit 130, the
/// results whole, every host's original config back and running. `group`:
/// to the whole process group (a terminal's Ctrl-C: GNU parallel, every
/// job and every tool get it too), else to the sweep process alone.
fn ctrl_c_restores_every_host(pool: &[Host], group: bool) {
    let dir = testkit::temp_dir("fleet-int");
    let all: Vec<&Host> = pool.iter().collect();
    // Each config's load lasts 4 s: long enough to be cut.
    let long = SweepArgs::new().load(&["--duration", "4s", "--warmup", "0"]);
    let mut cmd = fleet_sweep(&all, &dir, "1,2,3,5,6,7,8,9", &long.words());
    if group {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let child = spawn_piped(&mut cmd);
    let results = dir.join("results.jsonl");
    let t0 = Instant::now();
    // Once every host holds a config (three swaps done), interrupt.
    while std::fs::read_to_string(&results)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"type\":\"origin\""))
        .count()
        < 3
    {
        assert!(t0.elapsed() < Duration::from_secs(60), "no start");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    if group {
        signal_group(&child, "INT");
    } else {
        signal(&child, "INT");
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    let recs = records(&results);
    assert!(
        recs.iter().filter(|r| r["type"] == "bench").count() < 8,
        "stopped early: {}",
        dump(&out)
    );
    for h in pool {
        h.assert_restored(&out);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The benchmark (bench/fleet.sh runs it): wall time of a 9-config sweep
/// on 3 hosts against the same sweep on 1 host (plain, and `--hosts` with
/// one host for the fleet's own overhead), in the same run. Each server
/// loads for 8 s and each config is then benchmarked at two levels for
/// 2 s each (c=1 and c=4, one warm-up request each): about half the load
/// time, the shape of a real campaign (a load of ~100 s, then five levels
/// taking a minute or more). Both sweeps end with a restore (one more load
/// on every host), so with a config costing C and the restore R the best a
/// 3-host pool can do is (3C + R) / (9C + R); "grid" is the time to the
/// last record (the results file's mtime), without the restore.
#[test]
#[ignore = "benchmark: bench/fleet.sh"]
fn bench_nine_configs_on_three_hosts_against_one() {
    let pool = boot_pool("8s");
    let values = "1,2,3,5,6,7,8,9,10";
    let work =
        SweepArgs::new()
            .arg("-q")
            .levels("1,4")
            .load(&["--duration", "2s", "--warmup", "1"]);
    let work = work.words();
    let time = |mut cmd: Command, dir: &Path, tag: &str| {
        let t0 = std::time::SystemTime::now();
        let out = cmd.output().unwrap();
        let wall = t0.elapsed().unwrap().as_secs_f64();
        assert_eq!(out.status.code(), Some(0), "{tag}: {}", dump(&out));
        let meta = std::fs::metadata(dir.join("results.jsonl")).unwrap();
        let grid = meta.modified().unwrap().duration_since(t0).unwrap();
        let benches = records(&dir.join("results.jsonl"))
            .iter()
            .filter(|r| r["type"] == "bench")
            .count();
        assert_eq!(benches, 18, "{tag}: two levels x 9: {}", dump(&out));
        eprintln!(
            "bench: {tag}: wall {wall:.1} s, grid {:.1} s",
            grid.as_secs_f64()
        );
        (wall, grid.as_secs_f64())
    };
    let dirs: Vec<_> = ["1", "1f", "3"]
        .iter()
        .map(|t| testkit::temp_dir(&format!("fleet-bench-{t}")))
        .collect();
    let one = time(
        plain_sweep(&pool[0], &dirs[0], values, &work),
        &dirs[0],
        "1 host, plain sweep",
    );
    let one_f = time(
        fleet_sweep(&[&pool[0]], &dirs[1], values, &work),
        &dirs[1],
        "1 host, --hosts",
    );
    let all: Vec<&Host> = pool.iter().collect();
    let three = time(
        fleet_sweep(&all, &dirs[2], values, &work),
        &dirs[2],
        "3 hosts, --hosts",
    );
    let (ratio, grid_ratio) = (three.0 / one.0, three.1 / one.1);
    println!(
        "fleet: 9 configs, 8 s loads, 2 x 2 s levels: 1 host {:.1} s (grid {:.1} s); 1 host via --hosts {:.1} s \
         ({:+.2} s per config); 3 hosts {:.1} s (grid {:.1} s): ratio {ratio:.2}, grid \
         {grid_ratio:.2} (target <= 0.40: {})",
        one.0,
        one.1,
        one_f.0,
        (one_f.0 - one.0) / 9.0,
        three.0,
        three.1,
        if ratio <= 0.40 { "met" } else { "missed" }
    );
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}
