//! How a tool ends: an error that knows its exit code ([`Exit`]), and the
//! `main` wrapper every tool uses ([`finish`]): print the error chain once,
//! map errors to exit codes, and treat a closed stdout (`| head`) as
//! success. The codes themselves are the constants of [`crate::exit`].

use std::io;
use std::process::ExitCode;

use crate::diag::error;

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
            super::OK
        } else {
            super::FAILURE
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
