//! A relative `--spec` against a real llm-sim on 127.0.0.1. Regression: run
//! from the spec's directory (`cd d && svc-swap --spec s.spec`), the job
//! staged the new file with `mkdir -p "${staged%/*}"`, which for a name
//! without a slash made a directory named after the staged file: every
//! swap failed and left `s.spec.sweepkit-new.ID/` behind. Now the path is
//! made absolute, and no swap, failed or not, leaves temp files.

use std::path::{Path, PathBuf};
use std::process::Command;

use sweepkit::exit as exit_code;
use testkit::Run;

mod support;

struct Dir {
    dir: PathBuf,
    port: u16,
}

impl Dir {
    fn new(tag: &str) -> Dir {
        let dir = testkit::temp_dir(tag);
        let port = testkit::free_port();
        std::fs::write(
            dir.join("s.spec"),
            format!(
                "ExecStart={} --host 127.0.0.1 --port {port} --load-time 10ms \
                 --warmup-time 10ms\nTimeoutStopSec=10\nPort={port}\n",
                testkit::bin("llm-sim").display()
            ),
        )
        .unwrap();
        Dir { dir, port }
    }

    /// svc-swap run in the spec's directory.
    fn swap(&self, args: &[&str]) -> Run {
        let mut c = support::command();
        c.current_dir(&self.dir).args(args);
        testkit::run(c, "")
    }

    fn model(&self) -> String {
        let v = testkit::server_info(self.port);
        v["served_model_name"].as_str().unwrap_or_default().into()
    }

    /// Every name in the directory that is neither the spec, its log, its
    /// pid file nor a kept backup: temp files and state left behind.
    fn leftovers(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| {
                !["s.spec", "s.spec.log", "s.spec.pid"].contains(&n.as_str())
                    && !n.starts_with("s.spec.sweepkit-bak.")
            })
            .collect();
        v.sort();
        v
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("s.spec.pid")) {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", pid.trim())])
                .stderr(std::process::Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn relative_spec_swaps_and_records_the_absolute_path() {
    let d = Dir::new("relspec");
    let abs = d.dir.join("s.spec");
    for name in ["a", "b"] {
        let r = d.swap(&["--spec", "s.spec", "--set", &format!("model-name={name}")]);
        let rec = r.expect_one(0);
        assert_eq!(rec["target"]["unit"], abs.to_str().unwrap(), "{rec}");
        assert_eq!(d.model(), name);
        assert_eq!(d.leftovers(), Vec::<String>::new(), "left behind");
    }
    // What the record names works from anywhere: a restore from elsewhere.
    let mut c = Command::new(env!("CARGO_BIN_EXE_svc-swap"));
    c.current_dir("/")
        .args(["--spec", abs.to_str().unwrap(), "--restore"]);
    testkit::run(c, "").expect_code(0);
    assert_eq!(d.model(), "a");
    assert_eq!(d.leftovers(), Vec::<String>::new(), "left behind");
}

#[test]
fn failed_swap_of_a_relative_spec_leaves_no_temp_files() {
    let d = Dir::new("relspec-fail");
    d.swap(&testkit::words("--spec s.spec --set model-name=a"))
        .expect_code(0);
    let before = std::fs::read_to_string(d.dir.join("s.spec")).unwrap();
    // llm-sim rejects an unknown flag at once: the start fails, the old
    // config is put back.
    let r = d.swap(&testkit::words("--spec s.spec --set no-such-flag=1"));
    r.expect_code(exit_code::ROLLED_BACK as i32);
    assert_eq!(r.one()["running"], "old");
    assert_eq!(
        std::fs::read_to_string(d.dir.join("s.spec")).unwrap(),
        before
    );
    assert_eq!(d.model(), "a");
    assert_eq!(d.leftovers(), Vec::<String>::new(), "left behind");
}

#[test]
fn relative_spec_on_a_far_side_is_refused_untouched() {
    let d = Dir::new("relspec-far");
    let r = d.swap(&testkit::words(
        "--spec s.spec --exec-prefix env --set model-name=a",
    ));
    r.expect_code(2);
    let err = r.stderr();
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("svc-swap: error: --spec s.spec: give an absolute path"),
        "{err}"
    );
    assert!(r.stdout().is_empty(), "{}", r.stdout());
    assert_eq!(d.leftovers(), Vec::<String>::new());
    assert!(
        !Path::new(&d.dir.join("s.spec.pid")).exists(),
        "nothing started"
    );
}
