//! The upstream record on stdin: a ready or swap record gives the config
//! (and the server's URL and info); a failure record is passed through and
//! no load is sent, so a benchmark never starts before the server is ready
//! (vLLM PR 32927).

use std::io::BufRead;

use serde_json::Value;
use sweepkit::exit;
use sweepkit::io::{InputError, RecordReader};
use sweepkit::records::{Config, Record, ServerInfo};
use sweepkit::report::Exit;

#[derive(Debug, Default)]
pub struct Upstream {
    pub config: Config,
    /// The whole upstream record, kept in our records' `upstream`.
    pub raw: Option<Value>,
    /// The server as upstream described it.
    pub server: Option<ServerInfo>,
    /// A failure record to pass through.
    pub failure: Option<Value>,
}

/// Read at most one record; empty input means no upstream.
pub fn read(r: impl BufRead) -> Result<Upstream, Exit> {
    let mut reader = RecordReader::new(r, "<stdin>");
    let (rec, raw) = match reader.next_record() {
        None => return Ok(Upstream::default()),
        Some(Ok(x)) => x,
        Some(Err(e @ InputError::Io { .. })) => return Err(Exit::new(exit::FAILURE, e)),
        Some(Err(e)) => return Err(Exit::new(exit::BAD_INPUT, e)),
    };
    let mut up = Upstream {
        config: rec.config().clone(),
        ..Upstream::default()
    };
    match rec {
        Record::Failure(_) => up.failure = Some(raw.clone()),
        Record::Ready(r) => up.server = r.server.clone(),
        Record::Bench(b) => up.server = Some(b.server.clone()),
        Record::Swap(_) => {}
        Record::Summary(_) | Record::Origin(_) | Record::Skipped(_) => {
            return Err(Exit::new(
                exit::BAD_INPUT,
                anyhow::anyhow!(
                    "<stdin>: line {}: a {} record is not an upstream for loadgen \
                     (expected ready, swap or failure)",
                    reader.line(),
                    rec.kind()
                ),
            ))
        }
    }
    up.raw = Some(raw);
    Ok(up)
}
