//! The files sweep-plan is handed (results, summaries, tally and origin
//! files), read whole as text, with the exit code a bad one gets.

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};

/// Read FILE as text; `missing_ok`: a file not there reads as empty.
pub(crate) fn read_text(path: &str, missing_ok: bool) -> Result<String, Exit> {
    match std::fs::read(path) {
        Ok(b) => String::from_utf8(b)
            .map_err(|_| anyhow!("{path}: not UTF-8 text"))
            .code(exit::BAD_INPUT),
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Exit::new(exit::BAD_INPUT, anyhow!("{path}: {e}"))),
    }
}
