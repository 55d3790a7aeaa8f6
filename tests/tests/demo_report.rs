//! `make demo` (scripts/demo.sh) on a small grid (its DEMO_* knobs) with
//! the workspace's debug binaries: the whole loop against llm-sim ends
//! with the HTML report written, its path printed on stdout (the last
//! line, for `xdg-open "$(make demo | tail -1)"`) and named on stderr, and
//! the page says the server was simulated and holds the table, the
//! frontier and the provenance. The server the demo started is stopped.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn demo_writes_the_report_and_prints_its_path() {
    let bin = testkit::bin("summarize").parent().unwrap().to_path_buf();
    let tmp = testkit::temp_dir("demo-report");
    let out = Command::new("bash")
        .arg(testkit::repo_root().join("scripts/demo.sh"))
        .env("SWEEPKIT_BIN", &bin)
        .env("TMPDIR", &tmp)
        .env("DEMO_VALUES", "1,4")
        .env("DEMO_CONCURRENCY", "1,4")
        .env("DEMO_MAX_TOKENS", "16")
        .output()
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    let dump = format!("stdout:\n{so}\nstderr:\n{se}");
    assert_eq!(out.status.code(), Some(0), "{dump}");
    let path = so.lines().last().unwrap_or_default();
    assert!(
        path.starts_with(tmp.to_str().unwrap()) && path.ends_with("/report.html"),
        "the last line is the report's path: {dump}"
    );
    assert!(se.contains(&format!("demo: report {path}")), "{dump}");
    let html = std::fs::read_to_string(path).unwrap();
    for want in [
        "SIMULATED",
        "id=\"verdict\"",
        "<table id=\"results\"",
        "id=\"frontier-list\"",
        "id=\"provenance\"",
        "speculative-num-steps=4",
    ] {
        assert!(html.contains(want), "the report lacks {want:?}");
    }
    // The demo's EXIT trap stopped the server it started.
    let spec = std::path::Path::new(path).with_file_name("llm-sim.spec");
    let pid: i32 = std::fs::read_to_string(format!("{}.pid", spec.display()))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let t0 = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.rsplit(") ").next().is_some_and(|s| s.starts_with('Z')) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(15),
            "the demo left llm-sim (pid {pid}) running"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::fs::remove_dir_all(&tmp).ok();
}
