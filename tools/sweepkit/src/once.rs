//! Lines said once per sweep. `sweep` runs the same tools once per config,
//! so a tool's warning about the server itself (loadgen's "no /metrics",
//! "no GPU") would be said once per config. sweep points `SWEEPKIT_SAID`
//! at a file in its work folder; a line already in that file was said
//! and is not said again. A tool run alone (no `SWEEPKIT_SAID`) says
//! every line.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;

/// The environment variable naming the file of lines said.
pub const ENV: &str = "SWEEPKIT_SAID";

/// Whether `line` is said for the first time in this sweep; records it as
/// said. True when there is no sweep (no `SWEEPKIT_SAID`) or its file
/// cannot be read or written: a line said twice beats a line lost.
pub fn first_time(line: &str) -> bool {
    match std::env::var_os(ENV).filter(|p| !p.is_empty()) {
        Some(path) => first_in(Path::new(&path), line),
        None => true,
    }
}

/// Whether `line` is not yet in the file `path`; adds it.
fn first_in(path: &Path, line: &str) -> bool {
    let key = line.replace('\n', " ");
    if let Ok(said) = std::fs::read_to_string(path) {
        if said.lines().any(|l| l == key) {
            return false;
        }
    }
    let mut buf = key.into_bytes();
    buf.push(b'\n');
    let _ = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(&buf));
    true
}

/// `tool: warning: msg` on stderr, unless this sweep already said it.
pub fn warning(tool: &str, msg: impl std::fmt::Display) {
    let msg = msg.to_string();
    if first_time(&msg) {
        crate::diag::warning(tool, msg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_said_once_per_file() {
        let dir = std::env::temp_dir().join(format!("sweepkit-once-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("said");
        assert!(first_in(&file, "no /metrics"));
        assert!(!first_in(&file, "no /metrics"));
        assert!(first_in(&file, "no GPU"));
        assert!(first_in(&dir.join("other"), "no /metrics"), "another sweep");
        let _ = std::fs::remove_dir_all(dir);
    }
}
