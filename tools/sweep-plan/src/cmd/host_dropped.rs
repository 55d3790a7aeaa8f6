//! `sweep-plan host-dropped`: the record of a host the fleet stopped
//! using.

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Record;

use crate::origin;
use crate::out::Io;
use crate::read::read_text;

/// The record of a host the fleet dropped for REASON; ORIGIN is that
/// host's origin record (may be missing)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[arg(long, value_name = "REASON")]
    reason: String,
    #[arg(value_name = "ORIGIN")]
    file: Option<String>,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let text = match &a.file {
        Some(f) => read_text(f, true)?,
        None => String::new(),
    };
    let f = origin::host_dropped(&text, &a.reason, io.started).map_err(|e| {
        Exit::new(
            exit::BAD_INPUT,
            anyhow!("{}: {e}", a.file.unwrap_or_default()),
        )
    })?;
    io.out.record(&Record::Failure(f))
}
