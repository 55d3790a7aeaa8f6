//! Prerequisite gates: a test that needs sshd, systemd-nspawn, a network
//! namespace, llama-server, the real-peer cache or shellcheck says whether
//! it got it, so `make test` can report how many such tests ran for real
//! instead of letting a skipped one pass as green.
//!
//! Each gate appends one line, `ran|skipped <TAB> test <TAB> prerequisite`,
//! to `$SWEEPKIT_TEST_LOG` (default `target/<profile>/gated-tests.log`
//! beside the test binaries); `scripts/gated-summary.sh` counts the tests.

use std::io::Write;
use std::path::{Path, PathBuf};

/// A test cannot run for want of `what` (sshd, nspawn, llama-server, ...).
/// Where every prerequisite is installed on purpose (CI sets `CI`; `make
/// test` sets `SWEEPKIT_REQUIRE_ALL=1`), that is a failure, never a silent
/// pass: panic. Elsewhere (a developer's `cargo test`) print one `SKIPPED:`
/// line on stderr, and the caller returns early. Either way the log says so.
pub fn skip(what: &str) {
    record("skipped", what);
    if require_all() {
        panic!(
            "missing prerequisite: {what} (CI/SWEEPKIT_REQUIRE_ALL=1 require every test to run)"
        );
    }
    eprintln!("SKIPPED: {what}");
}

/// The calling test has its prerequisite `what` and goes on to run for real.
pub fn ran(what: &str) {
    record("ran", what);
}

/// Whether a missing prerequisite must fail the test (see [`skip`]).
pub fn require_all() -> bool {
    let set = |k: &str| std::env::var(k).map(|v| !v.is_empty() && v != "0" && v != "false");
    set("SWEEPKIT_REQUIRE_ALL").unwrap_or(false) || set("CI").unwrap_or(false)
}

/// The log the gates append to.
pub fn log_path() -> PathBuf {
    if let Some(p) = std::env::var_os("SWEEPKIT_TEST_LOG").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("exe dir").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("gated-tests.log")
}

/// `binary::test`: libtest runs each test on a thread named after it; the
/// binary's name (less cargo's `-HASH`) tells tests of the same name apart.
fn test_id() -> String {
    let exe = std::env::current_exe().ok();
    let stem = exe
        .as_deref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let bin = match stem.rsplit_once('-') {
        Some((b, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => b.to_string(),
        _ => stem,
    };
    let thread = std::thread::current();
    format!("{bin}::{}", thread.name().unwrap_or("unnamed"))
}

/// Append one line; a single `write` on an `O_APPEND` file, so lines from
/// tests running in parallel (threads and binaries) do not interleave.
fn record(kind: &str, what: &str) {
    append(&log_path(), kind, what);
}

fn append(path: &Path, kind: &str, what: &str) {
    let what = what.replace(['\t', '\n'], " ");
    let line = format!("{kind}\t{}\t{what}\n", test_id());
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let res = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = res {
        panic!("{}: cannot record the gate: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_line_names_binary_test_and_prerequisite() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log");
        append(&log, "ran", "sshd\tx");
        let text = std::fs::read_to_string(&log).unwrap();
        let f: Vec<&str> = text.trim_end().split('\t').collect();
        assert_eq!(f[0], "ran");
        assert!(
            f[1].starts_with("testkit::")
                && f[1].ends_with("a_gate_line_names_binary_test_and_prerequisite"),
            "{text}"
        );
        assert_eq!(f[2], "sshd x");
    }
}
