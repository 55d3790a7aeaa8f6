//! The one `--slo` syntax of loadgen and summarize, parsed here once.
//!
//! A spec is comma-separated terms `METRIC OP LIMIT`. The canonical form
//! names the metric with its unit and gives a bare number in that unit:
//! `ttft_ms<=200,e2e_ms<=10000` (loadgen: each request's own figure) and
//! `p99_ttft_ms<=200` (summarize: a percentile of a level). Also accepted,
//! and written back in the canonical form: a duration as the limit
//! (`ttft<=200ms`, `p99_e2e<=2s`), `=` for `<=` (loadgen's old
//! `ttft=200ms`, vLLM's `--goodput ttft:200` alike) and a latency named
//! without its unit (`ttft=200`: milliseconds).

use crate::records::BenchRecord;

/// A comparison in an SLO term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Le,
    Lt,
    Ge,
    Gt,
}

impl Op {
    pub fn holds(self, x: f64, limit: f64) -> bool {
        match self {
            Op::Le => x <= limit,
            Op::Lt => x < limit,
            Op::Ge => x >= limit,
            Op::Gt => x > limit,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }
}

/// Why a `--slo` spec does not read; `term` is the term as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SloError {
    #[error("empty SLO: expected METRIC<=LIMIT, e.g. ttft_ms<=200")]
    Empty,
    #[error("\"{term}\": expected METRIC<=LIMIT (or <, >=, >), e.g. ttft_ms<=200")]
    NoOp { term: String },
    #[error("\"{term}\": \"{name}\" is not a metric name")]
    BadName { term: String, name: String },
    #[error("\"{term}\": the limit must be a finite number")]
    NotFinite { term: String },
    #[error("\"{term}\": \"{value}\" is not a number or a duration (200ms, 2s)")]
    BadLimit { term: String, value: String },
    #[error("\"{term}\": {name} is not a time: give a number")]
    NotATime { term: String, name: String },
}

/// One term in canonical form: `name` carries the unit (`ttft_ms`,
/// `p99_ttft_ms`, `output_tok_per_s`) and `limit` is in that unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub name: String,
    pub op: Op,
    pub limit: f64,
}

impl std::fmt::Display for Term {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}{}{}", self.name, self.op.as_str(), self.limit)
    }
}

/// Parse a whole `--slo` spec into canonical terms.
pub fn parse(spec: &str) -> Result<Vec<Term>, SloError> {
    let terms = spec
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(term)
        .collect::<Result<Vec<_>, _>>()?;
    if terms.is_empty() {
        return Err(SloError::Empty);
    }
    Ok(terms)
}

fn term(t: &str) -> Result<Term, SloError> {
    let (name, op, value) = split_op(t).ok_or_else(|| SloError::NoOp { term: t.into() })?;
    let name = name.trim();
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    {
        return Err(SloError::BadName {
            term: t.into(),
            name: name.into(),
        });
    }
    let value = value.trim();
    let (name, limit) = match value.parse::<f64>() {
        Ok(x) if is_bare_latency(name) => (format!("{name}_ms"), x),
        Ok(x) => (name.to_string(), x),
        Err(_) => with_unit(t, name, value)?,
    };
    if !limit.is_finite() {
        return Err(SloError::NotFinite { term: t.into() });
    }
    // vLLM's name for end-to-end latency; ours is e2e.
    let name = name.replace("e2el", "e2e");
    Ok(Term { name, op, limit })
}

/// A duration limit (`200ms`, `2s`): the name ends in `_ms` (or gets it)
/// and the limit is converted to milliseconds; a name in seconds (`_s`)
/// gets seconds.
fn with_unit(t: &str, name: &str, value: &str) -> Result<(String, f64), SloError> {
    let d = humantime::parse_duration(value).map_err(|_| SloError::BadLimit {
        term: t.into(),
        value: value.into(),
    })?;
    let time_unit = |n: &str| n.ends_with("_ms") || (n.ends_with("_s") && !n.ends_with("per_s"));
    if name.ends_with("_s") && time_unit(name) {
        return Ok((name.to_string(), d.as_secs_f64()));
    }
    if !name.ends_with("_ms") && !is_bare_latency(name) {
        return Err(SloError::NotATime {
            term: t.into(),
            name: name.into(),
        });
    }
    let name = if name.ends_with("_ms") {
        name.to_string()
    } else {
        format!("{name}_ms")
    };
    Ok((name, d.as_secs_f64() * 1000.0))
}

/// A latency named without its unit (`ttft`, `p99_e2e`, `itl_p50`,
/// `e2el` as vLLM spells it): the bench record's latency blocks.
fn is_bare_latency(name: &str) -> bool {
    let core = name.split('_').filter(|seg| !is_percentile(seg));
    let core: Vec<&str> = core.collect();
    let core = core.join("_");
    core == "e2el"
        || BenchRecord::STATS_BLOCKS
            .iter()
            .any(|b| b.strip_suffix("_ms") == Some(core.as_str()))
}

fn is_percentile(seg: &str) -> bool {
    matches!(seg, "mean" | "max" | "count")
        || seg
            .strip_prefix('p')
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

fn split_op(t: &str) -> Option<(&str, Op, &str)> {
    for (tok, op) in [
        ("<=", Op::Le),
        (">=", Op::Ge),
        ("<", Op::Lt),
        (">", Op::Gt),
        ("=", Op::Le),
    ] {
        if let Some(i) = t.find(tok) {
            return Some((&t[..i], op, &t[i + tok.len()..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> String {
        parse(s).unwrap()[0].to_string()
    }

    #[test]
    fn every_spelling_becomes_the_canonical_form() {
        assert_eq!(one("ttft_ms<=200"), "ttft_ms<=200");
        assert_eq!(one("ttft=200ms"), "ttft_ms<=200");
        assert_eq!(one("ttft=200"), "ttft_ms<=200");
        assert_eq!(one("e2e=1s"), "e2e_ms<=1000");
        assert_eq!(one("e2el<=2s"), "e2e_ms<=2000");
        assert_eq!(one("p99_ttft_ms<=500"), "p99_ttft_ms<=500");
        assert_eq!(one("p99_ttft<=0.5s"), "p99_ttft_ms<=500");
        assert_eq!(one("ttft_p99<=500ms"), "ttft_p99_ms<=500");
        assert_eq!(one("output_tok_per_s>=1000"), "output_tok_per_s>=1000");
        assert_eq!(one("slo_attainment>0.9"), "slo_attainment>0.9");
        assert_eq!(one("throughput.elapsed_s<2m"), "throughput.elapsed_s<120");
        let all = parse(" ttft=200ms , tpot_ms<=50,").unwrap();
        assert_eq!(all.len(), 2);
        assert!(all[1].op.holds(50.0, all[1].limit));
    }

    #[test]
    fn bad_terms_say_what_is_wrong() {
        let e = |spec: &str| parse(spec).unwrap_err().to_string();
        assert!(e("").contains("empty"));
        assert!(e("ttft").contains("METRIC<=LIMIT"));
        assert!(e("ttft<=soon").contains("duration"));
        assert!(e("output_tok_per_s>=1s").contains("not a time"));
        assert!(e("a b<=1").contains("not a metric name"));
        assert!(parse("ttft_ms<=inf").is_err());
    }
}
