//! Results from several hosts: which host (and hardware) each record ran
//! on (input/host_id.rs), and whether they may be
//! ranked together: identical hardware pools (repeats on different hosts
//! are repeats), different hardware is one table per host, or refused for
//! a single pick unless `--pool-hosts`.

use std::collections::BTreeMap;

use crate::error::HostsError;
use crate::input::host_id::HostId;
use crate::input::Obs;

/// Observations summarized together, and the host they are for (`None`:
/// every host's, ranked together).
pub type Group = (Option<HostId>, Vec<Obs>);

/// Decide, from the flags and the hosts in `obs`, which groups are
/// summarized. `machine` is true for the formats a script acts on (one
/// pick): those refuse mixed hardware with `Err` (exit 55) where a
/// person's table splits per host. Notes for stderr go to `notes`.
pub fn plan(
    obs: Vec<Obs>,
    pool: bool,
    per_host: bool,
    machine: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Group>, HostsError> {
    let hosts = hardware_by_host(&obs);
    if per_host {
        return Ok(split(obs));
    }
    if hosts.len() < 2 {
        return Ok(vec![(None, obs)]);
    }
    let mut keys: Vec<&String> = hosts.values().collect();
    keys.sort();
    keys.dedup();
    let list = describe(&hosts);
    if keys.len() == 1 {
        notes.push(format!(
            "{} hosts with identical hardware ({}): pooled, repeats on \
             different hosts count as repeats (--per-host: one table each)",
            hosts.len(),
            keys[0]
        ));
        return Ok(vec![(None, obs)]);
    }
    if pool {
        notes.push(format!(
            "ranking hosts of different hardware together, as --pool-hosts \
             asks: {list}"
        ));
        return Ok(vec![(None, obs)]);
    }
    if machine {
        return Err(HostsError::MixedHardware { list });
    }
    notes.push(format!(
        "hosts differ in hardware or server version ({list}): one table per host \
         (--pool-hosts ranks them together)"
    ));
    Ok(split(obs))
}

/// Each host's comparable key, from the measured (bench) records; records
/// that name no host are not a host of their own.
fn hardware_by_host(obs: &[Obs]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for o in obs {
        if let (Some(h), crate::input::Body::Bench(_)) = (&o.host, &o.body) {
            out.entry(h.label.clone()).or_insert_with(|| h.key.clone());
        }
    }
    out
}

fn describe(hosts: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = hosts.iter().map(|(h, k)| format!("{h}: {k}")).collect();
    parts.join("; ")
}

/// Group by host label in first-seen order. Records without a host form
/// a group of their own (`unknown host`) when one of them is a
/// measurement; failures alone that name no host (older tools) cannot be
/// placed, and a config that failed somewhere stays failed in every
/// host's table rather than look unmeasured.
fn split(obs: Vec<Obs>) -> Vec<Group> {
    let unknown = HostId {
        label: "unknown host".into(),
        key: "records name no host".into(),
    };
    let (known, orphans): (Vec<Obs>, Vec<Obs>) = obs.into_iter().partition(|o| o.host.is_some());
    let orphans_measured = orphans
        .iter()
        .any(|o| matches!(o.body, crate::input::Body::Bench(_)));
    let mut groups: Vec<(HostId, Vec<Obs>)> = Vec::new();
    for o in known {
        let id = o.host.clone().expect("partitioned");
        match groups.iter_mut().find(|(g, _)| g.label == id.label) {
            Some((_, v)) => v.push(o),
            None => groups.push((id, vec![o])),
        }
    }
    if orphans_measured || groups.is_empty() {
        groups.push((unknown, orphans));
    } else {
        for (_, v) in &mut groups {
            v.extend(orphans.iter().cloned());
        }
    }
    groups.into_iter().map(|(h, o)| (Some(h), o)).collect()
}
