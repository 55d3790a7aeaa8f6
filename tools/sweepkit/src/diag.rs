//! Diagnostics on stderr in the `tool: error: ...` form: errors, warnings
//! and progress lines, each redacted of secrets and written in ONE write, so
//! the lines of tools sharing a terminal (a pipeline's stages) never mix
//! mid-line. Every line a tool writes to stderr goes through here (or
//! [`write_line`] for a stderr handed in as a writer): `eprintln!` with
//! arguments writes each piece with its own write(2), since stderr is
//! unbuffered, and two tools' pieces interleaved ("svc-swapwait-ready:
//! error: ...", issue 46).

use std::io::{self, Write};

/// Write `line` and its newline to stderr in one write.
fn say_line(line: String) {
    let mut buf = line.into_bytes();
    buf.push(b'\n');
    let _ = io::stderr().lock().write_all(&buf);
}

/// Write `line` and its newline to `w` in one write: the stderr a tool is
/// handed as a writer (summarize's, for tests).
pub fn write_line(w: &mut (impl Write + ?Sized), line: &str) -> io::Result<()> {
    let mut buf = Vec::with_capacity(line.len() + 1);
    buf.extend_from_slice(line.as_bytes());
    buf.push(b'\n');
    w.write_all(&buf)
}

/// Print `line` on stderr as it is (redacted), in one write: a line the
/// tool formats itself (`tool:   | log line`).
pub fn line(line: impl std::fmt::Display) {
    say_line(crate::redact::text(&line.to_string()))
}

/// Print `text` on stderr exactly as given, each of its lines in one
/// write: a simulated server's own log lines (llm-sim imitates them,
/// secrets and all, for the tools that must redact them), a diff.
pub fn verbatim(text: &str) {
    for l in text.lines() {
        say_line(l.to_string());
    }
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
