//! What a test asks of a server it started: a plain GET, its `/server_info` once
//! `/health` answers 200, whether a PID still runs, and that no shell
//! injection left a `PWNED*` file behind.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

/// `/server_info` on 127.0.0.1:`port` once `/health` is 200, polled every
/// 20 ms for `limit`; on timeout panics with `context()` (a log tail, a
/// container's state) so the failure says why.
pub fn server_info_within(port: u16, limit: Duration, context: impl Fn() -> String) -> Value {
    if !healthy_within(port, limit) {
        panic!(
            "llm-sim on {port} never healthy within {limit:?}\n{}",
            context()
        );
    }
    let (_, body) = http_get(port, "/server_info").expect("GET /server_info");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("/server_info is not JSON ({e}): {body}"))
}

/// Whether `/health` on 127.0.0.1:`port` answers 200 within `limit`
/// (polled every 20 ms).
pub fn healthy_within(port: u16, limit: Duration) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some((200, _)) = http_get(port, "/health") {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// [`server_info_within`] 20 s, no context.
pub fn server_info(port: u16) -> Value {
    server_info_within(port, Duration::from_secs(20), String::new)
}

/// Whether `pid` runs (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

/// Assert that no file named `PWNED*` is in any of `dirs`: a value that
/// ran as shell code would have made one.
#[track_caller]
pub fn assert_no_pwned<P: AsRef<Path>>(dirs: &[P]) {
    for d in dirs {
        let d = d.as_ref();
        for e in std::fs::read_dir(d).unwrap().flatten() {
            assert!(
                !e.file_name().to_string_lossy().starts_with("PWNED"),
                "a value ran as shell code in {}",
                d.display()
            );
        }
    }
}

/// A minimal blocking GET on 127.0.0.1 for tests: (status, body).
pub fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::net::TcpStream;
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let status = resp.split_whitespace().nth(1)?.parse().ok()?;
    let body = resp
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}
