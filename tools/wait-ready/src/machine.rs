//! Where the server runs and on what hardware: read once per run through
//! the same transport as the watchers (local, exec prefix, SSH) and put
//! into the record (`server.host` when ready, `host` on a failure), so
//! loadgen's bench records carry it and summarize can tell hosts apart.

use std::sync::Arc;

use sweepkit::records::{HostInfo, Record};
use sweepkit::transport::{shell_join, Local, Transport};

use crate::cli::Args;
use crate::upstream_record::Upstream;

/// The host's name (the SSH destination, else `localhost`) and exec
/// prefix, from the flags filled from the swap record's target as
/// `open_transport` fills them.
pub fn identity(args: &Args, up: &Upstream) -> (String, Option<String>) {
    let mut ta = args.transport.clone();
    // open_transport already refused a target that does not fill, so an
    // error here cannot happen; if it did, the flags alone name the host.
    if let Err(e) = ta.fill_from(up.target.as_ref()) {
        sweepkit::diag::line(format!(
            "wait-ready: warning: host identity from the flags only: {e}"
        ));
        ta = args.transport.clone();
    }
    let name = ta
        .ssh
        .as_ref()
        .map_or_else(|| "localhost".to_string(), |d| d.to_string());
    let prefix = ta.prefix();
    (name, (!prefix.is_empty()).then(|| shell_join(&prefix)))
}

/// Read the far side's hardware; a failure is a warning, not fatal: the
/// record just does not name the hardware.
pub fn read(
    transport: Option<&Arc<dyn Transport>>,
    (name, prefix): (String, Option<String>),
) -> Option<HostInfo> {
    let local: Arc<dyn Transport> = Arc::new(Local::new());
    let t = transport.unwrap_or(&local);
    match sweepkit::hardware::read(t.as_ref(), &name, prefix) {
        Ok(h) => Some(h),
        Err(e) => {
            sweepkit::diag::warning(
                crate::output::TOOL,
                format!("hardware of {name} not read ({e}); the record will not name it"),
            );
            None
        }
    }
}

/// Put `host` into the record: the ready record's `server`, or the
/// failure record's own `host`.
pub fn attach(rec: &mut Record, host: Option<HostInfo>) {
    let Some(h) = host else { return };
    match rec {
        Record::Ready(r) => r.server.get_or_insert_with(Default::default).host = Some(h),
        Record::Failure(f) => f.host = Some(h),
        _ => {}
    }
}
