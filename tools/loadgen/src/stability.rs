//! `--until-stable`: is a level's steady-state output throughput known to
//! within PCT percent yet? A pure module so the method can be tested.
//!
//! Method: non-overlapping batch means (Law & Kelton, "Simulation Modeling
//! and Analysis", ch. 9, output analysis of a single system: the method of
//! batch means). The n completed requests of the steady state, in
//! completion order, form a fixed number of batches, `BATCHES`, whose size
//! grows with n (batch j holds requests j n / BATCHES up to (j + 1) n /
//! BATCHES, so every request counts). Batch j's output tokens z_j came in
//! its time y_j, from the previous batch's last completion (the steady
//! state's start for the first) to its own last one. The throughput is
//! the ratio of the sums, R = sum z / sum y (what `steady` reports, not a
//! mean of per-batch rates, which short batches would inflate), and its
//! 95% interval the ratio estimator's by the delta method (Law & Kelton,
//! same chapter): R +- t(0.975, BATCHES - 1) sqrt(sum (z_j - R y_j)^2 /
//! (BATCHES (BATCHES - 1))) / mean y. The level is stable when that
//! half-width is at most PCT percent of R. A fixed 10 batches follows
//! Schmeiser (1982, "Batch size effects in the analysis of simulation
//! output", Operations Research 30(3)), as Law & Kelton quote him: 10 to
//! 30 batches, few enough that each is long and the batch means nearly
//! independent. Warm-up and the closed-loop ramp are excluded as for
//! `steady` (the window opens when in-flight first reaches 0.95 x
//! concurrency).

use std::time::Instant;

use crate::client::Sample;

/// Batches the steady-state requests are cut into.
pub const BATCHES: usize = 10;

/// Student t quantile t(0.975, 9): the two-sided 95% point for 10 batches.
const T_975_9: f64 = 2.262_157;

/// A confidence interval of the batch means.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Steady-state throughput, the interval's centre (output tokens/s).
    pub mean: f64,
    /// Half-width in percent of the mean.
    pub half_width_pct: f64,
    pub batch_size: u64,
    /// Completed steady-state requests the batches used.
    pub requests: u64,
}

/// The interval over completions `(seconds since the steady state began,
/// output tokens)` in completion order; None with fewer than one request
/// per batch, or when a batch took no time (completions that coincide,
/// as a lock-step closed loop's do, until batches span more than a round).
pub fn batch_means(done: &[(f64, f64)]) -> Option<Interval> {
    let n = done.len();
    if n < BATCHES {
        return None;
    }
    let (mut z, mut y) = ([0.0f64; BATCHES], [0.0f64; BATCHES]);
    let mut prev_end = 0.0;
    for j in 0..BATCHES {
        let batch = &done[j * n / BATCHES..(j + 1) * n / BATCHES];
        let end = batch[batch.len() - 1].0;
        y[j] = end - prev_end;
        if y[j] <= 0.0 {
            return None;
        }
        z[j] = batch.iter().map(|d| d.1).sum::<f64>();
        prev_end = end;
    }
    let k = BATCHES as f64;
    let ratio = z.iter().sum::<f64>() / y.iter().sum::<f64>();
    let y_mean = y.iter().sum::<f64>() / k;
    let ss: f64 = z.iter().zip(&y).map(|(z, y)| (z - ratio * y).powi(2)).sum();
    let hw = T_975_9 * (ss / (k * (k - 1.0))).sqrt() / y_mean;
    (ratio > 0.0).then(|| Interval {
        mean: ratio,
        half_width_pct: 100.0 * hw / ratio,
        batch_size: (n / BATCHES) as u64,
        requests: n as u64,
    })
}

/// Watches a level's samples as they arrive.
pub struct Tracker {
    pct: f64,
    min_requests: u64,
    /// Completed requests of the measurement, steady or not.
    completed: u64,
    start: Option<Instant>,
    /// Steady-state completions: (seconds after `start`, output tokens).
    done: Vec<(f64, f64)>,
    /// When (seconds after `start`) the interval met the target.
    stable_at: Option<f64>,
}

impl Tracker {
    pub fn new(pct: f64, min_requests: u64) -> Tracker {
        Tracker {
            pct,
            min_requests,
            completed: 0,
            start: None,
            done: Vec::new(),
            stable_at: None,
        }
    }

    /// Take a finished request; `from`: when the steady state began (None
    /// while ramping up). True once the interval is within the target.
    pub fn add(&mut self, s: &Sample, from: Option<Instant>) -> bool {
        if s.error.is_some() {
            return self.stable_at.is_some();
        }
        self.completed += 1;
        let Some(from) = from.filter(|f| s.done >= *f) else {
            return self.stable_at.is_some();
        };
        let start = *self.start.get_or_insert(from);
        let at = s.done.saturating_duration_since(start).as_secs_f64();
        let tokens = s
            .usage
            .and_then(|u| u.completion_tokens)
            .unwrap_or(s.chunks.len() as u64);
        // Completions reach the collector nearly in order; keep them sorted.
        // Those after the stable point (the drain) are kept out; those
        // stamped before it but collected after still count.
        let pos = self.done.partition_point(|d| d.0 <= at);
        if self.stable_at.is_none_or(|t| at <= t) {
            self.done.insert(pos, (at, tokens as f64));
        }
        if self.stable_at.is_some()
            || self.completed < self.min_requests
            || !self.done.len().is_multiple_of(BATCHES)
        {
            return self.stable_at.is_some();
        }
        if batch_means(&self.done).is_some_and(|iv| iv.half_width_pct <= self.pct) {
            self.stable_at = Some(start.elapsed().as_secs_f64());
        }
        self.stable_at.is_some()
    }

    /// The interval over the steady state up to the stable point (or all
    /// of it when the target was not met).
    pub fn interval(&self) -> Option<Interval> {
        batch_means(&self.done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evenly_spaced_completions_have_no_spread() {
        // One 10-token request every 0.1 s: 100 tok/s in every batch.
        let done: Vec<(f64, f64)> = (1..=40).map(|i| (0.1 * i as f64, 10.0)).collect();
        let iv = batch_means(&done).unwrap();
        assert!((iv.mean - 100.0).abs() < 1e-9, "{iv:?}");
        assert!(iv.half_width_pct < 1e-6, "{iv:?}");
        assert_eq!((iv.batch_size, iv.requests), (4, 40));
        // 45 requests: batches of 4 or 5, every request counted.
        let done: Vec<(f64, f64)> = (1..=45).map(|i| (0.1 * i as f64, 10.0)).collect();
        let iv = batch_means(&done).unwrap();
        assert!((iv.mean - 100.0).abs() < 1e-9, "{iv:?}");
        assert_eq!((iv.batch_size, iv.requests), (4, 45));
    }

    #[test]
    fn half_width_matches_the_ratio_interval_by_hand() {
        // Ten one-request batches alternating 1 s and 2 s apart, 10 tokens
        // each: R = 100 / 15; residuals z - R y = +-10/3, so the half-width
        // is t sqrt(10 (10/3)^2 / 90) / 1.5.
        let mut t = 0.0;
        let done: Vec<(f64, f64)> = (0..10)
            .map(|i| {
                t += if i % 2 == 0 { 1.0 } else { 2.0 };
                (t, 10.0)
            })
            .collect();
        let iv = batch_means(&done).unwrap();
        let r = 100.0 / 15.0;
        let hw = 2.262157 * (10.0 * (10.0f64 / 3.0).powi(2) / 90.0).sqrt() / 1.5;
        assert!((iv.mean - r).abs() < 1e-9, "{iv:?}");
        assert!((iv.half_width_pct - 100.0 * hw / r).abs() < 1e-6, "{iv:?}");
    }

    #[test]
    fn the_centre_is_tokens_over_time_not_a_mean_of_rates() {
        // One fast batch among slow ones: a mean of per-batch rates would
        // be dominated by it; the ratio stays tokens / seconds.
        let mut done: Vec<(f64, f64)> = (1..=9).map(|i| (i as f64, 10.0)).collect();
        done.push((9.001, 10.0));
        let iv = batch_means(&done).unwrap();
        assert!((iv.mean - 100.0 / 9.001).abs() < 1e-9, "{iv:?}");
    }

    #[test]
    fn too_few_or_coinciding_completions_give_no_interval() {
        assert_eq!(batch_means(&[(1.0, 1.0); 9]), None);
        // Requests finishing in pairs at one instant: in batches of one,
        // the second of a pair takes no time.
        let pairs: Vec<(f64, f64)> = (0..10).map(|i| ((i / 2 + 1) as f64, 1.0)).collect();
        assert_eq!(batch_means(&pairs), None);
    }
}
