//! The slots of a pool: `--gpus LIST --gpus-per-config N` splits each
//! machine into slots of N GPUs (slot 0, 1, ...), lines naming `gpus=`
//! without `slot=` are numbered on their machine, and a layout is refused
//! before anything runs when two slots of one machine name the same GPU,
//! port, target or number, when some name GPUs and others none, or when
//! the list gives too few GPUs for a slot. A port read from the targets
//! (the origins' dry runs) is checked alike, once read.

use std::collections::BTreeMap;

use crate::host::{Host, Line};

/// `--gpus LIST --gpus-per-config N`: each machine's GPUs, N to a slot.
#[derive(Debug, Clone, Copy)]
pub struct Split<'a> {
    pub gpus: &'a str,
    pub per: usize,
}

/// Why a slot layout is refused (a usage error, one line).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum SlotError {
    #[error("--gpus {gpus}: {n} GPU(s), fewer than one slot's --gpus-per-config {per}: give more GPUs or fewer per config")]
    TooFew { gpus: String, n: usize, per: usize },
    #[error("--gpus {gpus}: {n} GPUs do not split into slots of {per} (--gpus-per-config): list the GPUs to use")]
    Uneven { gpus: String, n: usize, per: usize },
    #[error("--gpus {gpus}: GPU '{gpu}' is listed twice (or is empty)")]
    Listed { gpus: String, gpu: String },
    #[error("{at}: --gpus splits each host into slots, and this line is a slot already (slot= or gpus=): drop one of them")]
    AlreadySlot { at: String },
    #[error("GPU {gpu} is in {a} and in {b}: each GPU serves one slot")]
    GpuTwice { gpu: String, a: String, b: String },
    #[error("{a} and {b} both use port {port}: give each slot its own port")]
    PortTwice { a: String, b: String, port: u16 },
    #[error("{a} and {b} both swap {target}: give each slot its own target (put {{slot}} in the --unit, --spec or --container name)")]
    TargetTwice {
        a: String,
        b: String,
        target: String,
    },
    #[error("{a} and {b}: the same slot twice on one machine")]
    SlotTwice { a: String, b: String },
    #[error("{slot} names no GPUs, beside slots of {machine} that do: give every slot gpus=LIST")]
    NoGpus { slot: String, machine: String },
    #[error("{slot}: --url has {{port}}, and its target's port is unknown (the dry run named none): give port=N on its line")]
    NoPort { slot: String },
}

/// Each line of `lines` split into the slots of `sp` (`slot=K gpus=...`).
pub(crate) fn split(lines: Vec<Line>, sp: &Split<'_>) -> Result<Vec<Line>, SlotError> {
    let gpus: Vec<&str> = sp.gpus.split(',').map(str::trim).collect();
    for (i, g) in gpus.iter().enumerate() {
        if g.is_empty() || gpus[..i].contains(g) {
            return Err(SlotError::Listed {
                gpus: sp.gpus.into(),
                gpu: (*g).into(),
            });
        }
    }
    let (n, per) = (gpus.len(), sp.per.max(1));
    if n < per {
        return Err(SlotError::TooFew {
            gpus: sp.gpus.into(),
            n,
            per,
        });
    }
    if n % per != 0 {
        return Err(SlotError::Uneven {
            gpus: sp.gpus.into(),
            n,
            per,
        });
    }
    let mut out = Vec::new();
    for l in lines {
        if l.is_slot() {
            return Err(SlotError::AlreadySlot { at: l.at });
        }
        for (k, chunk) in gpus.chunks(per).enumerate() {
            let mut s = l.clone();
            s.vars.insert("slot".into(), k.to_string());
            s.vars.insert("gpus".into(), chunk.join(","));
            out.push(s);
        }
    }
    Ok(out)
}

/// Slot lines without `slot=` numbered on their machine (from 0, in
/// order).
pub(crate) fn number(mut lines: Vec<Line>) -> Vec<Line> {
    let mut next: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines.iter_mut().filter(|l| l.is_slot()) {
        let k = next.entry(l.dest.clone()).or_default();
        l.vars.entry("slot".into()).or_insert_with(|| k.to_string());
        *k += 1;
    }
    lines
}

/// Two slots with one id: one target for both.
pub(crate) fn same_target(a: &Host, b: &Host) -> SlotError {
    SlotError::TargetTwice {
        a: a.name.clone(),
        b: b.name.clone(),
        target: b.target.clone().unwrap_or_else(|| "one target".into()),
    }
}

/// The slots of `hosts`, by machine, in pool order.
fn by_machine(hosts: &[Host]) -> BTreeMap<&str, Vec<&Host>> {
    let mut m: BTreeMap<&str, Vec<&Host>> = BTreeMap::new();
    for h in hosts.iter().filter(|h| h.slot.is_some()) {
        m.entry(h.machine()).or_default().push(h);
    }
    m
}

/// Refuse a layout whose slots share a GPU, a port or a number on one
/// machine, or name GPUs on some slots of a machine only.
pub(crate) fn check(hosts: &[Host]) -> Result<(), SlotError> {
    for (machine, slots) in by_machine(hosts) {
        for (i, b) in slots.iter().enumerate() {
            for a in &slots[..i] {
                if a.slot == b.slot {
                    return Err(SlotError::SlotTwice {
                        a: a.name.clone(),
                        b: b.name.clone(),
                    });
                }
                let (ga, gb) = (gpu_list(a), gpu_list(b));
                if let Some(g) = gb.iter().find(|g| ga.contains(g)) {
                    return Err(SlotError::GpuTwice {
                        gpu: (*g).into(),
                        a: a.name.clone(),
                        b: b.name.clone(),
                    });
                }
            }
            if b.gpus.is_none() && slots.iter().any(|o| o.gpus.is_some()) {
                return Err(SlotError::NoGpus {
                    slot: b.name.clone(),
                    machine: machine.into(),
                });
            }
        }
        let ports: Vec<(&Host, Option<u16>)> = slots.iter().map(|h| (*h, h.port)).collect();
        ports_apart(&ports)?;
    }
    Ok(())
}

fn gpu_list(h: &Host) -> Vec<&str> {
    h.gpus
        .as_deref()
        .map(|g| g.split(',').map(str::trim).collect())
        .unwrap_or_default()
}

/// Refuse two slots of one machine (`slots`, with their ports) on one port.
pub(crate) fn ports_apart(slots: &[(&Host, Option<u16>)]) -> Result<(), SlotError> {
    for (i, (b, pb)) in slots.iter().enumerate() {
        for (a, pa) in &slots[..i] {
            if let (Some(p), true) = (pb, pa == pb && a.machine() == b.machine()) {
                return Err(SlotError::PortTwice {
                    a: a.name.clone(),
                    b: b.name.clone(),
                    port: *p,
                });
            }
        }
    }
    Ok(())
}

/// The slots' ports where their URL waits for one read from the target
/// (`port(host)`: the origin's, once read; `None`: not read yet), checked
/// apart with the ports the lines give. A slot whose target named no port
/// is refused.
pub(crate) fn read_ports(
    hosts: &[Host],
    port: impl Fn(&Host) -> Option<Option<u16>>,
) -> Result<(), SlotError> {
    let mut all: Vec<(&Host, Option<u16>)> = Vec::new();
    for h in hosts.iter().filter(|h| h.slot.is_some()) {
        let p = match (h.port, h.url.contains("{port}")) {
            (Some(p), _) => Some(p),
            (None, false) => None,
            (None, true) => match port(h) {
                None => None,
                Some(None) => {
                    return Err(SlotError::NoPort {
                        slot: h.name.clone(),
                    })
                }
                Some(p) => p,
            },
        };
        all.push((h, p));
    }
    ports_apart(&all)
}
