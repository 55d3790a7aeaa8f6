//! `sweep --hosts` without containers: a local host (`-`) whose server is a
//! process spec (svc-swap's process manager), bad pools, and dry runs, so
//! these run wherever GNU parallel does. Needs `cargo build --workspace`.

mod sweep_support;

use std::process::{Command, Stdio};

use sweep_support::child::spawn_piped;
use sweep_support::fleet::{local_spec, KEY, QUICK};
use sweep_support::{dump, records, sweep_behind, with_config, SpecFile, SweepArgs};

/// `sweep --hosts -` over `spec`, killed after 60 s (a hang fails, exit 124).
/// Without SHELL in its environment, as under `env -i` and some CI
/// runners: GNU parallel's worker runs each job with $SHELL, and with none
/// it ran nothing and logged exit 0 (every config "without a result").
fn local_pool(spec: &SpecFile, port: u16, values: &str, extra: &[&str]) -> Command {
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let mut cmd = SweepArgs::new()
        .args(&["--hosts", "-", "--spec", spec.s(), "--url", &url])
        .args(&["--server", "llm-sim"])
        .param(KEY, values)
        .results(&results)
        .args(extra)
        .behind(&["timeout", "60"]);
    cmd.stdin(Stdio::null()).env_remove("SHELL");
    cmd
}

/// Regression: a job held its host's lock on an fd that the tools
/// inherited, so the server svc-swap's process manager started for the
/// first config (a child that lives on) kept the host locked, and the
/// second config waited for ever. Every config runs; the host is restored.
#[test]
fn a_server_started_by_a_job_does_not_keep_its_host_locked() {
    let (spec, port) = local_spec("fleet-local-lock");
    let original = spec.exec_start();
    let quick = SweepArgs::new().load(&QUICK);
    let out = local_pool(&spec, port, "1,2,3", &quick.words())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&spec.results());
    for v in ["1", "2", "3"] {
        let n = with_config(&recs, "bench", KEY, v).len();
        assert_eq!(n, 1, "{v}: {}", dump(&out));
    }
    assert_eq!(spec.exec_start(), original, "restored");
}

/// A tool that rejects a pass-through argument stops the whole pool
/// (exit 2) after one config, and the host is restored.
#[test]
fn a_usage_error_in_a_job_stops_the_pool() {
    let (spec, port) = local_spec("fleet-usage-job");
    let original = spec.exec_start();
    let out = local_pool(&spec, port, "1,2,3", &["--load-arg", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", dump(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a tool rejected its arguments"), "{err}");
    assert_eq!(err.matches("] [").count(), 1, "one config only: {err}");
    assert_eq!(spec.exec_start(), original, "restored");
}

/// Bad `--hosts` input: exit 2 with one line that names what was wrong.
#[test]
fn bad_host_pools_are_usage_errors() {
    let dir = testkit::temp_dir("fleet-usage");
    let file = dir.join("pool");
    std::fs::write(&file, "root@gpu1 port=1\n\nroot@gpu2 oops\n").unwrap();
    let f = file.to_str().unwrap();
    let nofile = dir.join("none/pool");
    let cases: [(&[&str], &str); 7] = [
        (&["--hosts", f], "line 3: 'oops': expected NAME=VALUE"),
        (
            &["--hosts", "a,b", "--ssh", "root@c"],
            "--hosts names every host",
        ),
        (
            &["--hosts", "a,b", "--url", "http://{host}:{port}"],
            "no value for {port}",
        ),
        (&["--hosts", nofile.to_str().unwrap()], "no such file"),
        (&["--hosts", "a,a"], "the same host twice"),
        (&["--hosts", "a", "--drop-after", "0"], "--drop-after '0'"),
        (
            &[
                "--hosts",
                "a",
                "--keep-winner",
                "--summarize-arg",
                "--per-host",
            ],
            "--keep-winner with --summarize-arg --per-host",
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["--param", KEY, "--values", "1,2", "--unit", "sim"];
        args.extend_from_slice(&["--results", "/nonexistent/r.jsonl"]);
        args.extend_from_slice(extra);
        if !extra.contains(&"--url") {
            args.extend_from_slice(&["--url", "http://{host}:8000"]);
        }
        let out = sweep_behind(&[], &args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {}", dump(&out));
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(
            err.starts_with("sweep: error: ") && err.contains(want),
            "{extra:?}: {err}"
        );
        assert!(out.stdout.is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--dry-run` with a pool: each host with its URL, then the plan.
#[test]
fn a_fleet_dry_run_shows_the_pool_and_touches_nothing() {
    let dir = testkit::temp_dir("fleet-dry");
    let file = dir.join("pool");
    std::fs::write(
        &file,
        "# two containers\n- port=8001 exec=pct exec 129 --\nroot@gpu2:2222 url=http://10.0.0.2:30000\n",
    )
    .unwrap();
    let results = dir.join("r.jsonl");
    let out = sweep_behind(
        &[],
        &[
            "--hosts",
            file.to_str().unwrap(),
            "--unit",
            "sim",
            "--url",
            "http://{host}:{port}",
            "--param",
            KEY,
            "--values",
            "1,2",
            "--results",
            results.to_str().unwrap(),
            "--dry-run",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(
        plan.contains("# host 1: pct exec 129 -- -> http://localhost:8001"),
        "{plan}"
    );
    assert!(
        plan.contains("# host 2: root@gpu2:2222 -> http://10.0.0.2:30000"),
        "{plan}"
    );
    assert!(
        plan.contains("--exec-prefix pct\\ exec\\ 129\\ --"),
        "{plan}"
    );
    assert_eq!(plan.matches("# [").count(), 2, "{plan}");
    assert!(!results.exists() && !dir.join("r.jsonl.fleet").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// The README's fleet examples run as written (as dry runs: `sweep` is the
/// repository's script with `--dry-run` added), so the docs cannot drift
/// from the flags.
#[test]
fn the_readme_fleet_examples_run_as_dry_runs() {
    let blocks = sweep_support::readme_fleet_blocks();
    let bin_dir = testkit::bin("svc-swap").parent().unwrap().to_path_buf();
    let sweep = testkit::repo_root().join("scripts/sweep.sh");
    for block in &blocks {
        let dir = testkit::temp_dir("fleet-readme");
        let script = format!(
            "set -e\nsweep() {{ bash '{}' --bin-dir '{}' \"$@\" --dry-run; }}\n{block}",
            sweep.display(),
            bin_dir.display()
        );
        let out = Command::new("bash")
            .args(["-c", &script])
            .current_dir(&dir)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{block}\n{}", dump(&out));
        let plan = String::from_utf8_lossy(&out.stdout);
        assert!(plan.contains("# host 2: root@"), "{block}\n{plan}");
        assert!(plan.contains("# [1/"), "{block}\n{plan}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Every host dropped (here the one host, whose config cannot be read, so
/// each try blames it): parallel's sshlogin file has no host left, the rest
/// of the grid stays without a result (exit 43), one host_dropped record
/// says why, and the per-try log names the host of every try.
#[test]
fn a_pool_with_every_host_dropped_ends_with_no_host_left() {
    let dir = testkit::temp_dir("fleet-all-dropped");
    let results = dir.join("r.jsonl");
    let spec = dir.join("missing.spec");
    let args = [
        "--hosts",
        "-",
        "--spec",
        spec.to_str().unwrap(),
        "--url",
        "http://127.0.0.1:9",
        "--server",
        "llm-sim",
        "--param",
        KEY,
        "--values",
        "1,2,3,4",
        "--results",
        results.to_str().unwrap(),
    ];
    let mut cmd = sweep_behind(&["timeout", "60"], &args);
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(43), "{}", dump(&out));
    let recs = sweep_support::all_records(&results);
    let dropped = recs.iter().filter(|r| r["kind"] == "host_dropped").count();
    assert_eq!(dropped, 1, "{}", dump(&out));
    assert!(recs.iter().all(|r| r["type"] != "bench"));
    let tries = std::fs::read_to_string(dir.join("r.jsonl.fleet/tries.jsonl")).unwrap();
    // Two at least: a job parallel started before the drop reached it
    // tries too.
    assert!(tries.lines().count() >= 2, "{tries}");
    for t in tries.lines() {
        let t: serde_json::Value = serde_json::from_str(t).unwrap();
        assert_eq!(
            (t["type"].as_str(), t["step"].as_str()),
            (Some("try"), Some("blame-host"))
        );
        assert!(t["host"].as_str().is_some_and(|h| !h.is_empty()), "{t}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// SIGINT to the sweep alone while a job's loadgen runs: the job is told
/// to stop through parallel (its worker TERMs the job's group), the run's
/// shell outlives the TERM and waits for its tools, so loadgen's cut-short
/// level lands as a partial bench record; exit 130, the host restored, and
/// long before the 10 s level would have ended.
#[test]
fn ctrl_c_stops_a_local_pools_job_with_its_partial_record() {
    let (spec, port) = local_spec("fleet-local-int");
    let original = spec.exec_start();
    let long = SweepArgs::new().load(&["--duration", "10s", "--warmup", "0"]);
    let mut cmd = local_pool(&spec, port, "1,2", &long.words());
    let child = spawn_piped(&mut cmd);
    let results = spec.results();
    let t0 = std::time::Instant::now();
    // The origin is recorded before the first swap; the swap and the
    // server's start take about a second, then the 10 s level runs.
    while !std::fs::read_to_string(&results)
        .unwrap_or_default()
        .contains("\"type\":\"origin\"")
    {
        assert!(t0.elapsed().as_secs() < 30, "no origin record");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    std::thread::sleep(std::time::Duration::from_millis(3000));
    let t1 = std::time::Instant::now();
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", dump(&out));
    assert!(
        t1.elapsed().as_secs() < 8,
        "stopped at once: {}",
        dump(&out)
    );
    let recs = records(&results);
    let partial = recs
        .iter()
        .filter(|r| r["type"] == "bench" && r["partial"] == true)
        .count();
    assert_eq!(partial, 1, "{}", dump(&out));
    assert_eq!(spec.exec_start(), original, "restored");
}

/// `--compare-to` with a pool compares the whole grid once, after the
/// table, as a single sweep does. Regression: each pool job compared its
/// own part of the file and the driver never compared the whole.
#[test]
fn a_pool_compares_the_whole_grid_with_an_earlier_run_once() {
    let (spec, port) = local_spec("fleet-compare-to");
    let quick = SweepArgs::new().load(&QUICK);
    let first = local_pool(&spec, port, "1,2", &quick.words())
        .output()
        .unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", dump(&first));
    let earlier = spec.results().with_extension("earlier.jsonl");
    std::fs::rename(spec.results(), &earlier).unwrap();
    let mut extra = quick.words();
    let earlier_s = earlier.display().to_string();
    extra.extend(["--compare-to", earlier_s.as_str()]);
    let out = local_pool(&spec, port, "1,2", &extra).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let before = format!("before: {}: ", earlier.display());
    assert_eq!(text.matches(&before).count(), 1, "{}", dump(&out));
    for v in ["1", "2"] {
        let cell = format!("{KEY}={v}");
        assert!(
            text.lines()
                .any(|l| l.starts_with(&cell) && l.contains("tpot_ms.p50")),
            "{cell}: {}",
            dump(&out)
        );
    }
}
