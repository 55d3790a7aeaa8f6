//! The fleet tests' hosts (`sweep_fleet.rs`, `sweep_fleet_ssh.rs`):
//! systemd-in-nspawn containers sharing one network namespace, each running
//! llm-sim as `sim.service` on its own port, steps 4 originally (a value no
//! grid there uses).

use std::path::Path;
use std::process::Output;

use testkit::nspawn::Container;

use super::{dump, SimExec, SweepArgs};

/// The flag every fleet sweep here sweeps.
pub const KEY: &str = "speculative-num-steps";

/// Few short requests a level (loadgen's options).
pub const QUICK: [&str; 6] = ["-n", "2", "--warmup", "0", "--max-tokens", "8"];

/// The words every sweep of the hosts' units shares: sim.service, one
/// level, no retries (a retry would hide which host failed), and time for
/// a unit's stop and start.
pub fn unit_sweep(values: &str, results: &Path) -> SweepArgs {
    SweepArgs::new()
        .args(&["--unit", "sim", "--server", "llm-sim"])
        .param(KEY, values)
        .levels("1")
        .results(results)
        .args(&["--retries", "0", "--ready-timeout", "30s"])
        .swap_wait()
}

/// GNU parallel and systemd-nspawn are prerequisites of a pool of
/// containers: missing, the test fails.
pub fn require_parallel_and_nspawn() {
    require_parallel();
    super::sim::require_nspawn();
}

/// GNU parallel, the engine of every pool: missing, the test fails.
pub fn require_parallel() {
    assert!(
        std::process::Command::new("parallel")
            .arg("--version")
            .output()
            .is_ok(),
        "GNU parallel not found (make deps installs it)"
    );
}

/// llm-sim under a process spec on this machine (a local host, `-`),
/// steps 4 originally, and its port.
pub fn local_spec(tag: &str) -> (super::SpecFile, u16) {
    let sim = SimExec::free().load("100ms").warmup("50ms").unseeded();
    let (spec, _) = sim.clone().eagle(4).spec(tag);
    (spec, sim.port)
}

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
        assert_unit_restored(&self.c, &self.original, out);
    }
}

/// `c`'s sim.service runs its `original` ExecStart (as `systemctl show`
/// printed it) again, after the run `out`.
pub fn assert_unit_restored(c: &Container, original: &str, out: &Output) {
    let now = c.sh("systemctl show -P ExecStart sim.service");
    assert_eq!(argv(&now), argv(original), "restored: {}", dump(out));
    assert_eq!(
        c.sh("systemctl is-active sim.service; true").trim(),
        "active",
        "{}",
        dump(out)
    );
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
        let sim = SimExec::in_container(port).host(addr).load(load_time);
        let sim = sim.warmup("50ms").probe("0s").seed(u32::from(k));
        let original = sim.eagle(4).install(&c, "");
        hosts.push(Host { c, port, original });
    }
    hosts
}
