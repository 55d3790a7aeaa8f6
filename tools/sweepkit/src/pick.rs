//! The pick rule summarize and sweep-plan share, so the adaptive search's
//! best is the config summarize picks and sweep applies: the best score,
//! then, among candidates within `tol` of it, the smallest parameter value
//! (the tolerance rule of vLLM's unmerged `tune_speculative_k`).

/// Which way a metric improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

impl Better {
    /// True when `a` is strictly better than `b`.
    pub fn beats(self, a: f64, b: f64) -> bool {
        match self {
            Better::Higher => a > b,
            Better::Lower => a < b,
        }
    }

    /// True when `x` is within `tol` (a fraction) of `best`.
    pub fn within(self, x: f64, best: f64, tol: f64) -> bool {
        match self {
            Better::Higher => x >= best - tol * best.abs(),
            Better::Lower => x <= best + tol * best.abs(),
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            Better::Higher => "higher is better",
            Better::Lower => "lower is better",
        }
    }
}

/// A pick: the winner, and the competitor it was decided against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pick {
    pub winner: usize,
    /// The best-scoring candidate when the tolerance rule chose another
    /// one, else the runner-up; `None` with a single candidate.
    pub rival: Option<usize>,
}

/// Pick among `(order, score)` candidates: best score, then within `tol`
/// (a fraction) of it the smallest `order`. Returns indexes into `cands`.
pub fn pick(cands: &[(usize, f64)], better: Better, tol: f64) -> Option<Pick> {
    let best_of = |it: &mut dyn Iterator<Item = usize>| {
        it.reduce(|a, b| {
            if better.beats(cands[b].1, cands[a].1) {
                b
            } else {
                a
            }
        })
    };
    let top = best_of(&mut (0..cands.len()))?;
    let best = cands[top].1;
    let winner = (0..cands.len())
        .filter(|&i| better.within(cands[i].1, best, tol))
        .min_by_key(|&i| cands[i].0)
        .unwrap_or(top);
    let rival = if winner != top {
        Some(top)
    } else {
        best_of(&mut (0..cands.len()).filter(|&i| i != top))
    };
    Some(Pick { winner, rival })
}
