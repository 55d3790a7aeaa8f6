//! The host a record ran on, read from `server.host` / `host` anywhere in
//! its upstream chain (wait-ready writes it, loadgen keeps it): its label
//! and the key that must be equal for results to be comparable. A GPU
//! slot's record (`slot`, sweep with slots) names its slot too, and its
//! key counts the slot's GPUs: slots of one machine pool only when they
//! are the same hardware.

use serde::Deserialize;
use serde_json::Value;
use sweepkit::records::SlotUse;

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
            let mut id = id(host, server);
            if let Some(s) = rec.get("slot").and_then(|s| SlotUse::deserialize(s).ok()) {
                in_slot(&mut id, &s);
            }
            return Some(id);
        }
    }
    None
}

/// A slot of the machine: its number in the label, its GPU count in the
/// key (the machine's fingerprint lists all of them).
fn in_slot(id: &mut HostId, s: &SlotUse) {
    id.label = format!("{} slot {}", id.label, s.slot);
    let n = s.gpus.as_deref().map_or(0, |g| g.split(',').count());
    id.key = format!("{}; a slot of {n} GPU(s)", id.key);
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
        // A slot: its number, and its GPU count in the key.
        let mut slot = bench.clone();
        slot["slot"] = json!({"machine": "root@gpu1", "slot": "1", "gpus": "2,3"});
        let h = of_record(&slot).unwrap();
        assert_eq!(h.label, "root@gpu1 slot 1");
        assert_eq!(
            h.key,
            "8x H200; 192x EPYC; sglang 0.5.23; a slot of 2 GPU(s)"
        );
    }
}
