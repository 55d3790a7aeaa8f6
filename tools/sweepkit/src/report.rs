//! Error and warning reporting in the `tool: error: ...` form, and the
//! `main` wrapper every tool uses: print the error chain once, map errors
//! to exit codes, and treat a closed stdout (`| head`) as success.

use std::io::{self, Write};
use std::process::ExitCode;

/// An error that knows its exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    pub error: Option<anyhow::Error>,
}

impl Exit {
    /// Fail with `code` and a message.
    pub fn new(code: u8, error: impl Into<anyhow::Error>) -> Self {
        Exit {
            code,
            error: Some(error.into()),
        }
    }

    /// End with `code`, the reason already reported.
    pub fn silent(code: u8) -> Self {
        Exit { code, error: None }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Self {
        let error: anyhow::Error = e.into();
        let code = if is_broken_pipe(&error) {
            crate::exit::OK
        } else {
            crate::exit::FAILURE
        };
        Exit {
            code,
            error: Some(error),
        }
    }
}

/// Extension to attach an exit code to any fallible result.
pub trait WithCode<T> {
    fn code(self, code: u8) -> Result<T, Exit>;
}

impl<T, E: Into<anyhow::Error>> WithCode<T> for Result<T, E> {
    fn code(self, code: u8) -> Result<T, Exit> {
        self.map_err(|e| Exit::new(code, e))
    }
}

/// True when the error (or one it wraps) is a closed pipe.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// Print `tool: error: msg: cause: cause` on stderr, on one line.
pub fn error(tool: &str, e: &anyhow::Error) {
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    let line = chain.join(": ").replace('\n', " ");
    let line = crate::redact::text(&line);
    let _ = writeln!(io::stderr(), "{tool}: error: {line}");
}

/// Print `tool: warning: msg` on stderr.
pub fn warning(tool: &str, msg: impl std::fmt::Display) {
    let msg = crate::redact::text(&msg.to_string());
    let _ = writeln!(io::stderr(), "{tool}: warning: {msg}");
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
    let _ = writeln!(io::stderr(), "{tool}: {msg}");
}

/// Turn a tool's result into its exit code, printing the error chain once.
pub fn finish(tool: &str, result: Result<(), Exit>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Exit { code, error: err }) => {
            if let Some(e) = err {
                if is_broken_pipe(&e) {
                    return ExitCode::SUCCESS;
                }
                error(tool, &e);
            }
            ExitCode::from(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_pipe_maps_to_success() {
        let e = io::Error::new(io::ErrorKind::BrokenPipe, "closed");
        let exit: Exit = anyhow::Error::new(e).context("writing stdout").into();
        assert_eq!(exit.code, crate::exit::OK);
    }

    #[test]
    fn with_code_attaches_code() {
        let r: Result<(), io::Error> = Err(io::Error::other("x"));
        assert_eq!(r.code(7).unwrap_err().code, 7);
    }
}
