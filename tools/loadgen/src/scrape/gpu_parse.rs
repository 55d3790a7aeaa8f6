//! GPU telemetry as the tools print it, one sample per read:
//!
//! - A DCGM exporter's `/metrics` (NVIDIA/dcgm-exporter, README and
//!   `etc/default-counters.csv`): `DCGM_FI_DEV_POWER_USAGE` (W, gauge),
//!   `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ since boot, counter),
//!   `DCGM_FI_DEV_FB_USED` (MiB), `DCGM_FI_DEV_GPU_UTIL` (%), one series
//!   per GPU by its `gpu` label.
//! - `nvidia-smi --query-gpu=index,power.draw,memory.used,utilization.gpu
//!   --format=csv,noheader,nounits` (nvidia-smi(1), `--help-query-gpu`):
//!   one line per GPU, `0, 250.31, 40536, 98`; a field the board cannot
//!   report reads `[N/A]` or `[Not Supported]`; without `nounits` each
//!   value carries its unit (`250.31 W`, `40536 MiB`, `98 %`).

use std::time::Instant;

/// The query loadgen runs; [`smi_line`] reads its fields in this order.
pub const SMI_QUERY: &str = "index,power.draw,memory.used,utilization.gpu";

/// One GPU's figures at one sample (None: not reported).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Reading {
    pub power_w: Option<f64>,
    pub energy_mj: Option<f64>,
    pub memory_used_mib: Option<f64>,
    pub util_pct: Option<f64>,
}

/// Every GPU at one moment, in the source's order.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSample {
    pub at: Instant,
    pub gpus: Vec<Reading>,
}

/// A DCGM exporter's text at `at`; GPUs keyed by the `gpu` label (MIG
/// instances of one GPU add their framebuffer).
pub fn dcgm(text: &str, at: Instant) -> GpuSample {
    let mut ids: Vec<String> = Vec::new();
    let mut gpus: Vec<Reading> = Vec::new();
    for s in sweepkit::prom::samples(text) {
        let field = match s.name {
            "DCGM_FI_DEV_POWER_USAGE" => 0,
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" => 1,
            "DCGM_FI_DEV_FB_USED" => 2,
            "DCGM_FI_DEV_GPU_UTIL" => 3,
            _ => continue,
        };
        if !s.value.is_finite() {
            continue;
        }
        let id = s.label("gpu").or(s.label("UUID")).unwrap_or("0");
        let i = match ids.iter().position(|x| x == id) {
            Some(i) => i,
            None => {
                ids.push(id.to_string());
                gpus.push(Reading::default());
                gpus.len() - 1
            }
        };
        let r = &mut gpus[i];
        match field {
            0 => r.power_w = Some(s.value),
            1 => r.energy_mj = Some(s.value),
            2 => r.memory_used_mib = Some(r.memory_used_mib.unwrap_or(0.0) + s.value),
            _ => r.util_pct = Some(s.value),
        }
    }
    GpuSample { at, gpus }
}

/// One value of nvidia-smi's CSV: a number, with or without its unit;
/// None for `[N/A]`, `[Not Supported]` and the like.
fn smi_value(s: &str) -> Option<f64> {
    let s = s.trim();
    let num = s
        .strip_suffix('W')
        .or_else(|| s.strip_suffix("MiB"))
        .or_else(|| s.strip_suffix('%'))
        .unwrap_or(s);
    num.trim().parse().ok().filter(|x: &f64| x.is_finite())
}

/// One line of the [`SMI_QUERY`] output: the GPU's index and figures;
/// None for a line that is not one (a header, an error message).
pub fn smi_line(line: &str) -> Option<(u32, Reading)> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() != 4 {
        return None;
    }
    let index = f[0].trim().parse().ok()?;
    Some((
        index,
        Reading {
            power_w: smi_value(f[1]),
            energy_mj: None,
            memory_used_mib: smi_value(f[2]),
            util_pct: smi_value(f[3]),
        },
    ))
}

/// Groups `nvidia-smi -lms` lines into samples: each tick prints every GPU
/// once, so an index seen again starts the next sample.
#[derive(Debug, Default)]
pub struct SmiGrouper {
    open: Option<(Instant, Vec<u32>, Vec<Reading>)>,
}

impl SmiGrouper {
    /// Add a line read at `at`; returns the sample it closed, if any.
    pub fn line(&mut self, line: &str, at: Instant) -> Option<GpuSample> {
        let (index, r) = smi_line(line)?;
        let closed = match &self.open {
            Some((_, seen, _)) if seen.contains(&index) => self.flush(),
            _ => None,
        };
        let open = self
            .open
            .get_or_insert_with(|| (at, Vec::new(), Vec::new()));
        open.1.push(index);
        open.2.push(r);
        closed
    }

    /// The sample in progress, if any.
    pub fn flush(&mut self) -> Option<GpuSample> {
        self.open.take().map(|(at, _, gpus)| GpuSample { at, gpus })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smi_values_with_and_without_units() {
        let (i, r) = smi_line("1, 250.31, 40536, 98").unwrap();
        assert_eq!(i, 1);
        assert_eq!(r.power_w, Some(250.31));
        assert_eq!(r.memory_used_mib, Some(40536.0));
        let (_, r) = smi_line("0, 71.20 W, 1024 MiB, 3 %").unwrap();
        assert_eq!((r.power_w, r.util_pct), (Some(71.2), Some(3.0)));
        let (_, r) = smi_line("0, [N/A], 1024, [Not Supported]").unwrap();
        assert_eq!((r.power_w, r.util_pct), (None, None));
        assert_eq!(
            smi_line("index, power.draw [W], memory.used [MiB], x"),
            None
        );
        assert_eq!(
            smi_line("NVIDIA-SMI has failed because it couldn't communicate"),
            None
        );
    }

    #[test]
    fn a_repeated_index_starts_the_next_sample() {
        let t = Instant::now();
        let mut g = SmiGrouper::default();
        assert_eq!(g.line("0, 100, 10, 1", t), None);
        assert_eq!(g.line("1, 200, 20, 2", t), None);
        let s = g.line("0, 110, 10, 1", t).unwrap();
        assert_eq!(s.gpus.len(), 2);
        assert_eq!(s.gpus[1].power_w, Some(200.0));
        assert_eq!(g.flush().unwrap().gpus.len(), 1);
    }
}
