//! Is the URL loadgen is given the server the upstream records describe?
//! A base URL that wait-ready probed through a tunnel means another
//! machine from here; a loopback URL with another port than a local
//! target's is likely another server.

use serde_json::Value;

use crate::upstream_record::Upstream;

/// How wait-ready reached the server when it was not directly (`ready.via`,
/// e.g. `ssh root@gpu1`): its base URL is then as seen from the far side.
pub(crate) fn tunnelled_via(up: &Upstream) -> Option<String> {
    let via = up.raw.as_ref()?.get("via")?.as_str()?;
    via.starts_with("ssh").then(|| via.to_string())
}

/// The swap record's target, wherever it sits in the upstream chain.
fn upstream_target(up: &Upstream) -> Option<&Value> {
    let mut cur = up.raw.as_ref()?;
    for _ in 0..4 {
        if cur.get("type").and_then(Value::as_str) == Some("swap") {
            return cur.get("target");
        }
        cur = cur.get("upstream")?;
    }
    None
}

/// Warn when a URL given here cannot be the server the records describe:
/// a loopback URL with another port than a local target's. (Over SSH or a
/// forward, ports legitimately differ; the tunnel case is refused above.)
pub(crate) fn check_against_target(url: &str, up: &Upstream) {
    let Some(t) = upstream_target(up) else { return };
    let port = t.get("port").and_then(Value::as_u64);
    let remote = t.get("ssh").is_some_and(|s| !s.is_null());
    let url_port = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .split(['/', '?'])
        .next()
        .and_then(|h| h.rsplit_once(':'))
        .and_then(|(_, p)| p.parse::<u64>().ok());
    if let (Some(p), Some(u), false, true) = (port, url_port, remote, is_loopback_url(url)) {
        if p != u {
            sweepkit::diag::warning(
                "loadgen",
                format!(
                    "{url}: port {u}, but the upstream record's target listens on {p}; \
                     is this the server that was swapped?"
                ),
            );
        }
    }
}

/// True when the URL's host is this machine's loopback.
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tunnel_tests {
    use super::is_loopback_url;

    #[test]
    fn loopback_urls_are_recognised() {
        for u in [
            "http://127.0.0.1:30000",
            "http://localhost:8000/v1",
            "http://[::1]:80",
            "http://127.0.0.2",
        ] {
            assert!(is_loopback_url(u), "{u}");
        }
        for u in [
            "http://gpu1:30000",
            "http://10.0.0.5:8000",
            "http://[fe80::1]:1",
        ] {
            assert!(!is_loopback_url(u), "{u}");
        }
    }
}
