//! Secrets on the command line (`--api-key`) and in the changes never
//! reach the swap record or stderr (the shared `sweepkit::redact`), while
//! the spec itself keeps the real key.

use std::process::Command;

use support::swap;

mod support;

#[test]
fn api_key_in_exec_start_and_changes_is_redacted() {
    let (old, new) = ("sk-spec-secret-1", "sk-new-secret-2");
    let dir = testkit::temp_dir("swap-secret");
    let port = testkit::free_port();
    let spec = dir.join("sim.spec");
    std::fs::write(
        &spec,
        format!(
            "[Service]\nExecStart={} --host 127.0.0.1 --port {port} --load-time 10ms \
             --warmup-time 10ms --api-key {old}\nTimeoutStopSec=5\nPort={port}\n",
            testkit::bin("llm-sim").display()
        ),
    )
    .unwrap();
    let spec_s = spec.display().to_string();
    let set_key = format!("api-key={new}");
    for extra in [&["--dry-run"][..], &[][..]] {
        let mut args = vec!["--spec", &spec_s, "--set", &set_key];
        args.extend_from_slice(extra);
        let r = swap(&args);
        r.expect_code(0);
        let rec = r.json_lines().remove(0);
        let exec = testkit::output::strs(&rec["exec_start"]);
        let i = exec.iter().position(|w| *w == "--api-key").unwrap();
        assert_eq!(exec[i + 1], "<redacted>", "{rec}");
        assert_eq!(rec["changes"][0]["new"], "<redacted>", "{rec}");
        let all = format!("{}{}", r.stdout(), r.stderr());
        assert!(!all.contains(old) && !all.contains(new), "{all}");
    }
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(text.contains(new), "{text}");
    // Stop what the real swap started (its process group, by the pid file).
    if let Ok(pid) = std::fs::read_to_string(format!("{spec_s}.pid")) {
        let pid = pid.trim();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .status();
        let _ = Command::new("kill").args(["-KILL", pid]).status();
    }
    let _ = std::fs::remove_dir_all(dir);
}
