//! What the run samples, settled once when loadgen connects: the server's
//! `/metrics` (tried once; a server without it is said once, with the flag
//! that turns it on), its capacity (limits.rs), and the GPU source of
//! `--gpu-metrics` (tried once; no GPU is said once: once per sweep under
//! sweep, through `sweepkit::once`). Nothing here fails
//! the run.

use std::time::Duration;

use serde_json::Value;
use sweepkit::once;
use sweepkit::records::{GpuSource, ServerInfo, ServerLimits};

use super::catalog::Snapshot;
use super::gpu::Stream;
use super::{absent_line, gpu_parse, limits, Endpoint};
use crate::server::Probe;

/// `--gpu-metrics`: a DCGM exporter's URL or nvidia-smi.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuMetrics {
    Dcgm(String),
    NvidiaSmi,
}

/// clap's parser for `--gpu-metrics`.
pub fn gpu_metrics(s: &str) -> Result<GpuMetrics, String> {
    match s {
        "nvidia-smi" => Ok(GpuMetrics::NvidiaSmi),
        u if u.starts_with("http://") => Ok(GpuMetrics::Dcgm(u.to_string())),
        _ => Err(
            "want a DCGM exporter's http:// URL (http://HOST:9400/metrics) or nvidia-smi".into(),
        ),
    }
}

/// clap's parser for `--scrape-interval`: 100 ms or more.
pub fn scrape_interval(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s).map_err(|e| e.to_string())?;
    if d < Duration::from_millis(100) {
        return Err("below 100ms: a scrape every few milliseconds would load the server".into());
    }
    Ok(d)
}

/// The run's samplers.
pub struct Sources {
    pub server: Option<Endpoint>,
    pub dcgm: Option<Endpoint>,
    pub smi: Option<Stream>,
    pub interval: Duration,
}

impl Sources {
    /// Where the level's GPU samples come from, for the record.
    pub fn gpu(&self) -> Option<(GpuSource, &str)> {
        match (&self.dcgm, &self.smi) {
            (Some(ep), _) => Some((GpuSource::Dcgm, ep.url.as_str())),
            (None, Some(s)) => Some((GpuSource::NvidiaSmi, s.origin.as_str())),
            _ => None,
        }
    }
}

/// What `connect` passes in.
pub struct Want<'a> {
    pub scrape: bool,
    pub interval: Duration,
    pub gpu: Option<&'a GpuMetrics>,
    pub gpu_cmd: Option<&'a str>,
    pub auth: Option<String>,
}

/// Try each source once; fill `server.limits`.
pub fn open(want: &Want, probe: &Probe, server: &mut ServerInfo, info: Option<&Value>) -> Sources {
    let mut text = None;
    let server_ep = if want.scrape {
        let ep = Endpoint::new(
            &format!("{}/metrics", probe.base()),
            want.auth.clone(),
            want.interval,
        );
        match ep.get(&ep.agent()) {
            Ok(t) => {
                let seen = Snapshot::parse(&t, std::time::Instant::now()).any();
                if !seen {
                    once::warning(
                        "loadgen",
                        "the server's /metrics has none of the figures loadgen reads \
                         (loadgen(1) SERVER METRICS): no server metrics in the records",
                    );
                }
                text = Some(t);
                seen.then_some(ep)
            }
            Err(miss) => {
                let off = info
                    .and_then(|i| i.get("enable_metrics"))
                    .and_then(Value::as_bool)
                    == Some(false);
                once::warning("loadgen", absent_line(server.kind.as_ref(), off, &miss));
                None
            }
        }
    } else {
        None
    };
    if want.scrape && server.limits.is_none() {
        server.limits = read_limits(probe, server, info, text.as_deref());
    }
    let (dcgm, smi) = open_gpu(want);
    Sources {
        server: server_ep,
        dcgm,
        smi,
        interval: want.interval,
    }
}

/// The server's capacity from whichever report it gives.
fn read_limits(
    probe: &Probe,
    server: &ServerInfo,
    info: Option<&Value>,
    metrics: Option<&str>,
) -> Option<ServerLimits> {
    info.and_then(limits::from_server_info)
        .or_else(|| metrics.and_then(|t| limits::from_cache_config(t, server.argv.as_deref())))
        .or_else(|| {
            probe
                .get_json("/props")
                .as_ref()
                .and_then(limits::from_props)
        })
}

/// The GPU source, tried once; said once when it gives nothing.
fn open_gpu(want: &Want) -> (Option<Endpoint>, Option<Stream>) {
    let absent = |why: String| {
        once::warning(
            "loadgen",
            format!("--gpu-metrics: no GPU telemetry ({why}); the records carry none"),
        )
    };
    match want.gpu {
        None => (None, None),
        Some(GpuMetrics::NvidiaSmi) => match Stream::start(want.gpu_cmd, want.interval) {
            Ok(s) => (None, Some(s)),
            Err(why) => {
                absent(why);
                (None, None)
            }
        },
        Some(GpuMetrics::Dcgm(url)) => {
            let ep = Endpoint::new(url, None, want.interval);
            match ep.get(&ep.agent()) {
                Ok(t)
                    if !gpu_parse::dcgm(&t, std::time::Instant::now())
                        .gpus
                        .is_empty() =>
                {
                    (Some(ep), None)
                }
                Ok(_) => {
                    absent(format!("{url} has no DCGM_FI_DEV_* figures"));
                    (None, None)
                }
                Err(m) => {
                    absent(format!("{url}: {m}"));
                    (None, None)
                }
            }
        }
    }
}
