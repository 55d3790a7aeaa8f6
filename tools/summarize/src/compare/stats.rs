//! The statistics of `summarize --compare`: a 95% interval for the change
//! of one metric between two runs. Pure functions, unit-tested here.
//!
//! Changes are ratios, so every interval is built on the log scale and
//! reported as a percent change: exp(d) - 1.
//!
//! - Several values a side (starts, `--repeat` runs): Welch's t interval
//!   on the logs of the per-run values, d +/- t(0.975, v) * sqrt(s1^2/n1 +
//!   s2^2/n2), v by the Welch-Satterthwaite equation (Welch 1947, "The
//!   generalization of Student's problem when several different population
//!   variances are involved", Biometrika 34; Ruxton 2006, Behavioral
//!   Ecology 17, argues for it over Student's by default): a change may
//!   well change the spread too (speculative decoding's). With one value
//!   on one side, that side borrows the other's variance: Student's
//!   interval with pooled variance, df = n1 + n2 - 2 (NIST/SEMATECH
//!   e-Handbook of Statistical Methods, 1.3.5.3). Either carries
//!   run-to-run noise (a server start's speed), which the requests of one
//!   run cannot show.
//! - One value a side, latency: the percentile bootstrap (Efron &
//!   Tibshirani 1993, An Introduction to the Bootstrap, ch. 13) of the ratio
//!   of the two percentiles, each replicate a multinomial resample of the
//!   histogram's counts (drawn as successive binomials). Requests count as
//!   independent draws: this holds the noise within the run only.
//! - One value a side, throughput under `--until-stable`: each run's batch
//!   means interval (a t interval, Law & Kelton ch. 9) gives its standard
//!   error; the two combine as a Welch interval with Welch-Satterthwaite
//!   degrees of freedom (Welch 1947).

use crate::input::histogram::Statistic;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Binomial, Distribution};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// The confidence level of every interval.
pub const LEVEL: f64 = 0.95;
/// Bootstrap replicates: enough that the 2.5% and 97.5% points move by
/// well under a tenth of the interval between runs with other seeds.
pub const REPLICATES: usize = 2000;

/// A change and its interval, in percent (+10 is 10% higher).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change {
    pub pct: f64,
    pub lo_pct: f64,
    pub hi_pct: f64,
}

impl Change {
    fn of_log(d: f64, half: f64) -> Change {
        let p = |x: f64| 100.0 * (x.exp() - 1.0);
        Change {
            pct: p(d),
            lo_pct: p(d - half),
            hi_pct: p(d + half),
        }
    }

    /// Does the interval lie wholly above (`Some(true)`) or below
    /// (`Some(false)`) zero? `None`: it holds zero, no change beyond noise.
    pub fn direction(&self) -> Option<bool> {
        if self.lo_pct > 0.0 {
            Some(true)
        } else if self.hi_pct < 0.0 {
            Some(false)
        } else {
            None
        }
    }
}

/// The two-sided `LEVEL` quantile of Student's t with `df` degrees of
/// freedom.
pub fn t_quantile(df: f64) -> Option<f64> {
    let t = StudentsT::new(0.0, 1.0, df).ok()?;
    Some(t.inverse_cdf(0.5 + LEVEL / 2.0))
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Sum of squared deviations from the mean.
fn ss(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum()
}

/// The t interval of the change from `before` to `after` (per-run values,
/// all above zero): Welch's with two or more values a side, else Student's
/// with the variance pooled. `center`: the log ratio the interval is put
/// around (the merged histograms' estimate, the ratio of the means), else
/// the difference of the mean logs. `None` when fewer than three values in
/// all, or a value is not above zero.
pub fn runs_interval(before: &[f64], after: &[f64], center: Option<f64>) -> Option<Change> {
    let (n1, n2) = (before.len(), after.len());
    if n1 == 0 || n2 == 0 || n1 + n2 < 3 {
        return None;
    }
    if before
        .iter()
        .chain(after)
        .any(|x| !(*x > 0.0 && x.is_finite()))
    {
        return None;
    }
    let lb: Vec<f64> = before.iter().map(|x| x.ln()).collect();
    let la: Vec<f64> = after.iter().map(|x| x.ln()).collect();
    let d = center.unwrap_or(mean(&la) - mean(&lb));
    let (f1, f2) = (n1 as f64, n2 as f64);
    let (v1, v2) = (ss(&lb) / (f1 - 1.0).max(1.0), ss(&la) / (f2 - 1.0).max(1.0));
    let (se, df) = if n1 >= 2 && n2 >= 2 && v1 + v2 > 0.0 {
        let (a, b) = (v1 / f1, v2 / f2);
        let df = (a + b).powi(2) / (a * a / (f1 - 1.0) + b * b / (f2 - 1.0));
        ((a + b).sqrt(), df)
    } else {
        let df = f1 + f2 - 2.0;
        let sp2 = (ss(&lb) + ss(&la)) / df;
        ((sp2 * (1.0 / f1 + 1.0 / f2)).sqrt(), df)
    };
    Some(Change::of_log(d, t_quantile(df)? * se))
}

/// One run a side with a t interval each (`--until-stable`): `(value,
/// half-width as a fraction of the value, degrees of freedom)`. The Welch
/// interval of the log ratio (a relative half-width h at t(df) is a
/// standard error of h / t(df) on the log scale, to first order).
pub fn welch_interval(before: (f64, f64, f64), after: (f64, f64, f64)) -> Option<Change> {
    let se2 = |(_, h, df): (f64, f64, f64)| -> Option<f64> { Some((h / t_quantile(df)?).powi(2)) };
    let (s1, s2) = (se2(before)?, se2(after)?);
    if !(before.0 > 0.0 && after.0 > 0.0) {
        return None;
    }
    let df = (s1 + s2).powi(2) / (s1 * s1 / before.2 + s2 * s2 / after.2);
    let d = (after.0 / before.0).ln();
    Some(Change::of_log(d, t_quantile(df)? * (s1 + s2).sqrt()))
}

/// A multinomial resample of `b`'s counts (same total), by successive
/// conditional binomials.
fn resample(b: &[(f64, u64)], rng: &mut StdRng) -> Vec<(f64, u64)> {
    let mut left: u64 = b.iter().map(|(_, c)| c).sum();
    let mut mass = left as f64;
    let mut out = Vec::with_capacity(b.len());
    for &(x, c) in b {
        if left == 0 {
            break;
        }
        let p = (c as f64 / mass).clamp(0.0, 1.0);
        let k = Binomial::new(left, p).map_or(0, |d| d.sample(rng));
        mass -= c as f64;
        left -= k;
        if k > 0 {
            out.push((x, k));
        }
    }
    out
}

/// The percentile bootstrap interval of the change of `stat` from the
/// `before` buckets to the `after` buckets; seeded, so the same input
/// gives the same interval. `None` when a side is empty or zero.
pub fn bootstrap_interval(
    before: &[(f64, u64)],
    after: &[(f64, u64)],
    stat: Statistic,
    seed: u64,
) -> Option<Change> {
    let (b0, a0) = (stat.of(before)?, stat.of(after)?);
    if !(b0 > 0.0 && a0 > 0.0) {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut logs: Vec<f64> = (0..REPLICATES)
        .filter_map(|_| {
            let b = stat.of(&resample(before, &mut rng))?;
            let a = stat.of(&resample(after, &mut rng))?;
            (b > 0.0 && a > 0.0).then(|| (a / b).ln())
        })
        .collect();
    if logs.len() < REPLICATES / 2 {
        return None;
    }
    logs.sort_by(f64::total_cmp);
    let at = |p: f64| logs[((logs.len() - 1) as f64 * p).round() as usize];
    let tail = (1.0 - LEVEL) / 2.0;
    let p = |x: f64| 100.0 * (x.exp() - 1.0);
    Some(Change {
        pct: p((a0 / b0).ln()),
        lo_pct: p(at(tail)),
        hi_pct: p(at(1.0 - tail)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        // Student t, two-sided 95%: df 4 -> 2.776, df 30 -> 2.042.
        assert!((t_quantile(4.0).unwrap() - 2.776).abs() < 1e-3);
        assert!((t_quantile(30.0).unwrap() - 2.042).abs() < 1e-3);
    }

    #[test]
    fn pooled_t_on_logs_by_hand() {
        // logs of before: ln 100, ln 110, ln 90; after: the same x 1.5.
        let b = [100.0, 110.0, 90.0];
        let a: Vec<f64> = b.iter().map(|x| x * 1.5).collect();
        let c = runs_interval(&b, &a, None).unwrap();
        assert!((c.pct - 50.0).abs() < 1e-9, "{c:?}");
        let lb: Vec<f64> = b.iter().map(|x: &f64| x.ln()).collect();
        // Equal variances and sizes: Welch's df is n1 + n2 - 2 = 4.
        let s2 = ss(&lb) / 2.0;
        let half = 2.776_445 * (s2 * (2.0 / 3.0)).sqrt();
        let want_lo = 100.0 * ((1.5f64).ln() - half).exp_m1();
        assert!(
            (c.lo_pct - want_lo).abs() < 1e-3,
            "{} vs {want_lo}",
            c.lo_pct
        );
        assert_eq!(c.direction(), Some(true));
        // One value a side: no spread to pool.
        assert_eq!(runs_interval(&[1.0], &[2.0], None), None);
        // One value on one side borrows the other's spread.
        let one = runs_interval(&[100.0], &[99.0, 101.0, 100.0], None).unwrap();
        assert_eq!(one.direction(), None, "{one:?}");
        assert_eq!(runs_interval(&[0.0, 1.0], &[1.0, 2.0], None), None);
        // Unequal spreads: Welch's df falls below n1 + n2 - 2 (here one
        // side has none of its own, so v = n2 - 1 = 2: t 4.303).
        let w = runs_interval(&[100.0, 100.0], &[90.0, 110.0, 100.0], Some(0.0)).unwrap();
        let la: Vec<f64> = [90.0f64, 110.0, 100.0].iter().map(|x| x.ln()).collect();
        let half = 4.302_653 * (ss(&la) / 2.0 / 3.0).sqrt();
        assert!((w.hi_pct - 100.0 * half.exp_m1()).abs() < 1e-3, "{w:?}");
    }

    #[test]
    fn same_runs_are_no_change_and_a_clear_shift_is_one() {
        let b = [100.0, 104.0, 97.0, 101.0];
        let c = runs_interval(&b, &b, None).unwrap();
        assert_eq!(c.pct, 0.0);
        assert_eq!(c.direction(), None);
        let a = [130.0, 133.0, 128.0, 131.0];
        assert_eq!(runs_interval(&b, &a, None).unwrap().direction(), Some(true));
        assert_eq!(
            runs_interval(&a, &b, None).unwrap().direction(),
            Some(false)
        );
    }

    #[test]
    fn welch_of_two_stable_runs() {
        // 1000 +/- 2% (df 19) against 1100 +/- 2% (df 19): +10%, clear.
        let c = welch_interval((1000.0, 0.02, 19.0), (1100.0, 0.02, 19.0)).unwrap();
        assert!((c.pct - 10.0).abs() < 1e-9);
        assert_eq!(c.direction(), Some(true));
        // Equal df and widths: df = 38, half = t(38) * sqrt(2) * 0.02 / t(19).
        let half = t_quantile(38.0).unwrap() * 2f64.sqrt() * 0.02 / t_quantile(19.0).unwrap();
        assert!((c.lo_pct - 100.0 * ((1.1f64).ln() - half).exp_m1()).abs() < 1e-9);
        let wide = welch_interval((1000.0, 0.2, 4.0), (1050.0, 0.2, 4.0)).unwrap();
        assert_eq!(wide.direction(), None);
    }

    fn buckets(xs: &[f64]) -> Vec<(f64, u64)> {
        let mut v: Vec<(f64, u64)> = Vec::new();
        let mut s = xs.to_vec();
        s.sort_by(f64::total_cmp);
        for x in s {
            match v.last_mut() {
                Some((y, c)) if *y == x => *c += 1,
                _ => v.push((x, 1)),
            }
        }
        v
    }

    #[test]
    fn bootstrap_sees_a_shift_and_not_a_copy() {
        let xs: Vec<f64> = (0..500).map(|i| 10.0 + f64::from(i % 50) / 10.0).collect();
        let b = buckets(&xs);
        let same = bootstrap_interval(&b, &b, Statistic::Percentile(50.0), 1).unwrap();
        assert_eq!(same.pct, 0.0);
        assert_eq!(same.direction(), None, "{same:?}");
        let slow: Vec<f64> = xs.iter().map(|x| x * 1.1).collect();
        let c = bootstrap_interval(&b, &buckets(&slow), Statistic::Percentile(50.0), 1).unwrap();
        assert!((c.pct - 10.0).abs() < 1.0, "{c:?}");
        assert_eq!(c.direction(), Some(true));
        assert!(c.lo_pct <= 10.0 && 10.0 <= c.hi_pct, "{c:?}");
        let m = bootstrap_interval(&b, &buckets(&slow), Statistic::Mean, 2).unwrap();
        assert!((m.pct - 10.0).abs() < 1e-6 && m.direction() == Some(true));
        // Seeded: the same answer twice.
        let again = bootstrap_interval(&b, &buckets(&slow), Statistic::Mean, 2).unwrap();
        assert_eq!(m, again);
    }

    #[test]
    fn resample_keeps_the_total() {
        let b = [(1.0, 5), (2.0, 0), (3.0, 7)];
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..50 {
            let r = resample(&b, &mut rng);
            assert_eq!(r.iter().map(|(_, c)| c).sum::<u64>(), 12);
        }
    }
}
