//! The upstream record on stdin: a ready or swap record gives the config
//! (and the server's URL and info); a failure record is passed through and
//! no load is sent, so a benchmark never starts before the server is ready
//! (vLLM PR 32927).

use std::io::BufRead;

use serde_json::Value;
use sweepkit::exit::Exit;
use sweepkit::records::{Config, Record, ServerInfo};
use sweepkit::upstream_input::{self as upstream, Reader};

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

/// Read at most one record with the core reader (its kinds and exit codes:
/// `sweepkit::upstream_input`); empty input means no upstream.
pub fn read(r: impl BufRead) -> Result<Upstream, Exit> {
    let reader = Reader::new("<stdin>", upstream::SERVER).hint("use --no-upstream to ignore stdin");
    let (rec, raw) = match reader.read(r)? {
        upstream::Upstream::None => return Ok(Upstream::default()),
        upstream::Upstream::Failure(raw) => {
            return Ok(Upstream {
                failure: Some(raw),
                ..Upstream::default()
            })
        }
        upstream::Upstream::Record(rec, raw) => (rec, raw),
    };
    let config = rec.config().clone();
    let server = match *rec {
        Record::Ready(r) => r.server,
        Record::Bench(b) => Some(b.server),
        _ => None,
    };
    Ok(Upstream {
        config,
        raw: Some(raw),
        server,
        failure: None,
    })
}
