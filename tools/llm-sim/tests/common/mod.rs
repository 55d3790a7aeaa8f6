//! Helpers for llm-sim's integration tests: JSON requests, SSE streams read
//! with arrival times, and a bounded closed-loop load driver.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
#[allow(unused_imports)] // not every test binary uses both
pub use testkit::flags::{eagle, eagle_with};
pub use testkit::Sim;

/// Flags that skip the load, warm-up and health-probe delays.
pub const FAST: [&str; 6] = [
    "--load-time",
    "0s",
    "--warmup-time",
    "0s",
    "--health-probe-time",
    "0s",
];

/// Start a ready llm-sim with FAST plus `args`.
pub fn sim(args: &[&str]) -> Sim {
    let mut all: Vec<&str> = FAST.to_vec();
    all.extend_from_slice(args);
    Sim::start_ready(&all)
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(5))
        .timeout_read(Duration::from_secs(20))
        .build()
}

/// POST `body` as JSON; (status, x-simulated header, body text).
pub fn post(port: u16, path: &str, body: &Value) -> (u16, Option<String>, String) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let r = agent()
        .post(&url)
        .set("content-type", "application/json")
        .send_string(&body.to_string());
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {path}: {e}"),
    };
    let status = resp.status();
    let sim = resp.header("x-simulated").map(str::to_string);
    (status, sim, resp.into_string().unwrap_or_default())
}

/// POST and parse the JSON answer.
pub fn post_json(port: u16, path: &str, body: &Value) -> (u16, Value) {
    let (status, _, text) = post(port, path, body);
    let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (status, v)
}

/// One SSE `data:` line and when it arrived (since the request was sent).
#[derive(Debug, Clone)]
pub struct Event {
    pub at: Duration,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// A streamed answer: every line as read, the data events, and whether the
/// body ended cleanly (false when the connection was cut).
#[derive(Debug)]
pub struct Streamed {
    pub status: u16,
    pub lines: Vec<String>,
    pub events: Vec<Event>,
    pub clean_end: bool,
}

impl Streamed {
    /// Text of every content chunk, concatenated.
    pub fn text(&self) -> String {
        self.events
            .iter()
            .filter_map(Event::json)
            .filter_map(|v| {
                let c = &v["choices"][0];
                c["text"]
                    .as_str()
                    .or_else(|| c["delta"]["content"].as_str())
                    .map(str::to_string)
            })
            .collect()
    }

    /// The event carrying `usage`, if any.
    pub fn usage_event(&self) -> Option<Value> {
        self.events
            .iter()
            .filter_map(Event::json)
            .find(|v| v["usage"].is_object())
    }

    pub fn done(&self) -> bool {
        self.events.last().is_some_and(|e| e.data == "[DONE]")
    }
}

/// Send a streaming request and read the whole SSE body.
pub fn stream(port: u16, path: &str, body: &Value) -> Streamed {
    let url = format!("http://127.0.0.1:{port}{path}");
    let t0 = Instant::now();
    let resp = match agent()
        .post(&url)
        .set("content-type", "application/json")
        .send_string(&body.to_string())
    {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("POST {path}: {e}"),
    };
    let status = resp.status();
    let mut reader = BufReader::new(resp.into_reader());
    let (mut lines, mut events) = (Vec::new(), Vec::new());
    let clean_end = loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) => break true,
            Ok(_) => {
                let line = line.trim_end_matches('\n').to_string();
                if let Some(d) = line.strip_prefix("data: ") {
                    events.push(Event {
                        at: t0.elapsed(),
                        data: d.to_string(),
                    });
                }
                lines.push(line);
            }
            Err(_) => break false,
        }
    };
    Streamed {
        status,
        lines,
        events,
        clean_end,
    }
}

/// A completion request body.
pub fn completion(max_tokens: u64, stream: bool) -> Value {
    serde_json::json!({
        "model": "sim", "prompt": "one two three four five six seven eight",
        "max_tokens": max_tokens, "ignore_eos": true, "temperature": 0,
        "stream": stream, "stream_options": {"include_usage": true},
    })
}

/// Run `requests` streamed completions with `concurrency` client threads;
/// returns output tokens per second of wall time (from usage).
pub fn throughput(port: u16, concurrency: usize, requests: usize, max_tokens: u64) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let t0 = Instant::now();
    let deadline = t0 + Duration::from_secs(60);
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let next = next.clone();
            std::thread::spawn(move || {
                let mut tokens = 0u64;
                while next.fetch_add(1, Ordering::Relaxed) < requests && Instant::now() < deadline {
                    let s = stream(port, "/v1/completions", &completion(max_tokens, true));
                    let u = s.usage_event().expect("usage chunk");
                    tokens += u["usage"]["completion_tokens"].as_u64().unwrap();
                }
                tokens
            })
        })
        .collect();
    let tokens: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
    tokens as f64 / t0.elapsed().as_secs_f64()
}

/// Wait (bounded) for the child to exit; its exit code.
pub fn wait_exit(sim: &mut Sim, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(st) = sim.child.try_wait().unwrap() {
            return Some(st.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// GET or POST (with a JSON body) with an optional `Authorization: Bearer`
/// key; (status, body text).
pub fn call(port: u16, path: &str, body: Option<&Value>, key: Option<&str>) -> (u16, String) {
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut req = match body {
        Some(_) => agent().post(&url).set("content-type", "application/json"),
        None => agent().get(&url),
    };
    if let Some(k) = key {
        req = req.set("authorization", &format!("Bearer {k}"));
    }
    let r = match body {
        Some(b) => req.send_string(&b.to_string()),
        None => req.call(),
    };
    let resp = match r {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{path}: {e}"),
    };
    (resp.status(), resp.into_string().unwrap_or_default())
}

/// Run llm-sim on a free port with `args` until it exits (a start-up that
/// must fail).
pub fn run_sim(args: &[&str]) -> testkit::Run {
    let mut a = vec!["--port", "0"];
    a.extend_from_slice(args);
    testkit::run(testkit::cmd("llm-sim", &a), "")
}

/// Send `sig` (`-TERM`, `-STOP`, ...) to process `pid`.
pub fn signal(pid: u32, sig: &str) {
    let st = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

/// Poll until `state` says "200" (at most 20 s, every `every`): `state`
/// asks the server once and names its answer, given the names seen so far;
/// returns them, each run of one name once, starting at "refused".
pub fn health_phases(
    every: Duration,
    mut state: impl FnMut(&[&'static str]) -> &'static str,
) -> Vec<&'static str> {
    let mut seen = vec!["refused"];
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(20) {
        let now = state(&seen);
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        if now == "200" {
            break;
        }
        std::thread::sleep(every);
    }
    seen
}

/// The value of the first line of a `/metrics` page that starts with
/// `name` (end it with `{` for a labelled series).
#[track_caller]
pub fn metric<T: std::str::FromStr>(page: &str, name: &str) -> T
where
    T::Err: std::fmt::Debug,
{
    let line = page
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("no {name} in:\n{page}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}
