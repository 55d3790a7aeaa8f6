//! sweep's pre-flight on the dry-run swap it reads the origin from, before
//! the first stop (issue 33): a swept flag the launch line lacks (a typo
//! such as `speculative-num-step`, unless `--param-new` declared it) and a
//! `--url` whose port is not the one the target listens on, and a running
//! server that answers "no such path" where wait-ready would probe it (no
//! `--server`), and a launch line with `--api-key` when no key would be
//! sent (issue 46). Each refusal is one line saying what to write instead;
//! the server is untouched. Every path (here, a pool's host, `--slurm`,
//! containers, `--dry-run`) reaches [`check`] through [`look::look`].

pub mod look;

use sweepkit::records::{ServiceManager, SwapRecord};
use url::Url;

use crate::grid::key_of;

/// The dry run's words for `url` and the keys `--param-new` declared.
pub struct Checks<'a> {
    /// The URL wait-ready and loadgen reach the server at; `None` under
    /// `--slurm`, where each job's server has a port and node of its own.
    pub url: Option<&'a str>,
    pub new: &'a [String],
    /// The keys sweep varies (`--param`): the only changes checked, since
    /// a `--swap-arg --set K` adds K on purpose.
    pub swept: &'a [String],
    /// wait-ready will probe `url` as given (sweep has no --server).
    pub probe: bool,
    /// The tools will send an API key (one in the environment, or an
    /// `--api-key` among loadgen's arguments).
    pub key_given: bool,
}

/// Why the sweep must not start: one line saying what to write instead
/// (the target was not touched).
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Refusal {
    #[error("--param {key}: the launch line has no --{key}{closest}; fix the name, or give --param-new {key} to add the flag (the target was not touched)")]
    AbsentFlag { key: String, closest: String },
    #[error("--url {url} is port {have}, but the target listens on port {want} ({from}): give a --url with port {want} (the target was not touched)")]
    OtherPort {
        url: String,
        have: u16,
        want: u16,
        from: &'static str,
    },
    #[error("port {port} of --url is held by PID {pid} ({command}), which is not the target's server: stop it or free the port (the target was not touched)")]
    PortHeld {
        port: u16,
        pid: u32,
        command: String,
    },
    #[error("the launch line has --api-key, but no key is in the environment: set {} to the server's key (every tool reads it) and run the sweep again (the target was not touched)", sweepkit::api::KEY_ENV)]
    NoKey,
    #[error("--url {url} answers HTTP {status} (no such path), and with no --server wait-ready probes just that: give --server KIND ({kinds}) to probe the server's health path (the target was not touched)")]
    NoSuchPath {
        url: String,
        status: u16,
        kinds: String,
    },
}

/// Why the sweep must not start, or `Ok`.
pub fn check(rec: &SwapRecord, c: &Checks<'_>) -> Result<(), Refusal> {
    absent_flags(rec, c.new, c.swept)?;
    key_wanted(rec, c.key_given)?;
    if let Some(url) = c.url {
        url_checks(rec, url, c.probe)?;
    }
    Ok(())
}

/// The checks of the URL sweep reaches the target at. It is parsed once;
/// one that does not parse has no port to compare (wait-ready says why).
fn url_checks(rec: &SwapRecord, given: &str, probe: bool) -> Result<(), Refusal> {
    let Ok(url) = Url::parse(given) else {
        return Ok(());
    };
    port_matches(rec, given, &url)?;
    port_held(rec, &url)?;
    match probe {
        true => path_exists(given, &probed(&url)),
        false => Ok(()),
    }
}

/// What wait-ready probes at `url` with no --server: the URL as given, or
/// at an OpenAI API base (`.../v1`) its model list (sweepkit::api).
fn probed(url: &Url) -> Url {
    let mut u = url.clone();
    if let Some(root) = sweepkit::api::root_of(url.path()) {
        u.set_path(&format!("{root}{}", sweepkit::api::MODELS));
    }
    u
}

/// A server started with `--api-key` answers 401 to every request without
/// one: loadgen would fail each config alike after its restart (issue 46).
fn key_wanted(rec: &SwapRecord, key_given: bool) -> Result<(), Refusal> {
    let has_key = rec.exec_start.iter().any(|w| sweepkit::api::is_key_flag(w));
    match !key_given && has_key {
        true => Err(Refusal::NoKey),
        false => Ok(()),
    }
}

/// A port held by a process that is not the target's server stays held
/// after the stop: each config would wait for it (svc-swap's --wait) and
/// fail with "port still in use". Checked here when the target and the
/// URL are this machine's (no SSH, no exec prefix, a loopback URL).
fn port_held(rec: &SwapRecord, url: &Url) -> Result<(), Refusal> {
    let t = &rec.target;
    let Some((port, true)) = url_port(url) else {
        return Ok(());
    };
    if t.ssh.is_some() || t.exec_prefix.is_some() {
        return Ok(());
    }
    let holders = sweepkit::listeners::holders(port);
    if holders.is_empty() || holders.iter().any(|h| is_target(rec, h.pid)) {
        return Ok(());
    }
    let h = &holders[0];
    Err(Refusal::PortHeld {
        port,
        pid: h.pid,
        command: h.command.clone(),
    })
}

/// Whether `pid` belongs to the target: the spec's PID file names it or
/// an ancestor (process), its cgroup is the unit's (systemd), the
/// container's id is in its cgroup or an ancestor's command (podman's
/// conmon, docker's shim). Unknown ways count as the target's.
fn is_target(rec: &SwapRecord, pid: u32) -> bool {
    use sweepkit::listeners::{command, lineage};
    let t = &rec.target;
    let cgroup = || std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    match &t.manager {
        ServiceManager::Process => {
            let Some(f) = &t.pid_file else { return true };
            let owner = std::fs::read_to_string(f)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok());
            owner.is_some_and(|o| lineage(pid).contains(&o))
        }
        // svc-swap records the unit's full name (`NAME.service`).
        ServiceManager::Systemd => cgroup().contains(&format!("/{}", t.unit)),
        ServiceManager::Container => match t.container.as_ref().map(|c| c.id.as_str()) {
            Some(id) if !id.is_empty() => {
                cgroup().contains(id) || lineage(pid).iter().any(|p| command(*p).contains(id))
            }
            _ => true,
        },
        ServiceManager::Other(_) => true,
    }
}

/// A running server that answers 404/405 at the URL wait-ready would
/// probe would have it fail every config (wait-ready's exit 14): say so
/// before the first stop. Not reachable from here, or another answer:
/// nothing to say yet.
fn path_exists(given: &str, url: &Url) -> Result<(), Refusal> {
    match http_status(url, std::time::Duration::from_secs(2)) {
        Some(status @ (404 | 405)) => Err(Refusal::NoSuchPath {
            url: given.to_string(),
            status,
            kinds: sweepkit::server_kind::list(),
        }),
        _ => Ok(()),
    }
}

/// The status of one plain-HTTP GET of `url`, if it answers in `limit`
/// (https is left to wait-ready, which speaks it). A redirect is an
/// answer too: not followed.
fn http_status(url: &Url, limit: std::time::Duration) -> Option<u16> {
    if url.scheme() != "http" {
        return None;
    }
    let agent = ureq::AgentBuilder::new()
        .timeout(limit)
        .redirects(0)
        .build();
    match agent.get(url.as_str()).call() {
        Ok(r) => Some(r.status()),
        Err(ureq::Error::Status(code, _)) => Some(code),
        Err(ureq::Error::Transport(_)) => None,
    }
}

/// Every swept flag the launch line lacks must be declared new: svc-swap
/// adds a flag it does not find, so a misspelt one would restart the
/// server with a flag it rejects, once per config. A dotted field of a
/// flag on the line (`speculative-config.num_speculative_tokens` beside
/// `--speculative-config JSON`) is that flag's: vLLM merges the two.
fn absent_flags(rec: &SwapRecord, new: &[String], swept: &[String]) -> Result<(), Refusal> {
    for ch in &rec.changes {
        let key = key_of(&ch.flag);
        let is_swept = swept.iter().any(|k| k == key);
        if ch.old.is_some() || ch.new.is_none() || !is_swept || new.iter().any(|k| k == key) {
            continue;
        }
        if let Some((flag, _)) = key.split_once('.') {
            let flag = format!("--{flag}");
            let on_line = |w: &String| w == &flag || w.starts_with(&format!("{flag}="));
            if rec.exec_start.iter().any(on_line) {
                continue;
            }
        }
        let closest = closest_flag(&ch.flag, &rec.exec_start)
            .map(|f| format!(" (closest: {f})"))
            .unwrap_or_default();
        return Err(Refusal::AbsentFlag {
            key: key.to_string(),
            closest,
        });
    }
    Ok(())
}

/// The flag of `line` nearest to `flag` by edit distance, when near
/// enough to be the one meant (at most a third of its length away).
fn closest_flag(flag: &str, line: &[String]) -> Option<String> {
    let want = format!("--{}", key_of(flag));
    line.iter()
        .filter(|w| w.starts_with("--") && w.as_str() != want)
        .map(|w| w.split_once('=').map_or(w.as_str(), |(f, _)| f))
        .map(|f| (distance(&want, f), f))
        .filter(|(d, _)| *d <= (want.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, f)| f.to_string())
}

/// Levenshtein distance, by the usual two-row dynamic programme.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The port `url` reaches (its scheme's default when it names none), and
/// whether its host is this machine's loopback.
fn url_port(u: &Url) -> Option<(u16, bool)> {
    let loopback = match u.host()? {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(ip) => ip.is_loopback(),
        url::Host::Ipv6(ip) => ip.is_loopback(),
    };
    Some((u.port_or_known_default()?, loopback))
}

/// The port the target listens on, when known, and where that was read:
/// svc-swap's (a spec's `Port=`, `--port`), else the launch line's
/// `--port N` (a unit or a process; a container's own port may be
/// published as another).
pub(crate) fn target_port(rec: &SwapRecord) -> Option<(u16, &'static str)> {
    if let Some(p) = rec.target.port {
        let from = match rec.target.manager {
            ServiceManager::Process => "the spec's Port=",
            _ => "svc-swap's --port",
        };
        return Some((p, from));
    }
    if matches!(
        rec.target.manager,
        ServiceManager::Container | ServiceManager::Other(_)
    ) {
        return None;
    }
    let w = &rec.exec_start;
    let mut port = None;
    for (i, word) in w.iter().enumerate() {
        if word == "--port" {
            port = w.get(i + 1).and_then(|p| p.parse().ok());
        } else if let Some(p) = word.strip_prefix("--port=") {
            port = p.parse().ok();
        }
    }
    port.map(|p| (p, "the launch line's --port"))
}

/// `--url` must reach the target's port: else wait-ready polls a port no
/// server will open, for the whole --ready-timeout, per config. Over SSH
/// a loopback URL may be a forwarded port: not compared.
fn port_matches(rec: &SwapRecord, given: &str, url: &Url) -> Result<(), Refusal> {
    let (Some((want, from)), Some((have, loopback))) = (target_port(rec), url_port(url)) else {
        return Ok(());
    };
    if want == have || (loopback && rec.target.ssh.is_some()) {
        return Ok(());
    }
    Err(Refusal::OtherPort {
        url: given.to_string(),
        have,
        want,
        from,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sweepkit::records::Change;

    // The checks as check() runs them on its one parse of the URL, each
    // refusal as its line.
    fn parsed(u: &str) -> Url {
        Url::parse(u).unwrap()
    }
    fn probe(u: &str) -> Result<(), String> {
        path_exists(u, &parsed(u)).map_err(|e| e.to_string())
    }
    fn held(rec: &SwapRecord, u: &str) -> Result<(), String> {
        port_held(rec, &parsed(u)).map_err(|e| e.to_string())
    }
    fn matches_port(rec: &SwapRecord, u: &str) -> Result<(), String> {
        port_matches(rec, u, &parsed(u)).map_err(|e| e.to_string())
    }
    fn port_of(u: &str) -> Option<(u16, bool)> {
        url_port(&parsed(u))
    }

    fn rec(manager: ServiceManager, port: Option<u16>, line: &str) -> SwapRecord {
        let mut r = SwapRecord::default();
        r.target.manager = manager;
        r.target.port = port;
        r.exec_start = line.split(' ').map(String::from).collect();
        r
    }

    #[test]
    fn a_misspelt_flag_is_refused_with_the_closest_one() {
        let mut r = rec(
            ServiceManager::Process,
            None,
            "sim --port 1 --speculative-num-steps 3 --speculative-num-step 4",
        );
        r.changes.push(Change {
            flag: "--speculative-num-step".into(),
            old: None,
            new: Some("4".into()),
        });
        let swept = ["speculative-num-step".to_string()];
        let e = absent_flags(&r, &[], &swept).unwrap_err().to_string();
        assert!(e.contains("closest: --speculative-num-steps"), "{e}");
        assert!(e.contains("--param-new speculative-num-step"), "{e}");
        assert!(absent_flags(&r, &swept, &swept).is_ok());
        // Added on purpose by a --swap-arg --set, not swept: not checked.
        assert!(absent_flags(&r, &[], &[]).is_ok());
        r.changes[0].flag = "--zzz".into();
        let e = absent_flags(&r, &[], &["zzz".into()])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("closest"), "{e}");
        r.changes[0].old = Some("1".into());
        assert!(absent_flags(&r, &[], &["zzz".into()]).is_ok());
        // A dotted field of a JSON flag on the line is that flag's.
        let mut v = rec(ServiceManager::Process, None, "sim --speculative-config {}");
        v.changes.push(Change {
            flag: "--speculative-config.num_speculative_tokens".into(),
            old: None,
            new: Some("2".into()),
        });
        let k = ["speculative-config.num_speculative_tokens".to_string()];
        assert!(absent_flags(&v, &[], &k).is_ok());
        v.exec_start = vec!["sim".into()];
        assert!(absent_flags(&v, &[], &k).is_err(), "no such flag at all");
    }

    #[test]
    fn a_launch_line_with_api_key_needs_a_key_to_send() {
        let r = rec(ServiceManager::Process, None, "sim --api-key <redacted>");
        let e = key_wanted(&r, false).unwrap_err().to_string();
        assert!(e.contains("set SWEEPKIT_API_KEY"), "{e}");
        assert!(e.contains("not touched"), "{e}");
        assert!(key_wanted(&r, true).is_ok());
        let eq = rec(ServiceManager::Process, None, "sim --api-key=k");
        assert!(key_wanted(&eq, false).is_err());
        let admin = rec(ServiceManager::Process, None, "sim --admin-api-key k");
        assert!(key_wanted(&admin, false).is_ok());
    }

    #[test]
    fn a_404_where_wait_ready_would_probe_is_refused() {
        // A one-shot server on port 0 that answers each GET with `status`.
        let serve = |status: u16| {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = l.local_addr().unwrap().port();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                let (mut c, _) = l.accept().unwrap();
                // The whole request head first: answering mid-request would
                // reset a client still writing it.
                let (mut head, mut buf) = (Vec::new(), [0u8; 512]);
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = write!(c, "HTTP/1.1 {status} X\r\nContent-Length: 0\r\n\r\n");
            });
            format!("http://127.0.0.1:{port}")
        };
        let e = probe(&serve(404)).unwrap_err();
        assert!(
            e.contains("HTTP 404 (no such path)") && e.contains("--server KIND"),
            "{e}"
        );
        assert!(probe(&serve(503)).is_ok(), "llama-server loading");
        // An API base is probed where wait-ready probes it: /v1/models.
        assert_eq!(
            probed(&parsed("http://h:1/v1/")).as_str(),
            "http://h:1/v1/models"
        );
        assert_eq!(probed(&parsed("http://h:1/x")).as_str(), "http://h:1/x");
        assert!(probe(&serve(200)).is_ok());
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        assert!(
            probe(&format!("http://127.0.0.1:{port}")).is_ok(),
            "not running yet"
        );
    }

    #[test]
    fn a_port_held_by_another_process_is_refused_naming_it() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}");
        let dir = std::env::temp_dir().join(format!("held-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pid_file = dir.join("s.pid");
        let mut spec = rec(ServiceManager::Process, Some(port), "sim");
        spec.target.pid_file = Some(pid_file.display().to_string());
        // No PID file: whoever holds the port is not the target.
        let e = held(&spec, &url).unwrap_err();
        assert!(
            e.contains(&format!("held by PID {}", std::process::id())),
            "{e}"
        );
        // This test's own process holds it, as the target's would.
        std::fs::write(&pid_file, std::process::id().to_string()).unwrap();
        assert!(held(&spec, &url).is_ok());
        let mut far = spec.clone();
        far.target.ssh = Some("root@g".into());
        std::fs::remove_file(&pid_file).unwrap();
        assert!(held(&far, &url).is_ok(), "not this machine's");
        drop(l);
        assert!(held(&spec, &url).is_ok(), "free");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_url_port_is_the_target_s() {
        let spec = rec(ServiceManager::Process, Some(18082), "sim --port 18082");
        let e = matches_port(&spec, "http://127.0.0.1:18099").unwrap_err();
        assert!(e.contains("is port 18099"), "{e}");
        assert!(e.contains("port 18082 (the spec's Port=)"), "{e}");
        assert!(matches_port(&spec, "http://127.0.0.1:18082/v1").is_ok());
        let unit = rec(ServiceManager::Systemd, None, "sim --port=8000");
        assert!(matches_port(&unit, "http://h:8000").is_ok());
        assert!(matches_port(&unit, "http://h")
            .unwrap_err()
            .contains("port 80,"));
        let mut far = unit.clone();
        far.target.ssh = Some("root@g".into());
        assert!(
            matches_port(&far, "http://127.0.0.1:9").is_ok(),
            "a forwarded port"
        );
        assert!(matches_port(&far, "http://g:9").is_err());
        let ct = rec(ServiceManager::Container, None, "sim --port 8000");
        assert!(
            matches_port(&ct, "http://h:9").is_ok(),
            "published ports unknown"
        );
        assert_eq!(port_of("https://[::1]/x"), Some((443, true)));
        assert_eq!(port_of("http://u@h:81"), Some((81, false)));
    }
}
