//! `--find-capacity SLO`: the highest concurrency at which a level meets
//! every term (`p99_ttft_ms<=500`: a level's figure, summarize's `--slo`
//! form), found by search rather than a fixed list of levels. Double from
//! the start until a level misses, then bisect between the last level that
//! met every term and the first that did not, until they are one apart,
//! the level budget runs out, or `--max-concurrency` meets every term.
//! Every level is an ordinary bench record; the last also carries
//! `capacity` (`sweepkit::records::CapacitySearch`). The peers ask for
//! exactly this (vllm#27084, aiperf#883); SGLang's auto_benchmark bisects
//! QPS against mean TTFT/TPOT, and guidellm searches concurrency rather
//! than rate because an over-capacity rate builds an unbounded backlog.

use serde_json::Value;
use sweepkit::records::{
    BenchRecord, CapacitySearch, CapacityStep, CapacityStop, Stats, Throughput,
};
use sweepkit::slo::Op;

/// One term, its name resolved to a dotted path of the bench record.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub name: String,
    pub path: String,
    pub op: Op,
    pub limit: f64,
}

/// `--find-capacity` and its bounds, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityPlan {
    pub text: String,
    pub terms: Vec<Term>,
    pub start: u32,
    pub max: u32,
    pub budget: u32,
}

/// A level figure's dotted path: `p99_ttft_ms` and `ttft_ms_p99` ->
/// `ttft_ms.p99`; `output_tok_per_s` -> `throughput.output_tok_per_s`;
/// a dotted path as is.
pub fn resolve(name: &str) -> Option<String> {
    if name.contains('.') {
        return Some(name.to_string());
    }
    if Throughput::FIELDS.contains(&name) {
        return Some(format!("throughput.{name}"));
    }
    for block in BenchRecord::STATS_BLOCKS {
        for field in Stats::FIELDS {
            if name == format!("{field}_{block}") || name == format!("{block}_{field}") {
                return Some(format!("{block}.{field}"));
            }
        }
    }
    None
}

/// Why a `--find-capacity` objective does not read: the shared syntax, or
/// a name that is no level figure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermError {
    #[error(transparent)]
    Syntax(#[from] sweepkit::slo::SloError),
    #[error(
        "\"{0}\": not a level figure; name one like p99_ttft_ms, p50_tpot_ms \
         or output_tok_per_s"
    )]
    NotAFigure(String),
}

/// Parse the terms (the shared `--slo` syntax, `sweepkit::slo`).
pub fn parse_terms(spec: &str) -> Result<Vec<Term>, TermError> {
    sweepkit::slo::parse(spec)?
        .into_iter()
        .map(|t| {
            let path = resolve(&t.name).ok_or_else(|| TermError::NotAFigure(t.name.clone()))?;
            Ok(Term {
                name: t.name,
                path,
                op: t.op,
                limit: t.limit,
            })
        })
        .collect()
}

fn lookup(v: &Value, path: &str) -> Option<f64> {
    let mut cur = v;
    for seg in path.split('.') {
        cur = cur.get(seg)?;
    }
    cur.as_f64().filter(|x| x.is_finite())
}

/// Does the level's record meet every term? The terms it missed, with
/// the record's figure.
pub fn judge(terms: &[Term], rec: &BenchRecord) -> (bool, Vec<String>) {
    let v = serde_json::to_value(rec).unwrap_or(Value::Null);
    let missed: Vec<String> = terms
        .iter()
        .filter_map(|t| match lookup(&v, &t.path) {
            Some(x) if t.op.holds(x, t.limit) => None,
            Some(x) => Some(format!("{} {}", t.name, crate::stats::round3(x))),
            None => Some(format!("{} not measured", t.name)),
        })
        .collect();
    (missed.is_empty(), missed)
}

/// The search's state: what it has seen, what to try next.
#[derive(Debug, Clone)]
pub struct Search {
    pub plan: CapacityPlan,
    /// The highest concurrency that met every term.
    pub lo: Option<u32>,
    /// The lowest that did not.
    pub hi: Option<u32>,
    pub tried: Vec<CapacityStep>,
}

impl Search {
    pub fn new(plan: CapacityPlan) -> Search {
        Search {
            plan,
            lo: None,
            hi: None,
            tried: Vec::new(),
        }
    }

    /// The level the search starts with.
    pub fn first(&self) -> u32 {
        self.plan.start.min(self.plan.max)
    }

    /// Take level `c`'s verdict; the next level, or why the search stops.
    pub fn next(&mut self, c: u32, meets: bool, missed: Vec<String>) -> Result<u32, CapacityStop> {
        self.tried.push(CapacityStep {
            concurrency: c,
            meets,
            missed,
        });
        if meets {
            self.lo = Some(self.lo.map_or(c, |l| l.max(c)));
        } else {
            self.hi = Some(self.hi.map_or(c, |h| h.min(c)));
        }
        let lo = self.lo.unwrap_or(0);
        let next = match self.hi {
            // Doubling: no level has missed yet.
            None if lo >= self.plan.max => return Err(CapacityStop::MaxConcurrency),
            None => lo.saturating_mul(2).clamp(1, self.plan.max),
            Some(hi) if hi <= lo + 1 => return Err(CapacityStop::Converged),
            Some(hi) => lo + (hi - lo) / 2,
        };
        if self.tried.len() as u32 >= self.plan.budget {
            return Err(CapacityStop::Budget);
        }
        Ok(next)
    }

    /// The result, for the last record.
    pub fn result(&self, stopped: CapacityStop) -> CapacitySearch {
        let exact = match (self.lo, self.hi) {
            (Some(l), Some(h)) => h == l + 1,
            (None, Some(h)) => h == 1,
            _ => false,
        };
        CapacitySearch {
            slo: self.plan.text.clone(),
            capacity: self.lo,
            first_miss: self.hi,
            exact,
            stopped,
            levels_run: self.tried.len() as u32,
            level_budget: self.plan.budget,
            max_concurrency: self.plan.max,
            tried: self.tried.clone(),
        }
    }
}

/// One line for people: `capacity c=6 (c=7 misses; exact)`.
pub fn sentence(r: &CapacitySearch) -> String {
    let how = match (r.capacity, r.first_miss) {
        (Some(c), Some(m)) if r.exact => format!("capacity c={c} (c={m} misses: exact)"),
        (Some(c), Some(m)) => format!(
            "capacity at least c={c}, below c={m} ({}: not narrowed further)",
            r.stopped
        ),
        (Some(c), None) => format!("capacity at least c={c}, the highest tried ({})", r.stopped),
        (None, Some(m)) => format!(
            "no capacity: c={m}, the lowest tried, misses ({})",
            r.stopped
        ),
        (None, None) => format!("no level measured ({})", r.stopped),
    };
    format!(
        "{how}; {} of {} levels, SLO {}",
        r.levels_run, r.level_budget, r.slo
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(start: u32, max: u32, budget: u32) -> CapacityPlan {
        CapacityPlan {
            text: "p99_ttft_ms<=500".into(),
            terms: parse_terms("p99_ttft_ms<=500").unwrap(),
            start,
            max,
            budget,
        }
    }

    /// Where a search ended: (capacity, first miss, exact).
    fn ends(r: &CapacitySearch) -> (Option<u32>, Option<u32>, bool) {
        (r.capacity, r.first_miss, r.exact)
    }

    /// Run the search against a server whose true capacity is `cap`.
    fn search(p: CapacityPlan, cap: u32) -> (Vec<u32>, CapacitySearch) {
        let mut s = Search::new(p);
        let mut c = s.first();
        let mut ran = vec![];
        loop {
            ran.push(c);
            match s.next(c, c <= cap, vec![]) {
                Ok(n) => c = n,
                Err(why) => return (ran, s.result(why)),
            }
        }
    }

    #[test]
    fn doubles_then_bisects_to_the_exact_capacity() {
        let (ran, r) = search(plan(1, 1024, 20), 6);
        assert_eq!(ran, [1, 2, 4, 8, 6, 7]);
        assert_eq!(ends(&r), (Some(6), Some(7), true));
        assert_eq!(r.stopped, CapacityStop::Converged);
        let (ran, r) = search(plan(1, 1024, 20), 100);
        assert_eq!(
            ran,
            [1, 2, 4, 8, 16, 32, 64, 128, 96, 112, 104, 100, 102, 101]
        );
        assert_eq!(r.capacity, Some(100));
    }

    #[test]
    fn a_budget_and_a_limit_stop_it() {
        let (ran, r) = search(plan(1, 1024, 4), 6);
        assert_eq!(ran, [1, 2, 4, 8]);
        assert_eq!(ends(&r), (Some(4), Some(8), false));
        assert_eq!(r.stopped, CapacityStop::Budget);
        let (ran, r) = search(plan(4, 20, 20), 1000);
        assert_eq!(ran, [4, 8, 16, 20]);
        assert_eq!(
            (r.capacity, r.stopped),
            (Some(20), CapacityStop::MaxConcurrency)
        );
    }

    #[test]
    fn a_first_level_that_misses_searches_below_it() {
        let (ran, r) = search(plan(8, 64, 20), 2);
        assert_eq!(ran, [8, 4, 2, 3]);
        assert_eq!(ends(&r), (Some(2), Some(3), true));
        let (ran, r) = search(plan(1, 64, 20), 0);
        assert_eq!(ran, [1]);
        assert_eq!(ends(&r), (None, Some(1), true));
    }

    #[test]
    fn terms_resolve_to_level_figures() {
        let t = parse_terms("p99_ttft_ms<=500,tpot_ms_p50<20,output_tok_per_s>=100").unwrap();
        let paths: Vec<&str> = t.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(
            paths,
            ["ttft_ms.p99", "tpot_ms.p50", "throughput.output_tok_per_s"]
        );
        assert!(
            parse_terms("ttft_ms<=500").is_err(),
            "a per-request figure is not a level's"
        );
        let mut rec = BenchRecord::default();
        rec.latency.ttft_ms.p99 = 812.0;
        let (ok, missed) = judge(&t[..1], &rec);
        assert!(!ok);
        assert_eq!(missed, ["p99_ttft_ms 812"]);
    }
}
