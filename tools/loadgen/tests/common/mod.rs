//! Helpers for loadgen's integration tests: run the built binary, start
//! llm-sim, and a tiny scripted SSE server for edge cases llm-sim lacks.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::Duration;

pub use testkit::{run, words, Run, Sim};

/// The loadgen binary with `args`.
pub fn loadgen(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_loadgen"));
    c.args(args);
    c
}

/// loadgen against `url` with the words of `line` (see [`words`]).
pub fn loadgen_at(url: &str, line: &str) -> Command {
    let mut c = loadgen(&[url]);
    c.args(words(line));
    c
}

/// Run loadgen against `url` with `args` and no upstream record.
pub fn load(url: &str, args: &[&str]) -> Run {
    let mut a = vec![url];
    a.extend_from_slice(args);
    a.push("--no-upstream");
    run(loadgen(&a), "")
}

/// llm-sim, ready, with no load or warm-up delay.
pub fn sim(extra: &[&str]) -> Sim {
    let mut args = vec!["--load-time", "0s", "--warmup-time", "0s"];
    args.extend_from_slice(extra);
    Sim::start_ready(&args)
}

/// llm-sim with exact timing: the first token after `ttft`, each next one
/// `itl` later.
pub fn exact_sim(ttft: &str, itl: &str) -> Sim {
    sim(&["--exact-ttft", ttft, "--exact-itl", itl])
}

/// Run loadgen against `sim` with the words of `line`, no upstream record.
pub fn load_sim(sim: &Sim, line: &str) -> Run {
    load(&sim.base_url(), &words(line))
}

/// loadgen against `url` with the words of `line`: the run and its bench
/// records, of which there must be `n`.
#[track_caller]
pub fn benches_at(url: &str, line: &str, n: usize) -> (Run, Vec<serde_json::Value>) {
    let r = run(loadgen_at(url, line), "");
    let b = benches(&r);
    assert_eq!(b.len(), n, "{}", r.stderr());
    (r, b)
}

/// Bench records (type bench) from stdout.
pub fn benches(r: &Run) -> Vec<serde_json::Value> {
    r.json_lines()
        .into_iter()
        .filter(|v| v["type"] == "bench")
        .collect()
}

/// Every stdout line must parse as a sweepkit record (the contract).
pub fn check_contract(r: &Run) {
    for line in r.stdout().lines().filter(|l| !l.trim().is_empty()) {
        sweepkit::io::parse_record(line).unwrap_or_else(|e| panic!("not a record ({e}): {line}"));
    }
}

/// One scripted response: (delay before, bytes) pieces, then close.
pub type Script = Vec<(Duration, String)>;

/// A server on 127.0.0.1 answering every request with `script` over
/// HTTP/1.1 with `Connection: close` (body ends at close). Returns its URL.
pub fn scripted_server(script: Script) -> String {
    serve(script, false)
}

/// Like `scripted_server`, but the body is chunked with no `Connection:
/// close`, and the server closes the connection anyway after each response,
/// as llama-server does: a pooled connection is then stale.
pub fn lying_keepalive_server(script: Script) -> String {
    serve(script, true)
}

fn serve(script: Script, chunked: bool) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut s) = conn else { continue };
            let script = script.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let l = line.to_ascii_lowercase();
                    if let Some(v) = l.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                let mut body = vec![0u8; len];
                let _ = r.read_exact(&mut body);
                let head: &[u8] = if chunked {
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                } else {
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                };
                let _ = s.write_all(head);
                for (d, bytes) in script {
                    std::thread::sleep(d);
                    let piece = if chunked {
                        format!("{:x}\r\n{bytes}\r\n", bytes.len())
                    } else {
                        bytes
                    };
                    if s.write_all(piece.as_bytes()).is_err() {
                        return;
                    }
                    let _ = s.flush();
                }
                if chunked {
                    let _ = s.write_all(b"0\r\n\r\n");
                    // Close a moment later, after the client reused the
                    // connection for its next request (the race that makes
                    // the stale connection invisible to a liveness check).
                    std::thread::sleep(Duration::from_millis(30));
                }
                let _ = s.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

pub fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A counter (or gauge) of llm-sim's /metrics, summed over its series.
pub fn sim_metric(s: &Sim, name: &str) -> f64 {
    let (_, text) = testkit::http_get(s.port, "/metrics").expect("GET /metrics");
    testkit::realpeer::metric_sum(&text, name).unwrap_or_else(|| panic!("no {name} in\n{text}"))
}
