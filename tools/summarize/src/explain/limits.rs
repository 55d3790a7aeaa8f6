//! The capacity each config started with, as its server reported it
//! (`server.limits` in its bench records): one line per config,
//! `steps=5: 41k KV tokens, 48 running max`. The reference campaign read
//! exactly these across depths: each speculative step reserves KV, so the
//! same memory holds fewer requests.

use serde_json::Value;
use sweepkit::records::ServerLimits;

use crate::analysis::Analysis;
use sweepkit::stats::median;

/// `41k`, `699k`, `4096`: a token count as a person reads it.
pub fn tokens(n: f64) -> String {
    if n >= 10_000.0 {
        format!("{:.0}k", n / 1000.0)
    } else {
        format!("{n:.0}")
    }
}

fn limits_of(rec: &Value) -> Option<ServerLimits> {
    serde_json::from_value(rec.pointer("/server/limits")?.clone()).ok()
}

/// The line of row `r`, or None when none of its records has limits.
/// Each figure is the median over the row's records (SGLang sizes its KV
/// pool from the memory free at start, which may move between starts).
pub fn line(a: &Analysis, r: usize) -> Option<String> {
    let ls: Vec<ServerLimits> = a.records[r]
        .iter()
        .flatten()
        .filter_map(limits_of)
        .collect();
    if ls.is_empty() {
        return None;
    }
    let med = |f: fn(&ServerLimits) -> Option<u64>| {
        let xs: Vec<f64> = ls.iter().filter_map(f).map(|x| x as f64).collect();
        median(&xs)
    };
    let mut parts = Vec::new();
    match (
        med(|l| l.kv_tokens),
        med(|l| l.kv_blocks),
        med(|l| l.block_size),
    ) {
        (Some(t), Some(b), Some(s)) => {
            parts.push(format!("{} KV tokens ({b:.0} blocks of {s:.0})", tokens(t)))
        }
        (Some(t), _, _) => parts.push(format!("{} KV tokens", tokens(t))),
        _ => {}
    }
    if let Some(s) = med(|l| l.slots) {
        let ctx = med(|l| l.slot_ctx_tokens)
            .map_or_else(String::new, |c| format!(" of {} tokens", tokens(c)));
        parts.push(format!("{s:.0} slots{ctx}"));
    } else if let Some(n) = med(|l| l.max_running_requests) {
        parts.push(format!("{n:.0} running max"));
    }
    (!parts.is_empty()).then(|| format!("{}: {}", a.model.rows[r].label, parts.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::tokens;

    #[test]
    fn token_counts_read_well() {
        assert_eq!(tokens(41_000.0), "41k");
        assert_eq!(tokens(699_008.0), "699k");
        assert_eq!(tokens(4096.0), "4096");
    }
}
