//! `--noise PCT`: run-to-run variance on demand. Real servers differ by up
//! to 20% between identical runs (SGLang issue 2470); an adaptive sweep's
//! repeats exist for that, and tests need it reproducible. Each start draws
//! one speed factor f = 1 + u, u uniform in [-PCT, +PCT], from `--seed` and
//! the start number kept in `--noise-counter FILE`, and divides every
//! modelled time by f, so throughput is multiplied by about f.

use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::cli::Args;

/// The speed factor of start number `start` under `seed`.
pub fn speed_factor(pct: f64, seed: u64, start: u64) -> f64 {
    if pct <= 0.0 {
        return 1.0;
    }
    // Mix the start number in (SplitMix64's odd constant) so consecutive
    // starts get unrelated streams.
    let mut rng = StdRng::seed_from_u64(seed ^ start.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    1.0 + rng.gen_range(-pct..=pct)
}

/// This start's number: the integer in `file` (0 when absent), which is
/// then counted up for the next start.
pub fn next_start(file: &Path) -> std::io::Result<u64> {
    let n = match std::fs::read_to_string(file) {
        Ok(s) => s.trim().parse().unwrap_or(0),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    let tmp = file.with_extension("tmp");
    std::fs::write(&tmp, format!("{}\n", n + 1))?;
    std::fs::rename(&tmp, file)?;
    Ok(n)
}

/// Divide every modelled time of `a` by `f`.
pub fn apply(a: &mut Args, f: f64) {
    for d in [
        &mut a.step_time,
        &mut a.per_seq_time,
        &mut a.draft_step_time,
        &mut a.prefill_per_token,
    ] {
        *d = d.div_f64(f);
    }
    for d in [&mut a.exact_ttft, &mut a.exact_itl].into_iter().flatten() {
        *d = d.div_f64(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_are_seeded_bounded_and_vary_by_start() {
        assert_eq!(speed_factor(0.0, 1, 0), 1.0);
        let a: Vec<f64> = (0..50).map(|s| speed_factor(0.05, 7, s)).collect();
        let b: Vec<f64> = (0..50).map(|s| speed_factor(0.05, 7, s)).collect();
        assert_eq!(a, b, "same seed, same draws");
        assert!(a.iter().all(|f| (0.95..=1.05).contains(f)));
        assert!(a.windows(2).any(|w| w[0] != w[1]));
        assert_ne!(speed_factor(0.05, 8, 0), a[0]);
    }

    #[test]
    fn the_counter_counts_starts() {
        let dir = std::env::temp_dir().join(format!("llm-sim-noise-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("starts");
        assert_eq!(next_start(&f).unwrap(), 0);
        assert_eq!(next_start(&f).unwrap(), 1);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "2\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
