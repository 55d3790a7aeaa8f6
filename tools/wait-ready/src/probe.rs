//! One probe of one target, on a fresh connection (a fresh ureq agent per
//! probe, no pooling: a pooled connection could be answered by a process
//! that is already gone). Errors are classified so the waiting loop can tell
//! "refused" (maybe loading) from "no such host" and "no route".

use std::io::{self, Read};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use sweepkit::transport::Transport;

use crate::target::{Addr, Target};

/// Maps `host:port` to the address to connect to (the SSH forwarder).
pub type Route = Arc<dyn Fn(&str) -> io::Result<Vec<SocketAddr>> + Send + Sync>;

/// How the request is made.
#[derive(Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// Sent as `Authorization: Bearer ...`; never printed.
    pub bearer: Option<String>,
    /// Where connections really go (SSH tunnel); None: the target's host.
    pub route: Option<Route>,
    /// The SSH transport: a direct-tcpip connect first tells "refused on
    /// the far side" apart (the local forwarder would just reset).
    pub tunnel: Option<Arc<dyn Transport>>,
}

impl std::fmt::Debug for RequestSpec {
    // By hand so a token can never reach a debug print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestSpec")
            .field("method", &self.method)
            .field("headers", &self.headers.len())
            .field("bearer", &self.bearer.as_ref().map(|_| "***"))
            .finish()
    }
}

/// Why a probe did not reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetError {
    /// The name did not resolve.
    Dns,
    /// EHOSTUNREACH / ENETUNREACH.
    NoRoute,
    /// Connection refused: nothing listens (yet).
    Refused,
    /// No answer to the connect within the attempt timeout.
    ConnectTimeout,
    /// Connected, then the exchange failed (reset, read timeout, bad HTTP).
    AfterConnect,
}

/// What one probe saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// A TCP connection was established.
    pub port_open: bool,
    pub status: Option<u16>,
    pub net: Option<NetError>,
    pub pass: bool,
    /// Short human description: `HTTP 503`, `connection refused`, ...
    pub detail: String,
}

impl Probe {
    fn net(net: NetError, detail: String) -> Self {
        Probe {
            port_open: net == NetError::AfterConnect,
            status: None,
            net: Some(net),
            pass: false,
            detail,
        }
    }
}

/// Probe `t` once.
pub fn probe(t: &Target, req: &RequestSpec, timeout: Duration) -> Probe {
    if let Some(tun) = &req.tunnel {
        let (host, port) = t.host_port();
        if let Err(e) = tun.connect_tcp(&host, port, timeout) {
            let msg = e.to_string();
            let net = if msg.contains("timed out") {
                NetError::ConnectTimeout
            } else {
                NetError::Refused
            };
            return Probe::net(net, format!("{} (through {})", msg, tun.describe()));
        }
        if let Addr::Tcp { .. } = t.addr {
            return Probe {
                port_open: true,
                status: None,
                net: None,
                pass: true,
                detail: format!("port open (through {})", tun.describe()),
            };
        }
    }
    match &t.addr {
        Addr::Tcp { host, port } => probe_tcp(host, *port, req, timeout),
        Addr::Http(url) => {
            let body_needed = t.expect.needs_body();
            match http(url.as_str(), req, timeout, body_needed) {
                Ok((status, body)) => {
                    let why = t.expect.check(status, &body);
                    Probe {
                        port_open: true,
                        status: Some(status),
                        net: None,
                        pass: why.is_none(),
                        detail: why.unwrap_or_else(|| format!("HTTP {status}")),
                    }
                }
                Err((net, detail)) => Probe::net(net, detail),
            }
        }
    }
}

fn probe_tcp(host: &str, port: u16, req: &RequestSpec, timeout: Duration) -> Probe {
    let netloc = format!("{}:{port}", bracket(host));
    let addrs = match &req.route {
        // The tunnel's own failure is not a name that does not resolve.
        Some(r) => match r(&netloc) {
            Ok(a) => a,
            Err(e) => return Probe::net(NetError::Refused, format!("tunnel: {e}")),
        },
        None if never_resolves(host) => {
            return Probe::net(NetError::Dns, never_resolves_detail(host))
        }
        None => match netloc.to_socket_addrs() {
            Ok(a) => a.collect(),
            Err(e) => {
                let d = format!("name does not resolve ({host}: {e})");
                return Probe::net(NetError::Dns, d);
            }
        },
    };
    if addrs.is_empty() {
        return Probe::net(
            NetError::Dns,
            format!("name does not resolve ({host}: no address)"),
        );
    }
    let mut last = None;
    for a in &addrs {
        match TcpStream::connect_timeout(a, timeout) {
            Ok(_) => {
                return Probe {
                    port_open: true,
                    status: None,
                    net: None,
                    pass: true,
                    detail: "port open".into(),
                }
            }
            Err(e) => last = Some(e),
        }
    }
    let e = last.expect("at least one address");
    let (net, detail) = classify_io(&e);
    Probe::net(net, detail)
}

/// RFC 6761 section 6.4: `.invalid` names never resolve, and resolver
/// libraries should say so at once; glibc asks the DNS server all the same
/// (slow, or never answering, where none is reachable). Answered here
/// without a lookup, for the names this machine would resolve; over SSH
/// the far side resolves every name.
fn never_resolves(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "invalid" || h.ends_with(".invalid")
}

fn never_resolves_detail(host: &str) -> String {
    format!("name does not resolve ({host}: .invalid names never do, RFC 6761)")
}

fn bracket(host: &str) -> String {
    if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// One HTTP exchange: (status, body up to 1 MiB) or a classified error.
pub fn http(
    url: &str,
    req: &RequestSpec,
    timeout: Duration,
    read_body: bool,
) -> Result<(u16, String), (NetError, String)> {
    let mut b = ureq::AgentBuilder::new()
        .timeout_connect(timeout)
        .timeout(timeout)
        .max_idle_connections(0)
        .user_agent(concat!("wait-ready/", env!("CARGO_PKG_VERSION")));
    if let Some(r) = &req.route {
        let r = r.clone();
        b = b.resolver(move |netloc: &str| r(netloc));
    }
    if req.route.is_none() {
        let host = url::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(String::from));
        if let Some(h) = host.filter(|h| never_resolves(h)) {
            return Err((NetError::Dns, never_resolves_detail(&h)));
        }
    }
    let agent = b.build();
    let method = if req.method.is_empty() {
        "GET"
    } else {
        &req.method
    };
    let mut r = agent.request(method, url).set("Connection", "close");
    for (k, v) in &req.headers {
        r = r.set(k, v);
    }
    if let Some(tok) = &req.bearer {
        r = r.set("Authorization", &format!("Bearer {tok}"));
    }
    let res = match &req.body {
        Some(b) => r.send_string(b),
        None => r.call(),
    };
    let resp = match res {
        Ok(resp) => resp,
        Err(ureq::Error::Status(_, resp)) => resp,
        Err(ureq::Error::Transport(t)) => return Err(classify_transport(&t, req.route.is_some())),
    };
    let status = resp.status();
    let mut body = String::new();
    // The body is read even when not checked: llama.cpp's 503 says why.
    let limit = if read_body { 1 << 20 } else { 4096 };
    let _ = resp.into_reader().take(limit).read_to_string(&mut body);
    Ok((status, body))
}

/// `routed`: the address came from the SSH tunnel's resolver, whose
/// failure is the tunnel's (the far side resolves the name later, when the
/// channel opens), not a name that does not resolve.
fn classify_transport(t: &ureq::Transport, routed: bool) -> (NetError, String) {
    use std::error::Error;
    let io = {
        let mut src = t.source();
        let mut found = None;
        while let Some(s) = src {
            if let Some(e) = s.downcast_ref::<io::Error>() {
                found = Some(e);
                break;
            }
            src = s.source();
        }
        found
    };
    match t.kind() {
        ureq::ErrorKind::Dns if routed => (
            NetError::Refused,
            format!(
                "tunnel: {}",
                io.map_or(t.kind().to_string(), |e| e.to_string())
            ),
        ),
        ureq::ErrorKind::Dns => (
            NetError::Dns,
            format!(
                "name does not resolve ({})",
                io.map_or(String::new(), |e| e.to_string())
            ),
        ),
        ureq::ErrorKind::ConnectionFailed => match io {
            Some(e) => classify_io(e),
            None => (NetError::Refused, "connect failed".into()),
        },
        _ => (
            NetError::AfterConnect,
            match io {
                Some(e) => format!("connected, then {e}"),
                None => format!("connected, then {}", t.kind()),
            },
        ),
    }
}

fn classify_io(e: &io::Error) -> (NetError, String) {
    match e.raw_os_error() {
        Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) => {
            return (NetError::NoRoute, format!("no route to host ({e})"))
        }
        Some(libc::ECONNREFUSED) => return (NetError::Refused, "connection refused".into()),
        _ => {}
    }
    match e.kind() {
        io::ErrorKind::ConnectionRefused => (NetError::Refused, "connection refused".into()),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => {
            (NetError::ConnectTimeout, "connect timed out".into())
        }
        _ => (NetError::Refused, format!("connect failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Expect, StatusSet};
    use std::io::Write;
    use std::net::TcpListener;

    fn target(s: &str) -> Target {
        Target {
            label: s.into(),
            addr: crate::target::parse_addr(s).unwrap(),
            expect: Expect::status_only(StatusSet::success()),
        }
    }

    fn req() -> RequestSpec {
        RequestSpec {
            method: "GET".into(),
            ..Default::default()
        }
    }

    #[test]
    fn refused_port_is_classified() {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        for s in [
            format!("http://127.0.0.1:{port}/health"),
            format!("tcp://127.0.0.1:{port}"),
        ] {
            let p = probe(&target(&s), &req(), Duration::from_secs(1));
            assert_eq!(p.net, Some(NetError::Refused), "{s}: {p:?}");
            assert!(!p.port_open && !p.pass);
        }
    }

    #[test]
    fn bad_name_is_dns() {
        // .invalid is answered without a lookup (no DNS server asked).
        for s in [
            "http://no-such-host.invalid:80/",
            "tcp://No-Such.INVALID.:80",
        ] {
            let t0 = std::time::Instant::now();
            let p = probe(&target(s), &req(), Duration::from_secs(2));
            assert_eq!(p.net, Some(NetError::Dns), "{s}: {p:?}");
            assert!(p.detail.starts_with("name does not resolve"), "{p:?}");
            assert!(t0.elapsed() < Duration::from_millis(500), "{s}: looked up");
        }
        assert!(!never_resolves("invalid.example.com"));
    }

    #[test]
    fn a_tunnel_that_fails_is_not_a_name_that_does_not_resolve() {
        let mut r = req();
        let route: Route = Arc::new(|_: &str| Err(io::Error::other("session lost")));
        r.route = Some(route);
        // Over SSH even .invalid goes to the far side.
        for s in ["http://gpu-internal:8000/health", "tcp://name.invalid:80"] {
            let p = probe(&target(s), &r, Duration::from_secs(2));
            assert_eq!(p.net, Some(NetError::Refused), "{s}: {p:?}");
            assert!(p.detail.contains("tunnel"), "{p:?}");
        }
    }

    #[test]
    fn status_and_body_are_read() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 1024];
            let n = s.read(&mut buf).unwrap();
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            let body = "{\"error\":\"Loading model\"}";
            write!(
                s,
                "HTTP/1.1 503 Service Unavailable\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            req
        });
        let mut r = req();
        r.bearer = Some("sekrit".into());
        let p = probe(
            &target(&format!("http://127.0.0.1:{port}/health")),
            &r,
            Duration::from_secs(2),
        );
        assert_eq!(p.status, Some(503));
        assert!(p.port_open && !p.pass);
        let seen = h.join().unwrap();
        assert!(seen.contains("Authorization: Bearer sekrit"), "{seen}");
        assert!(!format!("{r:?}").contains("sekrit"));
    }
}
