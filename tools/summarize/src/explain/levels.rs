//! Why a config lost at a level, in the server's own numbers: for each
//! level, each config that lost to that level's best beyond noise, when
//! the two servers' figures differ, one note:
//! `steps=5 at c=16: KV cache 99% peak, 41 preemptions, 12 waiting on
//! average; steps=4: 78%, 0, 0 (KV-bound, measured)`. The reference
//! campaign's finding (steps=4 beat steps=5 at c=16 because each extra
//! step reserves KV, so fewer requests fit and the rest queue or are
//! preempted) is then read from the server, not guessed from client-side
//! waits.

use crate::analysis::interval::overlap;
use crate::analysis::Analysis;

use super::measured::{cell, Measured};

/// Did row `r` lose to row `b` at level `c` beyond noise: their 95%
/// intervals apart where both cells have one, else by more than the
/// pick's `--tolerance` (one run each: the noise is unknown, and the
/// tolerance is what the pick itself treats as a tie).
pub fn lost_beyond_noise(a: &Analysis, r: usize, b: usize, c: usize) -> bool {
    let (Some(x), Some(best)) = (&a.grid[r][c], &a.grid[b][c]) else {
        return false;
    };
    let better = a.opts.metric.better;
    if !better.beats(best.median, x.median) {
        return false;
    }
    match (a.noise.ci[r][c], a.noise.ci[b][c]) {
        (Some(i), Some(j)) => !overlap((i.centre, i.half_width), (j.centre, j.half_width)),
        _ => !better.within(x.median, best.median, a.opts.tolerance),
    }
}

/// The note for row `r` against row `b` at level `c`, from their measured
/// figures (None when either has none, or they do not differ).
pub fn note(a: &Analysis, r: usize, b: usize, c: usize) -> Option<String> {
    let (mr, mb): (Measured, Measured) = (cell(a, r, c)?, cell(a, b, c)?);
    if !mr.differs(&mb) {
        return None;
    }
    let (mine, theirs) = mr.against(&mb);
    let bound = match (mr.kv_bound(), mb.kv_bound()) {
        (Some(true), Some(false)) => " (KV-bound, measured)",
        _ => "",
    };
    let rows = &a.model.rows;
    Some(format!(
        "{} at {}: {mine}; {}: {theirs}{bound}",
        rows[r].label,
        a.model.levels[c].label(),
        rows[b].label
    ))
}

/// Every level's notes, level by level.
pub fn notes(a: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    for (c, best) in a.best_per_level.iter().enumerate() {
        let Some(b) = *best else { continue };
        for r in 0..a.model.rows.len() {
            if r != b && lost_beyond_noise(a, r, b, c) {
                out.extend(note(a, r, b, c));
            }
        }
    }
    out
}
