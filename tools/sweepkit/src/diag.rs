//! Diagnostics on stderr in the `tool: error: ...` form: errors, warnings
//! and progress lines, each redacted of secrets and written in ONE write, so
//! the lines of tools sharing a terminal (a pipeline's stages) never mix
//! mid-line.

use std::io::{self, Write};

/// Write `line` and its newline to stderr in one write.
fn say_line(line: String) {
    let mut buf = line.into_bytes();
    buf.push(b'\n');
    let _ = io::stderr().lock().write_all(&buf);
}

/// Print `tool: error: msg: cause: cause` on stderr, on one line.
pub fn error(tool: &str, e: &anyhow::Error) {
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    let line = chain.join(": ").replace('\n', " ");
    let line = crate::redact::text(&line);
    say_line(format!("{tool}: error: {line}"));
}

/// Print `tool: warning: msg` on stderr.
pub fn warning(tool: &str, msg: impl std::fmt::Display) {
    let msg = crate::redact::text(&msg.to_string());
    say_line(format!("{tool}: warning: {msg}"));
}

/// The running tool's name, for messages printed by shared code (the SSH
/// transport) that no tool passes its name to: the file name of `argv[0]`,
/// as coreutils name themselves; `sweepkit` if there is none.
pub fn tool_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(|| {
        std::env::args_os()
            .next()
            .as_deref()
            .map(std::path::Path::new)
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "sweepkit".into())
    })
}

/// Print `tool: warning: msg` on stderr under the running tool's name.
pub fn warn(msg: impl std::fmt::Display) {
    warning(tool_name(), msg)
}

/// Print `tool: msg` on stderr (human progress).
pub fn info(tool: &str, msg: impl std::fmt::Display) {
    let msg = crate::redact::text(&msg.to_string());
    say_line(format!("{tool}: {msg}"));
}
