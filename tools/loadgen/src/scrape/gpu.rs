//! `--gpu-metrics`: where GPU telemetry comes from, the nvidia-smi stream,
//! and a level's `gpu` block.
//!
//! A DCGM exporter URL is read like the server's `/metrics`, on its own
//! thread each level. nvidia-smi runs once for the whole run in its own
//! sampling loop (`-lms`), locally or under `--gpu-metrics-cmd` (e.g.
//! `ssh root@gpu1`: loadgen never links libssh2, so a remote GPU is
//! reached through the user's own ssh), and each level takes the samples
//! of its span. With no GPU (nvidia-smi missing, no driver, an exporter
//! that does not answer) the block is absent and loadgen says so once.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sweepkit::records::{EnergyMethod, GpuSource, GpuTelemetry};

use super::gpu_parse::{GpuSample, SmiGrouper, SMI_QUERY};
use super::poll::MAX_SAMPLES;
use super::reduce::{gauge, increase};
use crate::stats::round3;

/// nvidia-smi sampling for the whole run.
pub struct Stream {
    child: Child,
    samples: Arc<Mutex<VecDeque<GpuSample>>>,
    /// The command as given (for the record's `gpu.origin`).
    pub origin: String,
}

impl Stream {
    /// Start `PREFIX nvidia-smi --query-gpu=... -lms N`; Err with the one
    /// line to say when it gives no sample within a few seconds.
    pub fn start(prefix: Option<&str>, every: Duration) -> Result<Stream, String> {
        let ms = every.as_millis().max(100);
        let smi =
            format!("nvidia-smi --query-gpu={SMI_QUERY} --format=csv,noheader,nounits -lms {ms}");
        let (mut cmd, origin) = match prefix {
            Some(p) => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(format!("exec {p} {smi}"));
                (c, format!("{p} {smi}"))
            }
            None => {
                let mut c = Command::new("nvidia-smi");
                c.args(smi.split_whitespace().skip(1));
                (c, smi.clone())
            }
        };
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{origin}: {e}"))?;
        let samples = Arc::new(Mutex::new(VecDeque::new()));
        let out = child.stdout.take().ok_or("no stdout")?;
        let into = samples.clone();
        std::thread::spawn(move || read_stream(out, &into));
        let deadline = Instant::now() + Duration::from_secs(5).max(every * 3);
        while Instant::now() < deadline {
            if !samples.lock().unwrap_or_else(|e| e.into_inner()).is_empty() {
                return Ok(Stream {
                    child,
                    samples,
                    origin,
                });
            }
            if let Ok(Some(st)) = child.try_wait() {
                return Err(format!("{origin}: {}", failed_line(&mut child, st)));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!(
            "{origin}: no sample within {:?}",
            deadline - Instant::now()
        ))
    }

    /// The samples from `from` to `to`; older ones are dropped.
    pub fn take(&self, from: Instant, to: Instant) -> Vec<GpuSample> {
        let mut q = self.samples.lock().unwrap_or_else(|e| e.into_inner());
        while q.front().is_some_and(|s| s.at < from) {
            q.pop_front();
        }
        q.iter().filter(|s| s.at <= to).cloned().collect()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The first line nvidia-smi (or the command) printed on stderr or
/// stdout, with its exit status.
fn failed_line(child: &mut Child, st: std::process::ExitStatus) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    format!(
        "exited with {st}{}",
        if first.is_empty() {
            String::new()
        } else {
            format!(": {first}")
        }
    )
}

fn read_stream(out: impl Read, into: &Mutex<VecDeque<GpuSample>>) {
    let mut g = SmiGrouper::default();
    let push = |s: GpuSample| {
        let mut q = into.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= MAX_SAMPLES {
            q.pop_front();
        }
        q.push_back(s);
    };
    for line in BufReader::new(out).lines() {
        let Ok(line) = line else { break };
        if let Some(s) = g.line(&line, Instant::now()) {
            push(s);
        }
    }
    if let Some(s) = g.flush() {
        push(s);
    }
}

/// What a level's samples amount to, with the level's output to relate
/// energy to: (output tokens, output tok/s).
pub fn telemetry(
    samples: &[GpuSample],
    source: GpuSource,
    origin: &str,
    span: (Instant, Instant),
    output: (u64, f64),
) -> Option<GpuTelemetry> {
    let xs: Vec<&GpuSample> = samples
        .iter()
        .filter(|s| s.at >= span.0 && s.at <= span.1 && !s.gpus.is_empty())
        .collect();
    if xs.is_empty() {
        return None;
    }
    let names = match source {
        GpuSource::Dcgm => [
            "DCGM_FI_DEV_POWER_USAGE",
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_GPU_UTIL",
        ],
        _ => ["power.draw", "memory.used", "utilization.gpu"],
    };
    let sum = |f: fn(&super::gpu_parse::Reading) -> Option<f64>| -> Vec<(Instant, f64)> {
        xs.iter()
            .filter_map(|s| {
                let v: Vec<f64> = s.gpus.iter().filter_map(f).collect();
                (!v.is_empty()).then(|| (s.at, v.iter().sum()))
            })
            .collect()
    };
    let power = sum(|r| r.power_w);
    let mem = sum(|r| r.memory_used_mib);
    let util: Vec<f64> = xs
        .iter()
        .filter_map(|s| {
            let v: Vec<f64> = s.gpus.iter().filter_map(|r| r.util_pct).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        })
        .collect();
    let only = |v: &[(Instant, f64)]| v.iter().map(|x| x.1).collect::<Vec<f64>>();
    let power_w = (!power.is_empty()).then(|| gauge(&only(&power), names[0]));
    let (energy_j, method) = match energy_counter(&xs) {
        Some(j) => (Some(j), Some(EnergyMethod::Counter)),
        None => match integrate(&power, span) {
            Some(j) => (Some(j), Some(EnergyMethod::PowerIntegral)),
            None => (None, None),
        },
    };
    let (tokens, tok_per_s) = output;
    Some(GpuTelemetry {
        source,
        origin: origin.to_string(),
        samples: xs.len() as u64,
        gpus: xs.iter().map(|s| s.gpus.len()).max().unwrap_or(0) as u64,
        energy_j: energy_j.map(round3),
        energy_method: method,
        memory_used_mib: (!mem.is_empty()).then(|| gauge(&only(&mem), names[1])),
        utilization_pct: (!util.is_empty()).then(|| gauge(&util, names[2])),
        energy_per_output_token_j: energy_j
            .filter(|_| tokens > 0)
            .map(|j| round6(j / tokens as f64)),
        output_tok_per_s_per_w: power_w
            .as_ref()
            .filter(|p| p.mean > 0.0)
            .map(|p| round3(tok_per_s / p.mean)),
        power_w,
    })
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// DCGM's energy counter: its increase per GPU over the samples, summed,
/// in J; None unless every sample had it for every GPU.
fn energy_counter(xs: &[&GpuSample]) -> Option<f64> {
    let n = xs.first()?.gpus.len();
    if xs.len() < 2 || xs.iter().any(|s| s.gpus.len() != n) {
        return None;
    }
    let mut total = 0.0;
    for g in 0..n {
        let e: Option<Vec<f64>> = xs.iter().map(|s| s.gpus[g].energy_mj).collect();
        total += increase(&e?).0;
    }
    Some(total / 1000.0)
}

/// Power integrated over the span: trapezoids between samples, the first
/// and last held flat to the span's edges; J.
fn integrate(power: &[(Instant, f64)], span: (Instant, Instant)) -> Option<f64> {
    let (first, last) = (power.first()?, power.last()?);
    let secs = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
    let mut j = first.1 * secs(span.0, first.0) + last.1 * secs(last.0, span.1);
    for w in power.windows(2) {
        j += (w[0].1 + w[1].1) / 2.0 * secs(w[0].0, w[1].0);
    }
    Some(j)
}

#[cfg(test)]
mod tests {
    use super::super::gpu_parse::Reading;
    use super::*;

    fn at(t0: Instant, s: f64, power: f64, energy: Option<f64>) -> GpuSample {
        GpuSample {
            at: t0 + Duration::from_secs_f64(s),
            gpus: vec![Reading {
                power_w: Some(power),
                energy_mj: energy,
                memory_used_mib: Some(1000.0),
                util_pct: Some(50.0),
            }],
        }
    }

    #[test]
    fn energy_from_the_counter_else_from_power() {
        let t0 = Instant::now();
        let span = (t0, t0 + Duration::from_secs(2));
        let xs = vec![
            at(t0, 0.0, 100.0, Some(5_000.0)),
            at(t0, 2.0, 300.0, Some(405_000.0)),
        ];
        let g = telemetry(&xs, GpuSource::Dcgm, "u", span, (800, 400.0)).unwrap();
        assert_eq!(g.energy_j, Some(400.0));
        assert_eq!(g.energy_method, Some(EnergyMethod::Counter));
        assert_eq!(g.energy_per_output_token_j, Some(0.5));
        let p = g.power_w.as_ref().unwrap();
        assert_eq!((p.mean, p.peak), (200.0, 300.0));
        assert_eq!(g.output_tok_per_s_per_w, Some(2.0));
        // nvidia-smi: no counter; the trapezoid of 100 W -> 300 W over 2 s.
        let xs = vec![at(t0, 0.0, 100.0, None), at(t0, 2.0, 300.0, None)];
        let g = telemetry(&xs, GpuSource::NvidiaSmi, "nvidia-smi", span, (800, 400.0)).unwrap();
        assert_eq!(g.energy_j, Some(400.0));
        assert_eq!(g.energy_method, Some(EnergyMethod::PowerIntegral));
        assert_eq!(g.power_w.unwrap().source, "power.draw");
        assert!(telemetry(&[], GpuSource::Dcgm, "u", span, (1, 1.0)).is_none());
    }
}
