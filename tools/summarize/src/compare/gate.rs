//! `--fail-on`: the regressions a CI job fails on. A term such as
//! `throughput.output_tok_per_s<-5%` or `ttft_ms.p99>+10%` names a metric
//! and the change it must not pass; a row fails it when its verdict is
//! `worse` (the 95% interval lies wholly on the bad side of zero) and its
//! change passes the threshold: beyond both the noise and the threshold.

use super::verdict::{Row, Verdict};
use crate::metric;

/// One `--fail-on` term.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The metric's dotted path.
    pub path: String,
    /// True for `<` (fail below), false for `>` (fail above).
    pub below: bool,
    /// The threshold, percent change (signed).
    pub pct: f64,
}

impl Term {
    /// The term as written back (`ttft_ms.p99>+10%`).
    pub fn text(&self) -> String {
        format!(
            "{}{}{:+}%",
            self.path,
            if self.below { "<" } else { ">" },
            self.pct
        )
    }

    /// Does `r` fail this term?
    pub fn fails(&self, r: &Row) -> bool {
        let Some(c) = r.change.filter(|_| r.metric == self.path) else {
            return false;
        };
        r.verdict == Verdict::Worse
            && if self.below {
                c.pct < self.pct
            } else {
                c.pct > self.pct
            }
    }
}

/// Parse `--fail-on`: comma-separated `METRIC<PCT%` / `METRIC>PCT%`.
pub fn parse(s: &str) -> Result<Vec<Term>, String> {
    let mut out = Vec::new();
    for raw in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        let (name, below, rest) = match (raw.find('<'), raw.find('>')) {
            (Some(i), None) => (&raw[..i], true, &raw[i + 1..]),
            (None, Some(i)) => (&raw[..i], false, &raw[i + 1..]),
            _ => {
                return Err(format!(
                    "'{raw}': expected METRIC<PCT% or METRIC>PCT%, e.g. \
                     'throughput.output_tok_per_s<-5%' or 'ttft_ms.p99>+10%'"
                ))
            }
        };
        let path = metric::resolve(name).map_err(|e| e.to_string())?;
        let num = rest.trim().trim_end_matches('%').trim();
        let pct: f64 = num
            .parse()
            .ok()
            .filter(|x: &f64| x.is_finite())
            .ok_or_else(|| format!("'{raw}': '{}' is not a percent change", rest.trim()))?;
        out.push(Term { path, below, pct });
    }
    if out.is_empty() {
        return Err("expected at least one term, e.g. 'ttft_ms.p99>+10%'".into());
    }
    Ok(out)
}

/// The regressions: each failing (row, term), one line each.
pub fn regressions(rows: &[Row], terms: &[Term]) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows {
        for t in terms.iter().filter(|t| t.fails(r)) {
            let c = r.change.expect("a failing row has a change");
            out.push(format!(
                "regression: {} at {}: {} {:+.1}% (95% interval {:+.1}% .. {:+.1}%) \
                 beyond {}",
                r.config,
                r.level,
                r.metric,
                c.pct,
                c.lo_pct,
                c.hi_pct,
                t.text()
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::stats::Change;

    #[test]
    fn parse_terms_and_aliases() {
        let t = parse("throughput.output_tok_per_s<-5%, p99_ttft_ms>+10%").unwrap();
        assert_eq!(t[0].path, "throughput.output_tok_per_s");
        assert!(t[0].below && t[0].pct == -5.0);
        assert_eq!(t[1].path, "ttft_ms.p99");
        assert!(!t[1].below && t[1].pct == 10.0);
        assert_eq!(t[1].text(), "ttft_ms.p99>+10%");
        assert!(parse("ttft_ms.p99=10%").is_err());
        assert!(parse("ttft_ms.p99>ten%").is_err());
        assert!(parse("nope>1%").is_err());
        assert!(parse("").is_err());
    }

    fn row(metric: &str, pct: f64, lo: f64, hi: f64, v: Verdict) -> Row {
        Row {
            config: "(one config)".into(),
            level: "c=1".into(),
            metric: metric.into(),
            before: Some(1.0),
            after: Some(1.0),
            change: Some(Change {
                pct,
                lo_pct: lo,
                hi_pct: hi,
            }),
            verdict: v,
            why: None,
            method: None,
            pooled: true,
            runs: (3, 3),
        }
    }

    #[test]
    fn fails_only_beyond_threshold_and_noise() {
        let t = parse("ttft_ms.p99>+10%").unwrap();
        let worse = row("ttft_ms.p99", 12.0, 5.0, 19.0, Verdict::Worse);
        let small = row("ttft_ms.p99", 8.0, 5.0, 11.0, Verdict::Worse);
        let noisy = row("ttft_ms.p99", 12.0, -3.0, 27.0, Verdict::NoChange);
        let other = row("tpot_ms.p50", 30.0, 20.0, 40.0, Verdict::Worse);
        let lines = regressions(&[worse, small, noisy, other], &t);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("ttft_ms.p99 +12.0%"), "{}", lines[0]);
    }
}
