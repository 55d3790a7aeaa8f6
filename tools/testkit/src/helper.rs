//! Running the helper programs a test needs (podman, docker, ssh-keygen,
//! ssh-add): checked, with the program's stderr in the panic, or quietly,
//! for clean-ups whose outcome does not matter.

use std::process::{Command, Output, Stdio};

/// Run `cmd` with no stdin; panics, naming `what` and showing its stderr,
/// when it cannot start or exits non-zero. Its output.
#[track_caller]
pub fn checked(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Run `cmd` with its output dropped and its exit status ignored (a
/// clean-up that may find nothing to do).
pub fn quietly(cmd: &mut Command) {
    let _ = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status();
}
