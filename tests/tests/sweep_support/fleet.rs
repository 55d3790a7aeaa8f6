//! The fleet tests' hosts (`sweep_fleet.rs`, `sweep_fleet_ssh.rs`):
//! systemd-in-nspawn containers sharing one network namespace, each running
//! llm-sim as `sim.service` on its own port, steps 4 originally (a value no
//! grid there uses).

use std::path::Path;
use std::process::Output;

use testkit::nspawn::Container;

use super::dump;

/// A host: its container, its server's port and the unit's original
/// ExecStart (as `systemctl show` prints it).
pub struct Host {
    pub c: Container,
    pub port: u16,
    pub original: String,
}

impl Host {
    /// The unit's command line now.
    pub fn argv(&self) -> Option<String> {
        argv(&self.c.sh("systemctl show -P ExecStart sim.service"))
    }

    /// The original command line is back and the unit runs it.
    pub fn assert_restored(&self, out: &Output) {
        assert_eq!(self.argv(), argv(&self.original), "restored: {}", dump(out));
        assert_eq!(
            self.c.sh("systemctl is-active sim.service; true").trim(),
            "active",
            "{}",
            dump(out)
        );
    }
}

/// The command line in `systemctl show -P ExecStart` output.
pub fn argv(show: &str) -> Option<String> {
    show.split("argv[]=")
        .nth(1)
        .and_then(|a| a.split(" ;").next())
        .map(str::to_string)
}

/// Boot `n` hosts whose llm-sim listens on `addr`, ports 8001.., loading
/// for `load_time`; the first container is booted by `first` (its own
/// network, or a namespace this machine reaches), the others share its
/// network.
pub fn boot_pool(
    n: u16,
    addr: &str,
    load_time: &str,
    first: impl Fn(&[(&Path, &str)]) -> Result<Container, String>,
) -> Vec<Host> {
    let bin = testkit::bin("llm-sim");
    let binds = [(bin.parent().unwrap(), "/opt/sweepkit/bin")];
    let mut hosts: Vec<Host> = Vec::new();
    for k in 1..=n {
        let c = match hosts.first() {
            None => first(&binds),
            Some(h) => Container::boot_sharing_network(&binds, &h.c),
        }
        .expect("boot");
        let port = 8000 + k;
        let exec = format!(
            "/opt/sweepkit/bin/llm-sim --host {addr} --port {port} --load-time {load_time} \
             --warmup-time 50ms --health-probe-time 0s --seed {k} \
             --speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 4"
        );
        c.write_file(
            "/etc/systemd/system/sim.service",
            &format!("[Unit]\nDescription=llm-sim\n[Service]\nExecStart={exec}\n"),
        );
        c.sh("systemctl daemon-reload && systemctl start sim.service");
        let original = c.sh("systemctl show -P ExecStart sim.service");
        hosts.push(Host { c, port, original });
    }
    hosts
}
