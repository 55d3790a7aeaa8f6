//! A stage killed mid-sweep (SIGKILL: no record, no clean-up) costs its
//! config a failure record that keeps the config, never records with
//! `config: {}` that summarize took for "speculation off" (issue 21: a
//! killed svc-swap let wait-ready probe the old server and loadgen bench it
//! as `{}`, and summarize made those the baseline). Needs `cargo build
//! --workspace`.

mod sweep_support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use sweep_support::{all_records, dump, sweep_behind, with_config, SpecFile};

const KEY: &str = "speculative-num-steps";

/// A --bin-dir whose svc-swap kills itself (SIGKILL, before any output)
/// the first time it is asked for `KEY=3`; the other tools are the real
/// ones.
fn bin_dir_with_a_dying_swap(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for t in ["wait-ready", "loadgen", "summarize", "sweep-plan"] {
        std::os::unix::fs::symlink(testkit::bin(t), bin.join(t)).unwrap();
    }
    let mark = dir.join("killed-once");
    let wrapper = format!(
        "#!/bin/bash\nfor a in \"$@\"; do\n  if [[ $a == *{KEY}=3 && ! -e '{m}' ]]; then\n    \
         : >'{m}'; kill -9 $$\n  fi\ndone\nexec '{real}' \"$@\"\n",
        m = mark.display(),
        real = testkit::bin("svc-swap").display()
    );
    let path = bin.join("svc-swap");
    std::fs::write(&path, wrapper).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn run(spec: &SpecFile, bin: &Path, port: u16, extra: &[&str]) -> std::process::Output {
    let url = format!("http://127.0.0.1:{port}");
    let results = spec.results();
    let mut args = vec!["--bin-dir", bin.to_str().unwrap(), "--spec", spec.s()];
    args.extend_from_slice(&["--url", &url, "--server", "llm-sim"]);
    args.extend_from_slice(&["--param", KEY, "--values", "1,3,2", "--concurrency", "1,2"]);
    args.extend_from_slice(&["--results", results.to_str().unwrap()]);
    for a in ["-n", "2", "--warmup", "0", "--max-tokens", "8"] {
        args.extend_from_slice(&["--load-arg", a]);
    }
    args.extend_from_slice(extra);
    // sweep_behind adds the workspace's --bin-dir; ours comes later and wins.
    let mut cmd = sweep_behind(&["timeout", "120"], &args);
    cmd.stdin(Stdio::null());
    cmd.output().unwrap()
}

#[test]
fn a_killed_swap_records_its_config_and_never_becomes_the_baseline() {
    let port = testkit::free_port();
    let exec = format!(
        "{} --host 127.0.0.1 --port {port} --load-time 100ms --warmup-time 50ms --seed 1 \
         --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 4",
        testkit::bin("llm-sim").display()
    );
    let spec = SpecFile::new("sweep-killed-swap", &exec, port);
    let original = spec.exec_start();
    let bin = bin_dir_with_a_dying_swap(&spec.dir);

    // No retry: the killed config is a failure of its own, with its config.
    let out = run(&spec, &bin, port, &["--retries", "0"]);
    assert_eq!(out.status.code(), Some(40), "{}", dump(&out));
    let recs = all_records(&spec.results());
    let configless: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] != "origin")
        .filter(|r| r["config"].as_object().is_none_or(|m| m.is_empty()))
        .collect();
    assert!(
        configless.is_empty(),
        "records with no config: {configless:?}\n{}",
        dump(&out)
    );
    let lost = with_config(&recs, "failure", KEY, "3");
    assert_eq!(lost.len(), 1, "{}", dump(&out));
    assert_eq!(lost[0]["kind"], "upstream_missing", "{}", lost[0]);
    assert_eq!(lost[0]["stage"], "swap", "{}", lost[0]);
    assert_eq!(lost[0]["class"], "transport", "{}", lost[0]);
    assert!(
        with_config(&recs, "bench", KEY, "3").is_empty(),
        "nothing measured for 3"
    );
    for v in ["1", "2"] {
        assert_eq!(
            with_config(&recs, "bench", KEY, v).len(),
            2,
            "{v}: {}",
            dump(&out)
        );
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("no record arrived"), "{err}");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(!table.contains("unset"), "{table}");
    assert_eq!(spec.exec_start(), original, "restored");

    // --resume runs the lost config again (the swap lives this time); the
    // table has three configs and the baseline is one of them.
    let out = run(&spec, &bin, port, &["--resume"]);
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = all_records(&spec.results());
    assert_eq!(
        with_config(&recs, "bench", KEY, "3").len(),
        2,
        "{}",
        dump(&out)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(!table.contains("unset"), "{table}");
    assert!(
        table.contains("baseline: speculative-num-steps=1"),
        "{table}"
    );
    assert_eq!(spec.exec_start(), original, "restored");
}
