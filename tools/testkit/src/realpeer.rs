//! Real vLLM and SGLang for the tests: read what `make real-peer` built
//! (scripts/real-peer.sh writes $SWEEPKIT_CACHE/manifest.json), and always
//! kill a server's whole process group at the end (vLLM's engine and
//! SGLang's scheduler are child processes; a SIGTERM during vLLM's start-up
//! can be lost, so a second signal and then SIGKILL follow).
//! A missing cache fails the test: these tests never skip.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Paths from the real-peer manifest.
pub struct Peers {
    pub manifest: Value,
    pub path: PathBuf,
}

impl Peers {
    /// Read the manifest; panic (fail the test) when it or `keys` are missing.
    pub fn load(keys: &[&str]) -> Peers {
        let dir = std::env::var_os("SWEEPKIT_CACHE")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/sweepkit")
            });
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e}: the real servers are not built; run `make real-peer` \
                 (scripts/real-peer.sh)",
                path.display()
            )
        });
        let manifest: Value = serde_json::from_str(&text).expect("manifest.json is JSON");
        let p = Peers { manifest, path };
        for k in keys {
            let f = p.get(k);
            assert!(
                f.exists(),
                "{} listed in {} but missing: rerun make real-peer",
                f.display(),
                p.path.display()
            );
        }
        crate::ran("real-peer cache");
        p
    }

    /// The path under `key`; panics naming the step that writes it.
    pub fn get(&self, key: &str) -> PathBuf {
        PathBuf::from(self.manifest[key].as_str().unwrap_or_else(|| {
            panic!(
                "{} lacks {key}: run `make real-peer` (scripts/real-peer.sh --only vllm,sglang,hf)",
                self.path.display()
            )
        }))
    }

    pub fn str(&self, key: &str) -> String {
        self.manifest[key].as_str().unwrap_or_default().to_string()
    }
}

/// A port for a real server that restarts for minutes: free now and below
/// Linux's ephemeral range (32768-60999), so that while the server is down
/// no other test's bind to port 0 takes it (seen: an llm-sim got SGLang's
/// port during its 2.5-minute restart, and wait-ready read llm-sim's
/// /server_info). Random start so parallel tests rarely try the same one.
pub fn server_port() -> u16 {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
        ^ std::process::id();
    let (lo, span) = (20000u32, 12000u32);
    for i in 0..span {
        let port = (lo + (seed.wrapping_add(i * 7919)) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {lo}..{}", lo + span)
}

/// Kills, on drop, the process group whose leader a pid file names (svc-swap's
/// process manager starts each server with `setsid`): whatever a test leaves
/// running, children included, dies at its end.
pub struct KillGroupOnDrop(pub PathBuf);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(&self.0)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        if let Some(pid) = pid {
            kill_group(pid);
        }
    }
}

/// SIGTERM the process group led by `pid`, again after 5 s (vLLM can lose
/// the first during start-up), then SIGKILL after 15 s.
pub fn kill_group(pid: u32) {
    let group = format!("-{pid}");
    let alive = || {
        Command::new("kill")
            .args(["-0", "--", &group])
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
    };
    for (sig, wait) in [("TERM", 5), ("TERM", 10), ("KILL", 5)] {
        if !alive() {
            return;
        }
        let _ = Command::new("kill")
            .args([&format!("-{sig}"), "--", &group])
            .stderr(Stdio::null())
            .status();
        let t0 = Instant::now();
        while alive() && t0.elapsed() < Duration::from_secs(wait) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The last 60 lines of a log, for failure messages.
pub fn tail(text: &str) -> String {
    let lines: Vec<_> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// One HTTP/1.0 request on 127.0.0.1 with extra headers and an optional
/// JSON body: (status, head, body).
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Option<(u16, String, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body.unwrap_or(""));
    s.write_all(req.as_bytes()).ok()?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).ok()?;
    let resp = String::from_utf8_lossy(&resp).into_owned();
    let status = resp.split_whitespace().nth(1)?.parse().ok()?;
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    Some((status, head.to_string(), body.to_string()))
}

/// The metric names of the samples in a Prometheus text exposition.
pub fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split(['{', ' ']).next().map(String::from))
        .collect()
}

/// Sum of a Prometheus metric's samples (all label sets) in `text`.
pub fn metric_sum(text: &str, name: &str) -> Option<f64> {
    let mut found = None;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let Some(rest) = l.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with(' ') || rest.starts_with('{')) {
            continue;
        }
        let v: f64 = rest.rsplit(' ').next()?.trim().parse().ok()?;
        found = Some(found.unwrap_or(0.0) + v);
    }
    found
}

/// vLLM's CPU build (`make real-peer`) serving the peer model `model` on
/// 127.0.0.1:`port` with `args`, its output in `dir/vllm.log`, in a process
/// group of its own that is killed on drop; returned once `/health` answers
/// 200 (a start takes minutes here), else a panic with the log's tail.
pub struct Vllm {
    log: PathBuf,
    _group: KillGroupOnDrop,
}

impl Vllm {
    pub fn serve(p: &Peers, model: &str, dir: &std::path::Path, port: u16, args: &[&str]) -> Vllm {
        use std::os::unix::process::CommandExt;
        let log = dir.join("vllm.log");
        let file = std::fs::File::create(&log).expect("vllm.log");
        let mut child = Command::new(p.get("vllm").with_file_name("python"))
            .args(["-m", "vllm.entrypoints.cli.main", "serve"])
            .arg(p.get(model))
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(args)
            .env("VLLM_CPU_KVCACHE_SPACE", "1")
            .stdout(file.try_clone().expect("vllm.log"))
            .stderr(file)
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("start vLLM");
        let pid_file = dir.join("vllm.pid");
        std::fs::write(&pid_file, child.id().to_string()).expect("vllm.pid");
        // Reaped when the group is killed at the end (KillGroupOnDrop).
        std::thread::spawn(move || child.wait());
        let v = Vllm {
            log,
            _group: KillGroupOnDrop(pid_file),
        };
        assert!(
            crate::healthy_within(port, Duration::from_secs(600)),
            "vLLM not ready:\n{}",
            v.log_tail()
        );
        v
    }

    /// The last lines of its log.
    pub fn log_tail(&self) -> String {
        tail(&std::fs::read_to_string(&self.log).unwrap_or_default())
    }
}
