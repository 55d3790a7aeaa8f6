//! Throughput of a level: over the whole level (first send to last
//! finish) and inside the steady-state window.

use std::time::Instant;

use sweepkit::records::{Counts, Throughput};

use crate::client::Sample;
use crate::per_request::{meets, ms, Derived, Slo};
use crate::stats::round3;

/// Whole-level throughput over `el` seconds (first send to last finish).
/// `busy_ms`: request time summed; `good`: requests that met the SLO; `n`:
/// requests in all.
pub(crate) fn level_throughput(
    c: &Counts,
    el: f64,
    (busy_ms, good): (f64, u64),
    slo: Option<&Slo>,
    n: usize,
) -> Throughput {
    let mut t = rates(el, c.completed, c.output_tokens, c.input_tokens);
    t.achieved_concurrency = if el > 0.0 {
        round3(busy_ms / 1000.0 / el)
    } else {
        0.0
    };
    if slo.is_some() {
        t.goodput_req_per_s = Some(if el > 0.0 {
            round3(good as f64 / el)
        } else {
            0.0
        });
        t.slo_attainment = Some(if c.completed > 0 {
            round3(good as f64 / n as f64)
        } else {
            0.0
        });
    }
    t
}

fn rates(elapsed_s: f64, done: u64, out: u64, inp: u64) -> Throughput {
    let per = |x: f64| {
        if elapsed_s > 0.0 {
            round3(x / elapsed_s)
        } else {
            0.0
        }
    };
    Throughput {
        elapsed_s: round3(elapsed_s),
        requests_per_s: per(done as f64),
        output_tok_per_s: per(out as f64),
        total_tok_per_s: per((out + inp) as f64),
        ..Throughput::default()
    }
}

/// Throughput inside the steady-state window: requests finished in it,
/// output tokens whose chunk arrived in it, input tokens of requests sent
/// in it, and the time-average number of requests in flight.
pub(crate) fn steady(
    samples: &[Sample],
    derived: &[Option<Derived>],
    (wo, wc): (Instant, Instant),
    slo: Option<&Slo>,
) -> Option<Throughput> {
    let len = ms(wo, wc) / 1000.0;
    if len <= 0.0 {
        return None;
    }
    let (mut done, mut out, mut inp, mut good, mut busy) = (0u64, 0.0f64, 0u64, 0u64, 0.0f64);
    for (s, d) in samples.iter().zip(derived) {
        let (a, b) = (s.sent.max(wo), s.done.min(wc));
        if b > a {
            busy += ms(a, b) / 1000.0;
        }
        let Some(d) = d else { continue };
        if s.done >= wo && s.done <= wc {
            done += 1;
            good += slo.is_some_and(|x| meets(x, d)) as u64;
        }
        if s.sent >= wo && s.sent <= wc {
            inp += d.input_tokens;
        }
        if d.ks.is_empty() {
            if s.done >= wo && s.done <= wc {
                out += d.output_tokens as f64;
            }
        } else {
            for (c, k) in s.chunks.iter().zip(&d.ks) {
                let t = s.sent + std::time::Duration::from_micros(c.at_us as u64);
                if t >= wo && t <= wc {
                    out += k;
                }
            }
        }
    }
    let mut t = rates(len, done, 0, 0);
    t.output_tok_per_s = round3(out / len);
    t.total_tok_per_s = round3((out + inp as f64) / len);
    t.achieved_concurrency = round3(busy / len);
    if slo.is_some() {
        t.goodput_req_per_s = Some(round3(good as f64 / len));
    }
    Some(t)
}
