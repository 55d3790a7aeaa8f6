//! Parsers for the flag values that carry a little language: `--slo`,
//! `--weights`, `--baseline` and percentages. Used by clap's value_parser so
//! a bad value is a usage error (exit 2) naming the flag.

use crate::error::FlagValueError;
use crate::input::level::Level;
use crate::metric;

/// A comparison in an SLO term (the shared `--slo` syntax).
pub use sweepkit::slo::Op;

/// One SLO term, e.g. `p99_e2e_ms<=2000`.
#[derive(Debug, Clone, PartialEq)]
pub struct SloTerm {
    /// As the user wrote it (`p99_e2e_ms`).
    pub name: String,
    /// Resolved dotted path (`e2e_ms.p99`).
    pub path: String,
    pub op: Op,
    pub limit: f64,
}

impl std::fmt::Display for SloTerm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limit = crate::input::level::trim_float(self.limit);
        write!(f, "{}{}{}", self.name, self.op.as_str(), limit)
    }
}

/// `--slo 'p99_e2e_ms<=2000,p99_ttft_ms<=500'`, parsed by the shared
/// parser (`sweepkit::slo`, one syntax with loadgen; `p99_ttft<=500ms`
/// reads the same).
pub fn parse_slo(s: &str) -> Result<Vec<SloTerm>, FlagValueError> {
    let mut out = Vec::new();
    for t in sweepkit::slo::parse(s).map_err(|e| FlagValueError::Slo(e.to_string()))? {
        let path = metric::resolve(&t.name).map_err(|metric| FlagValueError::SloMetric {
            metric,
            term: t.to_string(),
        })?;
        out.push(SloTerm {
            name: t.name,
            path,
            op: t.op,
            limit: t.limit,
        });
    }
    Ok(out)
}

/// `--weights 'c=1:0.5,c=16:0.5'`: level -> weight (>= 0, not all zero).
pub fn parse_weights(s: &str) -> Result<Vec<(Level, f64)>, FlagValueError> {
    let mut out: Vec<(Level, f64)> = Vec::new();
    for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (lvl, w) = term
            .rsplit_once(':')
            .ok_or_else(|| FlagValueError::WeightTerm(term.into()))?;
        let level = Level::parse(lvl).ok_or_else(|| FlagValueError::WeightLevel(lvl.into()))?;
        let w: f64 = w
            .trim()
            .parse()
            .ok()
            .filter(|w: &f64| w.is_finite() && *w >= 0.0)
            .ok_or_else(|| FlagValueError::Weight(term.into()))?;
        if out.iter().any(|(l, _)| *l == level) {
            return Err(FlagValueError::LevelTwice(level.label()));
        }
        out.push((level, w));
    }
    if out.iter().all(|(_, w)| *w == 0.0) {
        return Err(FlagValueError::AllZero);
    }
    Ok(out)
}

/// `--baseline KEY=VALUE`.
pub fn parse_baseline(s: &str) -> Result<(String, String), FlagValueError> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| FlagValueError::KeyValue(s.into()))?;
    let k = k.trim().trim_start_matches("--");
    if k.is_empty() {
        return Err(FlagValueError::EmptyKey(s.into()));
    }
    Ok((k.to_string(), v.trim().to_string()))
}

/// A percentage, `2%` or `2` (both 2 %), returned as a fraction (0.02).
pub fn parse_pct(s: &str) -> Result<f64, FlagValueError> {
    let t = s.trim().trim_end_matches('%').trim();
    let x: f64 = t.parse().map_err(|_| FlagValueError::Percent(s.into()))?;
    if !(0.0..=100.0).contains(&x) {
        return Err(FlagValueError::PercentRange(s.into()));
    }
    Ok(x / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_terms_parse_with_aliases() {
        let s = parse_slo("p99_e2e_ms<=2000, p99_ttft_ms<500,output_tok_per_s>=10").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].path, "e2e_ms.p99");
        assert_eq!(s[0].op, Op::Le);
        assert_eq!(s[1].op, Op::Lt);
        assert_eq!(s[2].path, "throughput.output_tok_per_s");
        assert_eq!(s[0].to_string(), "p99_e2e_ms<=2000");
        // One syntax with loadgen: `=` is `<=`, a duration limit is ms.
        assert_eq!(parse_slo("p99_e2e_ms=2000").unwrap()[0].op, Op::Le);
        let d = parse_slo("p99_ttft<=0.5s").unwrap();
        assert_eq!((d[0].path.as_str(), d[0].limit), ("ttft_ms.p99", 500.0));
        assert!(parse_slo("p99_e2e_ms<=fast").is_err());
        let e = parse_slo("ttft=200ms").unwrap_err().to_string();
        assert!(e.contains("p99_ttft_ms<=200"), "{e}");
    }

    #[test]
    fn weights_parse() {
        let w = parse_weights("c=1:0.5,c=16:0.5").unwrap();
        assert_eq!(
            w,
            vec![(Level::Concurrency(1), 0.5), (Level::Concurrency(16), 0.5)]
        );
        assert!(parse_weights("c=1").is_err());
        assert!(parse_weights("c=1:0,c=2:0").is_err());
        assert!(parse_weights("c=1:1,c=1:2").is_err());
    }

    #[test]
    fn baseline_and_pct() {
        assert_eq!(
            parse_baseline("--speculative-num-steps=0").unwrap(),
            ("speculative-num-steps".into(), "0".into())
        );
        assert!(parse_baseline("nokey").is_err());
        assert_eq!(parse_pct("2%").unwrap(), 0.02);
        assert_eq!(parse_pct("1").unwrap(), 0.01);
        assert!(parse_pct("x").is_err());
    }
}
