//! One host of a `sweep --hosts` pool (or one GPU slot), one line of a
//! pool file as read, and the cksum that names a host: what hosts.rs
//! builds and slots/ checks, below both, so neither reaches back up to
//! the other.

use std::collections::BTreeMap;

use serde::Serialize;

/// One host of the pool, as `hosts` answers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Host {
    #[serde(rename = "type")]
    pub(crate) tag: &'static str,
    /// Its place in the pool, from 1.
    pub n: usize,
    /// `[USER@]HOST[:PORT]`, or `-` (this machine).
    pub dest: String,
    /// The exec prefix (empty: none).
    pub exec: String,
    /// The URL, `{port}` left in it when a slot's port is to be read from
    /// its target (the origin's dry run).
    pub url: String,
    pub id: String,
    /// How messages name it.
    pub name: String,
    /// A GPU slot: its number on its machine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// A slot's GPUs, as given (`0,1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpus: Option<String>,
    /// A slot's port, as its line gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// A slot's own target (unit, spec or container), templated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl Host {
    /// The machine it runs on, as slot messages and records name it:
    /// `local`, or the SSH destination.
    pub fn machine(&self) -> &str {
        match self.dest.as_str() {
            "-" => "local",
            d => d,
        }
    }
}

/// One line of a pool, read: where it is, its words.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub at: String,
    pub dest: String,
    pub hostname: String,
    pub vars: BTreeMap<String, String>,
    pub exec: String,
}

impl Line {
    /// A line names a slot of its machine.
    pub fn is_slot(&self) -> bool {
        self.vars.contains_key("slot") || self.vars.contains_key("gpus")
    }
}

/// POSIX cksum(1): CRC-32 (polynomial 0x04C11DB7) over the bytes, then
/// their length, complemented; the ids of earlier pools were cksum's.
pub fn cksum(data: &[u8]) -> u32 {
    let step = |crc: u32, b: u8| {
        let mut c = crc ^ (u32::from(b) << 24);
        for _ in 0..8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04C1_1DB7
            } else {
                c << 1
            };
        }
        c
    };
    let mut crc = data.iter().fold(0, |c, &b| step(c, b));
    let mut len = data.len();
    while len > 0 {
        crc = step(crc, (len & 0xff) as u8);
        len >>= 8;
    }
    !crc
}
