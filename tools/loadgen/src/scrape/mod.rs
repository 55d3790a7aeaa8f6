//! What the server and its GPUs measured during each level, sampled off the
//! request path: the server's `/metrics` on a thread and connection of its
//! own (catalog.rs names what is read, reduce.rs makes the record's
//! block), GPU telemetry from a DCGM exporter or nvidia-smi (gpu.rs), and
//! the capacity the server started with (limits.rs), read once at setup.
//!
//! Cost: one GET per `--scrape-interval` (default 1 s) on one kept-alive
//! connection, parsed in one pass into a dozen numbers; the text is
//! dropped at once. `bench/scrape.sh` measures the client CPU and the TTFT
//! with and without it.

pub mod catalog;
pub mod gpu;
pub mod gpu_parse;
pub mod limits;
pub mod poll;
pub mod reduce;
pub mod sources;

use std::time::{Duration, Instant};

use sweepkit::records::{ServerKind, ServerMetrics};

use crate::speculative::SpecCounters;
use catalog::Snapshot;
use poll::Poller;

/// A URL read with GET: the server's `/metrics`, a DCGM exporter's.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub url: String,
    auth: Option<String>,
    timeout: Duration,
}

/// Why a GET gave no text.
#[derive(Debug, Clone, PartialEq)]
pub enum Miss {
    /// An HTTP status other than 200, with the start of its body.
    Status(u16, String),
    /// No answer: refused, timed out, reset.
    Transport(String),
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Status(code, _) => write!(f, "HTTP {code}"),
            Miss::Transport(t) => f.write_str(t),
        }
    }
}

impl Endpoint {
    pub fn new(url: &str, auth: Option<String>, interval: Duration) -> Endpoint {
        Endpoint {
            url: url.to_string(),
            auth,
            // Long enough for a loaded server, short enough that a stuck
            // scrape cannot hold a level's end for long.
            timeout: interval.clamp(Duration::from_secs(2), Duration::from_secs(10)),
        }
    }

    /// A client of its own: one connection, kept alive between scrapes,
    /// never one the load uses.
    pub fn agent(&self) -> ureq::Agent {
        ureq::AgentBuilder::new()
            .timeout(self.timeout)
            .max_idle_connections(1)
            .try_proxy_from_env(false)
            .build()
    }

    pub fn get(&self, agent: &ureq::Agent) -> Result<String, Miss> {
        let mut r = agent.get(&self.url);
        if let Some(a) = &self.auth {
            r = r.set("Authorization", a);
        }
        match r.call() {
            Ok(resp) => resp
                .into_string()
                .map_err(|e| Miss::Transport(e.to_string())),
            Err(ureq::Error::Status(code, resp)) => {
                let body = resp.into_string().unwrap_or_default();
                Err(Miss::Status(code, body.chars().take(200).collect()))
            }
            Err(ureq::Error::Transport(t)) => Err(Miss::Transport(t.to_string())),
        }
    }
}

/// The one line said when the server has no `/metrics` to read, naming
/// the flag that turns it on: SGLang `--enable-metrics`
/// (`server_args.py`), llama.cpp `--metrics` (its `/metrics` answers
/// "Start it with `--metrics`" otherwise); vLLM always serves it.
pub fn absent_line(kind: Option<&ServerKind>, sglang_off: bool, miss: &Miss) -> String {
    let why = format!("GET /metrics: {miss}");
    let body_says_metrics_flag = matches!(miss, Miss::Status(_, b) if b.contains("--metrics"));
    let fix = match kind {
        _ if sglang_off || kind == Some(&ServerKind::Sglang) => {
            "SGLang serves it only when started with --enable-metrics"
        }
        Some(ServerKind::LlamaCpp) => "llama-server serves it only when started with --metrics",
        _ if body_says_metrics_flag => "llama-server serves it only when started with --metrics",
        Some(ServerKind::Vllm) => "vLLM always serves it: check that --url is the server itself",
        _ => "vLLM always serves it, SGLang with --enable-metrics, llama-server with --metrics",
    };
    format!(
        "no server metrics in the records ({why}): {fix}; KV cache, preemptions and \
         queue are then inferred from client-side waits"
    )
}

/// One level's sampling: the server's `/metrics` and, when asked, a DCGM
/// exporter, each on its own thread; nvidia-smi streams for the whole run.
pub struct LevelScrape {
    server: Option<Poller<Snapshot>>,
    dcgm: Option<Poller<gpu_parse::GpuSample>>,
    interval: Duration,
    started: Instant,
}

/// What a level's sampling saw.
pub struct Seen {
    pub server_metrics: Option<ServerMetrics>,
    /// The speculative counters at the level's first and last scrape.
    pub spec_before: Option<SpecCounters>,
    pub spec_after: Option<SpecCounters>,
    pub gpu: Vec<gpu_parse::GpuSample>,
    /// The level's span: the first scrape's start to the last's.
    pub span: (Instant, Instant),
}

impl LevelScrape {
    /// Take the start samples and start the samplers.
    pub fn start(
        server: Option<&Endpoint>,
        dcgm: Option<&Endpoint>,
        interval: Duration,
    ) -> LevelScrape {
        let started = Instant::now();
        let server = server.map(|ep| {
            let (ep, agent) = (ep.clone(), ep.agent());
            Poller::start(
                move || {
                    let text = ep.get(&agent).ok()?;
                    Some(Snapshot::parse(&text, Instant::now()))
                },
                interval,
            )
        });
        let dcgm = dcgm.map(|ep| {
            let (ep, agent) = (ep.clone(), ep.agent());
            Poller::start(
                move || Some(gpu_parse::dcgm(&ep.get(&agent).ok()?, Instant::now())),
                interval,
            )
        });
        LevelScrape {
            server,
            dcgm,
            interval,
            started,
        }
    }

    /// Take the end samples. `window`: the level's steady window.
    pub fn finish(self, window: Option<(Instant, Instant)>, stream: Option<&gpu::Stream>) -> Seen {
        let (metrics, before, after) = match self.server.map(Poller::finish) {
            Some(got) => {
                let m = reduce::server_metrics(
                    &got.samples,
                    got.errors,
                    self.interval.as_secs_f64(),
                    window,
                );
                let first = got.samples.first().map(|s| s.spec);
                let last = got.samples.last().map(|s| s.spec);
                (m, first, last)
            }
            None => (None, None, None),
        };
        let mut gpu = self.dcgm.map(|p| p.finish().samples).unwrap_or_default();
        let ended = Instant::now();
        if let Some(s) = stream {
            gpu.extend(s.take(self.started, ended));
        }
        Seen {
            server_metrics: metrics,
            spec_before: before,
            spec_after: after,
            gpu,
            span: (self.started, ended),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_absent_line_names_the_flag() {
        let nf = Miss::Status(404, "Not Found".into());
        let sg = absent_line(Some(&ServerKind::Sglang), false, &nf);
        testkit::assert_contains(&sg, "--enable-metrics");
        testkit::assert_contains(&sg, "HTTP 404");
        let llama = Miss::Status(
            501,
            "This server does not support metrics endpoint. Start it with `--metrics`".into(),
        );
        testkit::assert_contains(&absent_line(None, false, &llama), "started with --metrics");
        let sim = absent_line(Some(&ServerKind::LlmSim), true, &nf);
        testkit::assert_contains(&sim, "--enable-metrics");
        let v = absent_line(Some(&ServerKind::Vllm), false, &Miss::Transport("x".into()));
        testkit::assert_contains(&v, "vLLM always serves it");
    }
}
