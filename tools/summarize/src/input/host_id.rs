//! The host a record ran on, read from `server.host` / `host` anywhere in
//! its upstream chain (wait-ready writes it, loadgen keeps it): its label
//! and the key that must be equal for results to be comparable.

use serde_json::Value;

use crate::input::record_view::{Head, HostHead, ServerHead};

/// The host a record names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HostId {
    /// `name`, plus ` via 'PREFIX'` when reached through an exec prefix:
    /// two containers of one machine are two hosts.
    pub label: String,
    /// What must be equal for results to be comparable: the hardware
    /// fingerprint, plus the server's kind and version when known.
    pub key: String,
}

/// The host of a record, if it (or any record it carries upstream) says.
pub fn of_record(rec: &Value) -> Option<HostId> {
    let head = Head::of(rec);
    // The first server description up the chain, down to the host's record.
    let mut server: Option<&ServerHead> = None;
    for h in head.chain() {
        server = server.or(h.server_info());
        if let Some(host) = h.host() {
            return Some(id(host, server));
        }
    }
    None
}

fn id(h: &HostHead, server: Option<&ServerHead>) -> HostId {
    let mut label = h.name.0.clone().unwrap_or_else(|| "unknown".into());
    if let Some(p) = &h.exec_prefix.0 {
        label = format!("{label} via '{p}'");
    }
    let mut key = (h.fingerprint.0.clone()).unwrap_or_else(|| "unknown hardware".into());
    let kind = server.and_then(|v| v.kind.0.clone());
    let version = server.and_then(|v| v.version.0.clone());
    if kind.is_some() || version.is_some() {
        let sv = [kind, version].into_iter().flatten().collect::<Vec<_>>();
        key = format!("{key}; {}", sv.join(" "));
    }
    HostId { label, key }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_is_found_in_the_server_or_upstream_chain() {
        let bench = json!({"type": "bench",
            "server": {"kind": "sglang", "version": "0.5.23",
                "host": {"name": "root@gpu1", "fingerprint": "8x H200; 192x EPYC"}}});
        let h = of_record(&bench).unwrap();
        assert_eq!(h.label, "root@gpu1");
        assert_eq!(h.key, "8x H200; 192x EPYC; sglang 0.5.23");
        // A loadgen failure carries the ready record upstream.
        let fail = json!({"type": "failure", "upstream": {"type": "ready",
            "server": {"host": {"name": "localhost", "exec_prefix": "pct exec 1 --",
                "fingerprint": "no GPU; 2x X"}}}});
        let h = of_record(&fail).unwrap();
        assert_eq!(h.label, "localhost via 'pct exec 1 --'");
        assert_eq!(h.key, "no GPU; 2x X");
        // wait-ready's own failure record.
        let f = json!({"type": "failure", "host": {"name": "h", "fingerprint": "f"}});
        assert_eq!(of_record(&f).unwrap().key, "f");
        assert_eq!(of_record(&json!({"type": "bench"})), None);
    }
}
