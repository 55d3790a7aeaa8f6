//! From a level's scrapes to its `server_metrics` block: each gauge's mean
//! and peak over the steady window (else over the scrapes taken while the
//! level ran), each counter's reset-aware increase from the
//! level's first scrape to its last (every event the level caused, drain
//! included, as the speculative counters are read), and where each came
//! from. A figure no scrape carried is absent.

use std::time::Instant;

use sweepkit::records::{CounterFigure, GaugeFigure, MetricsWindow, ServerMetrics};

use super::catalog::{Figure, Snapshot, FIGURES};
use crate::stats::round3;

/// The counter's increase over consecutive readings, Prometheus's
/// `increase()` without extrapolation: a drop is a reset, and the value
/// after it is all new. Returns (increase, resets).
pub fn increase(xs: &[f64]) -> (f64, u64) {
    let (mut inc, mut resets) = (0.0, 0);
    for w in xs.windows(2) {
        if w[1] >= w[0] {
            inc += w[1] - w[0];
        } else {
            inc += w[1];
            resets += 1;
        }
    }
    (inc, resets)
}

/// Mean and peak of `xs` (not empty).
pub fn gauge(xs: &[f64], source: &str) -> GaugeFigure {
    let peak = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    GaugeFigure {
        mean: round3(xs.iter().sum::<f64>() / xs.len() as f64),
        peak: round3(peak),
        samples: xs.len() as u64,
        source: source.to_string(),
    }
}

/// The scrapes gauges are averaged over: those in the steady `window`
/// when it holds any; else those between the level's first and last
/// (which are taken before its first request and after its last, an idle
/// server both times); else none, and the gauges are absent.
fn gauge_scrapes(
    snaps: &[Snapshot],
    window: Option<(Instant, Instant)>,
) -> (Vec<&Snapshot>, MetricsWindow) {
    if let Some((open, close)) = window {
        let inside: Vec<&Snapshot> = snaps
            .iter()
            .filter(|s| s.at >= open && s.at <= close)
            .collect();
        if !inside.is_empty() {
            return (inside, MetricsWindow::Steady);
        }
    }
    let inner = match snaps.len() {
        0..=2 => Vec::new(),
        n => snaps[1..n - 1].iter().collect(),
    };
    (inner, MetricsWindow::Level)
}

/// The level's block, or None when no scrape carried any figure.
pub fn server_metrics(
    snaps: &[Snapshot],
    errors: u64,
    interval_s: f64,
    window: Option<(Instant, Instant)>,
) -> Option<ServerMetrics> {
    if !snaps.iter().any(Snapshot::any) {
        return None;
    }
    let (gsnaps, gauge_window) = gauge_scrapes(snaps, window);
    let mut m = ServerMetrics {
        scrapes: snaps.len() as u64,
        scrape_errors: errors,
        interval_s,
        gauge_window,
        ..ServerMetrics::default()
    };
    let all: Vec<&Snapshot> = snaps.iter().collect();
    for f in FIGURES {
        let over = if f.is_counter() { &all } else { &gsnaps };
        let Some((xs, source)) = read(over, f) else {
            continue;
        };
        if f.is_counter() {
            let (inc, resets) = increase(&xs);
            *counter_slot(&mut m, f) = Some(CounterFigure {
                increase: round3(inc),
                resets,
                source: source.to_string(),
            });
        } else {
            *gauge_slot(&mut m, f) = Some(gauge(&xs, source));
        }
    }
    Some(m)
}

/// Figure `f`'s values in the scrapes that had it, and the metric read;
/// None when none had it.
fn read(snaps: &[&Snapshot], f: Figure) -> Option<(Vec<f64>, &'static str)> {
    let source = snaps.iter().find_map(|s| s.get(f))?.source;
    Some((
        snaps.iter().filter_map(|s| s.get(f)).map(|v| v.v).collect(),
        source,
    ))
}

fn gauge_slot(m: &mut ServerMetrics, f: Figure) -> &mut Option<GaugeFigure> {
    match f {
        Figure::KvUsage => &mut m.kv_cache_usage_ratio,
        Figure::Running => &mut m.running_requests,
        Figure::Waiting => &mut m.waiting_requests,
        Figure::PrefixHitRate => &mut m.prefix_cache_hit_rate,
        _ => &mut m.spec_accept_length,
    }
}

fn counter_slot(m: &mut ServerMetrics, f: Figure) -> &mut Option<CounterFigure> {
    match f {
        Figure::Preemptions => &mut m.preemptions,
        Figure::PrefixQueried => &mut m.prefix_cache_queried_tokens,
        Figure::PrefixHit => &mut m.prefix_cache_hit_tokens,
        Figure::SpecDrafts => &mut m.spec_drafts,
        Figure::SpecDraftTokens => &mut m.spec_draft_tokens,
        _ => &mut m.spec_accepted_tokens,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_counter_that_restarts_still_counts_its_increase() {
        assert_eq!(increase(&[10.0, 15.0, 15.0, 20.0]), (10.0, 0));
        // Restarted between the 2nd and 3rd scrape: 5 before, 3 after.
        assert_eq!(increase(&[10.0, 15.0, 3.0]), (8.0, 1));
        assert_eq!(increase(&[7.0]), (0.0, 0));
    }

    fn snap(t0: Instant, s: u64, text: &str) -> Snapshot {
        Snapshot::parse(text, t0 + Duration::from_secs(s))
    }

    #[test]
    fn gauges_over_the_steady_window_counters_over_the_level() {
        let t0 = Instant::now();
        let snaps = vec![
            snap(
                t0,
                0,
                "vllm:kv_cache_usage_perc 0.1\nvllm:num_preemptions_total 4\n",
            ),
            snap(
                t0,
                1,
                "vllm:kv_cache_usage_perc 0.9\nvllm:num_preemptions_total 6\n",
            ),
            snap(
                t0,
                2,
                "vllm:kv_cache_usage_perc 0.99\nvllm:num_preemptions_total 9\n",
            ),
            snap(
                t0,
                3,
                "vllm:kv_cache_usage_perc 0.2\nvllm:num_preemptions_total 10\n",
            ),
        ];
        let ms = |m| t0 + Duration::from_millis(m);
        let m = server_metrics(&snaps, 1, 1.0, Some((ms(1500), ms(2500)))).unwrap();
        assert_eq!(m.gauge_window, MetricsWindow::Steady);
        let kv = m.kv_cache_usage_ratio.unwrap();
        assert_eq!((kv.mean, kv.peak, kv.samples), (0.99, 0.99, 1));
        assert_eq!(kv.source, "vllm:kv_cache_usage_perc");
        let p = m.preemptions.unwrap();
        assert_eq!((p.increase, p.resets), (6.0, 0));
        assert_eq!((m.scrapes, m.scrape_errors), (4, 1));
        // Never published: absent, not zero.
        assert_eq!(m.waiting_requests, None);
        // No scrape in the steady window: those between the first and
        // the last (both taken with no request in flight).
        let m = server_metrics(&snaps, 0, 1.0, Some((ms(300), ms(600)))).unwrap();
        assert_eq!(m.gauge_window, MetricsWindow::Level);
        let kv = m.kv_cache_usage_ratio.unwrap();
        assert_eq!((kv.mean, kv.peak, kv.samples), (0.945, 0.99, 2));
        // A level shorter than the interval: its counters, no gauges.
        let m = server_metrics(&[snaps[0].clone(), snaps[3].clone()], 0, 1.0, None).unwrap();
        assert_eq!(m.kv_cache_usage_ratio, None);
        assert_eq!(m.preemptions.unwrap().increase, 6.0);
        assert_eq!(server_metrics(&[snap(t0, 0, "x 1\n")], 0, 1.0, None), None);
    }
}
