//! A throwaway Linux network namespace for tests that need a "remote host"
//! with its own loopback: `ip netns add sk-<pid>-<n>`, its `lo` up, and a
//! veth pair carrying a /30 from 10.213.0.0/16 (host side .1, namespace
//! side .2). Those addresses exist only on our own veth pair, so test
//! traffic never leaves the machine. Drop kills every process still in the
//! namespace, deletes the veth and the namespace. `Netns::create()` returns
//! None (with a line on stderr) where `ip` is missing or namespaces are not
//! permitted (scripts/deps.sh installs iproute2; it needs CAP_SYS_ADMIN and
//! CAP_NET_ADMIN), so tests can skip instead of failing.

use std::ffi::OsStr;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Namespaces made by this process so far (the `<n>` in the name).
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A network namespace joined to this machine by a veth pair.
pub struct Netns {
    /// `sk-<pid>-<n>`, as `ip netns` knows it.
    pub name: String,
    /// This machine's end of the veth pair (`10.213.N.1`).
    pub host_addr: String,
    /// The namespace's end (`10.213.N.2`): what a "remote" server inside
    /// listens on to be reachable from here.
    pub addr: String,
    host_veth: String,
    /// Holds the /30 for this process: an abstract unix socket named after
    /// it, released by the kernel even on a crash, so parallel tests (and
    /// test binaries) never share a subnet.
    _subnet_lock: UnixListener,
}

/// Run `ip ARGS`; Err(stderr) when it fails or cannot start.
fn ip(args: &[&str]) -> Result<(), String> {
    match Command::new("ip").args(args).stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Err(format!("cannot run ip: {e}")),
    }
}

/// stdout of `ip ARGS` ("" on any failure).
fn ip_out(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Lock a free third octet N of 10.213.N.0/30: nobody holds its lock
/// socket and no interface on this machine has an address in it (a
/// leftover of a killed run).
fn lock_subnet(start: u32) -> Option<(u8, UnixListener)> {
    for i in 0..254u32 {
        let n = ((start % 254 + i) % 254 + 1) as u8;
        let name = format!("sweepkit-netns-10.213.{n}");
        let Ok(addr) = SocketAddr::from_abstract_name(name.as_bytes()) else {
            continue;
        };
        // Binding fails (EADDRINUSE) while another process holds it.
        let Ok(f) = UnixListener::bind_addr(&addr) else {
            continue;
        };
        if ip_out(&[
            "-4",
            "-o",
            "addr",
            "show",
            "to",
            &format!("10.213.{n}.0/30"),
        ])
        .trim()
        .is_empty()
        {
            return Some((n, f));
        }
    }
    None
}

impl Netns {
    /// Make a namespace, or None (with a line on stderr) where that is not
    /// possible here.
    pub fn create() -> Option<Netns> {
        let pid = std::process::id();
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("sk-{pid}-{n}");
        if let Err(e) = ip(&["netns", "add", &name]) {
            crate::skip(&format!(
                "`ip netns add {name}` failed: {e} (needs iproute2, \
                 installed by scripts/deps.sh, and CAP_SYS_ADMIN)"
            ));
            return None;
        }
        // Interface names are limited to 15 bytes: "skh" + pid + "x" + n.
        let host_veth = format!("skh{pid}x{n}");
        let ns_veth = format!("skn{pid}x{n}");
        let Some((octet, lock)) = lock_subnet(pid.wrapping_mul(31).wrapping_add(n)) else {
            let _ = ip(&["netns", "del", &name]);
            crate::skip("no free 10.213.N.0/30 test subnet");
            return None;
        };
        let ns = Netns {
            name,
            host_addr: format!("10.213.{octet}.1"),
            addr: format!("10.213.{octet}.2"),
            host_veth,
            _subnet_lock: lock,
        };
        // From here on Drop undoes whatever was done.
        let host_cidr = format!("{}/30", ns.host_addr);
        let ns_cidr = format!("{}/30", ns.addr);
        let steps: [Vec<&str>; 7] = [
            vec![
                "link",
                "add",
                &ns.host_veth,
                "type",
                "veth",
                "peer",
                "name",
                &ns_veth,
            ],
            vec!["link", "set", &ns_veth, "netns", &ns.name],
            vec!["addr", "add", &host_cidr, "dev", &ns.host_veth],
            vec!["link", "set", &ns.host_veth, "up"],
            vec!["-n", &ns.name, "addr", "add", &ns_cidr, "dev", &ns_veth],
            vec!["-n", &ns.name, "link", "set", &ns_veth, "up"],
            vec!["-n", &ns.name, "link", "set", "lo", "up"],
        ];
        for step in &steps {
            if let Err(e) = ip(step) {
                crate::skip(&format!("`ip {}` failed: {e}", step.join(" ")));
                return None;
            }
        }
        crate::ran("netns");
        Some(ns)
    }

    /// `ip netns exec NAME`: the prefix that runs a command inside.
    pub fn prefix(&self) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.name.clone(),
        ]
    }

    /// A command running `program` inside the namespace. `ip netns exec`
    /// execs `program` itself, so the child's pid is the program's pid
    /// (the same in every pid namespace here: only the network differs).
    pub fn exec(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.name]).arg(program);
        c
    }

    /// Pids of processes whose network namespace is this one.
    pub fn pids(&self) -> Vec<u32> {
        ip_out(&["netns", "pids", &self.name])
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Everything still inside: the test's servers and anything they
        // forked (sshd's per-connection children), even if a test panicked
        // before its own handles were dropped.
        let t0 = Instant::now();
        loop {
            let pids = self.pids();
            if pids.is_empty() || t0.elapsed() > Duration::from_secs(3) {
                break;
            }
            for p in pids {
                let _ = Command::new("kill")
                    .args(["-KILL", &p.to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Deleting the namespace frees its veth end only asynchronously;
        // delete the pair first so the /30 is gone before the lock is.
        let _ = ip(&["link", "del", &self.host_veth]);
        if let Err(e) = ip(&["netns", "del", &self.name]) {
            eprintln!("testkit::netns: ip netns del {}: {e}", self.name);
        }
    }
}
