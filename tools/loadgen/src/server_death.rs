//! Did the server die during a level? A server that aborts mid-level
//! (llama-server's GGML_ASSERT under load) cuts the streams in flight and
//! then refuses connections; that is `crashed_mid_run`, not a benchmark
//! whose requests failed. Told apart after the level: the last failures
//! are refusals or cut streams, and the port refuses a fresh connection.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::client::{ErrorKind, Sample};

/// Did this request get anything back from the server? A status line, an
/// error body or a streamed chunk all mean the server was up to answer it.
pub fn answered(s: &Sample) -> bool {
    match &s.error {
        None => true,
        Some(ErrorKind::Http(_) | ErrorKind::StreamError | ErrorKind::Malformed) => true,
        Some(_) => !s.chunks.is_empty(),
    }
}

/// Do the level's failures end in refusals or cut streams? Looks at the
/// requests that finished last: when the server dies, the ones in flight
/// are cut and every later one is refused. A level that ends in timeouts
/// or HTTP errors had a live (if unwell) server at its end.
pub fn ends_in_disconnects(samples: &[Sample]) -> bool {
    let last = samples.iter().max_by_key(|s| s.done);
    matches!(
        last.and_then(|s| s.error.as_ref()),
        Some(ErrorKind::Connect | ErrorKind::Cut)
    )
}

/// `host:port` of an `http://` base URL.
fn addrs(base_url: &str) -> Vec<SocketAddr> {
    let rest = base_url.strip_prefix("http://").unwrap_or(base_url);
    let hostport = rest.split('/').next().unwrap_or(rest);
    let with_port = if hostport.starts_with('[') {
        // [v6]:port or [v6]
        if hostport.contains("]:") {
            hostport.to_string()
        } else {
            format!("{hostport}:80")
        }
    } else if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:80")
    };
    with_port
        .to_socket_addrs()
        .map(|a| a.collect())
        .unwrap_or_default()
}

/// Does the server's port refuse connections? Tried a few times a moment
/// apart: a dying process (writing a core dump) may still hold its
/// listening socket for a while, and a live server never refuses.
pub fn port_refuses(base_url: &str) -> bool {
    let addrs = addrs(base_url);
    if addrs.is_empty() {
        return false;
    }
    for attempt in 0..4 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(150));
        }
        for a in &addrs {
            match TcpStream::connect_timeout(a, Duration::from_secs(1)) {
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => return true,
                _ => {}
            }
        }
    }
    false
}

/// Why we think the server died during this level, if we do: it had
/// answered (this run, before or during the level), the level's failures
/// end in refusals or cut streams, and the port now refuses connections.
/// `gave_up` is the level's own verdict (refusals in a row).
pub fn server_died(
    base_url: &str,
    samples: &[Sample],
    answered_before: bool,
    gave_up: bool,
) -> Option<String> {
    let answered = answered_before || samples.iter().any(answered);
    if !answered {
        return None;
    }
    if gave_up || (ends_in_disconnects(samples) && port_refuses(base_url)) {
        return Some(format!(
            "the server died mid-level: its requests ended in cut streams or refused \
             connections and {} now refuses connections",
            base_url
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn sample(err: Option<ErrorKind>, done_after_ms: u64) -> Sample {
        let t0 = Instant::now();
        let mut s = Sample::new(0, t0, t0);
        s.error = err;
        s.done = t0 + Duration::from_millis(done_after_ms);
        s
    }

    #[test]
    fn failures_ending_in_refusals_or_cuts_count_as_disconnects() {
        let ok = sample(None, 1);
        let cut = sample(Some(ErrorKind::Cut), 2);
        let refused = sample(Some(ErrorKind::Connect), 3);
        let http = sample(Some(ErrorKind::Http(500)), 4);
        assert!(ends_in_disconnects(&[ok.clone(), cut.clone()]));
        assert!(ends_in_disconnects(&[
            cut.clone(),
            refused.clone(),
            ok.clone()
        ]));
        assert!(!ends_in_disconnects(&[cut.clone(), http.clone()]));
        assert!(!ends_in_disconnects(std::slice::from_ref(&ok)));
        assert!(!ends_in_disconnects(&[]));
        assert!(answered(&ok) && answered(&http) && !answered(&cut) && !answered(&refused));
    }

    #[test]
    fn a_closed_port_refuses_and_an_open_one_does_not() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}");
        assert!(!port_refuses(&url));
        drop(l);
        assert!(port_refuses(&format!("{url}/")));
    }
}
