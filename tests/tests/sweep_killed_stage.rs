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
use sweep_support::fleet::QUICK;
use sweep_support::{all_records, dump, stderr, stdout, with_config, SimExec, SpecFile, SweepArgs};

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
    // sweep_behind adds the workspace's --bin-dir; ours comes later and wins.
    let mut cmd = SweepArgs::new()
        .args(&["--bin-dir", bin.to_str().unwrap(), "--spec", spec.s()])
        .args(&["--url", &url, "--server", "llm-sim"])
        .param(KEY, "1,3,2")
        .levels("1,2")
        .results(&spec.results())
        .load(&QUICK)
        .args(extra)
        .behind(&["timeout", "120"]);
    cmd.stdin(Stdio::null());
    cmd.output().unwrap()
}

#[test]
fn a_killed_swap_records_its_config_and_never_becomes_the_baseline() {
    let sim = SimExec::free().load("100ms").warmup("50ms").eagle(4);
    let port = sim.port;
    let (spec, _) = sim.spec("sweep-killed-swap");
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
    let err = stderr(&out);
    assert!(!err.contains("no record arrived"), "{err}");
    let table = stdout(&out);
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
    let table = stdout(&out);
    assert!(!table.contains("unset"), "{table}");
    assert!(
        table.contains("baseline: speculative-num-steps=1"),
        "{table}"
    );
    assert_eq!(spec.exec_start(), original, "restored");
}
