//! `--ssh` against a "remote host" that really is remote as far as the
//! network goes: sshd and llm-sim run in their own network namespace
//! (testkit::netns), llm-sim on the namespace's 127.0.0.1 only. This
//! machine cannot reach that port at all (refused on our loopback and on
//! the namespace's address), so wait-ready finding it ready proves HTTP
//! went through the SSH direct-tcpip channel and was resolved on the far
//! side. A name only the far side resolves is probed through the tunnel,
//! never judged by this machine's resolver (`--unresolved-after`). Skipped,
//! with a line on stderr, where namespaces or sshd are not available.

mod common;

use std::io::{BufRead, BufReader, ErrorKind};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{crash_over_ssh, run_ssh, run_timed, wr};
use testkit::netns::Netns;
use testkit::sshd::Sshd;

/// llm-sim started inside `ns` on its loopback, stderr in a file; killed
/// on drop (and the namespace's Drop kills anything left).
struct NsSim {
    child: Child,
    port: u16,
    pid: u32,
    log: PathBuf,
    dir: PathBuf,
    started: Instant,
}

impl NsSim {
    fn start(ns: &Netns, tag: &str, args: &[&str]) -> NsSim {
        let dir = testkit::temp_dir(tag);
        let log = dir.join("server.log");
        let started = Instant::now();
        let mut child = ns
            .exec(testkit::bin("llm-sim"))
            .args(["--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("spawn ip netns exec llm-sim");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().expect("bound line").unwrap();
        let v: serde_json::Value = serde_json::from_str(&first).unwrap();
        let port = v["port"].as_u64().unwrap() as u16;
        let pid = v["pid"].as_u64().unwrap() as u32;
        // `ip netns exec` execs llm-sim: the pid we hold is the server's.
        assert_eq!(pid, child.id(), "ip netns exec did not exec llm-sim");
        std::thread::spawn(move || for _ in lines {});
        NsSim {
            child,
            port,
            pid,
            log,
            dir,
            started,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for NsSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A namespace with sshd listening on its address, or None (skip).
fn remote_host() -> Option<(Netns, Sshd)> {
    let ns = Netns::create()?;
    let sshd = Sshd::start_in(&ns)?;
    Some((ns, sshd))
}

/// A TCP connect from this machine is actively refused (not a timeout).
fn refused(host: &str, port: u16) -> bool {
    let addr = format!("{host}:{port}").parse().unwrap();
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(_) => false,
        Err(e) => e.kind() == ErrorKind::ConnectionRefused,
    }
}

#[test]
fn loopback_only_server_is_ready_through_the_tunnel() {
    // Declared first so it is dropped last (also on panic), after the
    // servers inside it.
    let Some((ns, sshd)) = remote_host() else {
        return;
    };
    let sim = NsSim::start(
        &ns,
        "netns-ready",
        &testkit::flags::eagle_with("3", &testkit::words("--load-time 1s --warmup-time 300ms")),
    );
    // Nothing on this machine's loopback at that port.
    assert!(
        refused("127.0.0.1", sim.port),
        "127.0.0.1:{} answers on this machine",
        sim.port
    );
    let head_start = sim.started.elapsed().as_secs_f64();
    let pid = sim.pid.to_string();
    let (r, wall) = run_ssh(
        &sshd,
        &format!(
            "--server llm-sim --pid {pid} --expect-config speculative_num_steps=3 --timeout 30s"
        ),
        &sim.url(),
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["type"], "ready", "{rec}");
    assert_eq!(rec["outcome"], "ready", "{rec}");
    let via = rec["via"].as_str().unwrap_or_default();
    assert!(
        via.starts_with("ssh ") && via.contains(&ns.addr),
        "via {via:?} does not name the SSH host {}",
        ns.addr
    );
    // The server was loading (port closed, then /health 503) when the
    // wait began: refusal on the far side read as "not open yet", so ready
    // came no sooner than load + warm-up after the server started. The
    // record's times count from after the SSH connect, which a loaded
    // machine delays by a varying amount: judge by the test's own clock.
    let open = rec["time_to_port_open_s"].as_f64().unwrap();
    let ready = rec["time_to_ready_s"].as_f64().unwrap();
    let since_start = sim.started.elapsed().as_secs_f64();
    assert!(
        since_start >= 1.3,
        "ready {since_start:.3}s after the server started: before load + warm-up (1.3s)"
    );
    assert!(
        open <= ready,
        "port open at {open:.3}s after ready at {ready:.3}s"
    );
    assert!(
        head_start < 1.0,
        "the wait began {head_start:.3}s in: not while loading"
    );
    assert_eq!(rec["server"]["simulated"], true, "server info via tunnel");
    eprintln!("ready via {via}: port open {open:.3}s, ready {ready:.3}s, wall {wall:.2}s");

    // Now that it listens, it still cannot be reached from here: not on
    // our loopback and not on the namespace's address.
    assert!(refused("127.0.0.1", sim.port), "host loopback answers");
    assert!(
        refused(&ns.addr, sim.port),
        "{}:{} answers from this machine",
        ns.addr,
        sim.port
    );
    // Without --ssh the same URL is refused here, with nothing to wait for.
    let (r, _) = run_timed(wr(&["--timeout", "5s", &sim.url()]), "");
    r.expect_code(12);

    // The live config really is read through the tunnel: a wrong value
    // is a mismatch, not a pass.
    let (r, _) = run_ssh(
        &sshd,
        "--server llm-sim --expect-config speculative-num-steps=5 --timeout 10s",
        &sim.url(),
    );
    let rec = r.expect_one(13);
    assert_eq!(rec["type"], "failure", "{rec}");
    assert_eq!(rec["kind"], "config_mismatch", "{rec}");
}

#[test]
fn crash_inside_the_namespace_is_seen_through_ssh() {
    let Some((ns, sshd)) = remote_host() else {
        return;
    };
    let sim = NsSim::start(
        &ns,
        "netns-crash",
        &["--crash-on-load", "--load-time", "500ms"],
    );
    assert!(refused("127.0.0.1", sim.port));
    // The log is this server's alone.
    let (rec, wall) = crash_over_ssh(
        &sshd,
        &sim.pid.to_string(),
        &sim.log,
        "--server llm-sim --timeout 20s",
        &sim.url(),
    );
    assert!(wall < 8.0, "crash took {wall:.2}s to see");
    assert_eq!(rec["type"], "failure", "{rec}");
    assert_eq!(rec["kind"], "oom", "{rec}");
    assert!(
        rec["log_tail"].to_string().contains("CUDA out of memory"),
        "{rec}"
    );
}

/// `/etc/netns/NAME/hosts`, which `ip netns exec` bind-mounts over
/// /etc/hosts for what it runs (sshd and its children): names that only
/// the far side resolves. Removed on drop.
struct FarSideHosts(PathBuf);

impl FarSideHosts {
    fn write(ns: &Netns, text: &str) -> FarSideHosts {
        let dir = PathBuf::from("/etc/netns").join(&ns.name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("hosts"), text).unwrap();
        FarSideHosts(dir)
    }
}

impl Drop for FarSideHosts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        // /etc/netns itself too, unless another namespace's files are there.
        let _ = std::fs::remove_dir("/etc/netns");
    }
}

#[test]
fn a_name_only_the_far_side_resolves_is_not_unresolved_here() {
    // Dropped in reverse: the servers, sshd, the hosts file, the namespace.
    let Some(ns) = Netns::create() else { return };
    let name = "sweepkit-far-side.test";
    let _hosts = FarSideHosts::write(&ns, &format!("127.0.0.1 localhost {name}\n"));
    let Some(sshd) = Sshd::start_in(&ns) else {
        return;
    };
    let sim = NsSim::start(
        &ns,
        "netns-far-name",
        &testkit::words("--load-time 3s --warmup-time 0s"),
    );
    // Loading (refused on the far side) for longer than the grace: had the
    // name been resolved here, it would not resolve and end the wait (12).
    let (r, _) = run_ssh(
        &sshd,
        "--server llm-sim --unresolved-after 300ms --timeout 30s",
        &format!("http://{name}:{}", sim.port),
    );
    let rec = r.expect_one(0);
    assert_eq!(rec["outcome"], "ready", "{rec}");
    assert_eq!(
        rec["server"]["simulated"], true,
        "server info via the tunnel"
    );
    // The port stayed closed past the grace after the wait began.
    let open = rec["time_to_port_open_s"].as_f64().unwrap();
    assert!(
        open > 0.3,
        "port open {open:.2}s into the wait: the grace was not tested"
    );
}
