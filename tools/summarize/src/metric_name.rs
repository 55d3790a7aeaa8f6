//! A metric's name as a serving engineer reads it, with its unit: the
//! report's axes and verdict say "output throughput (tok/s)", never the
//! record's dotted path `throughput.output_tok_per_s`.

/// `ttft_ms.p99` -> `TTFT p99 (ms)`; a path this does not know keeps its
/// words, with the unit its name ends in.
pub fn human(path: &str) -> String {
    if let Some(x) = crate::explain::names::human(path) {
        return x;
    }
    let (block, field) = path.split_once('.').unwrap_or(("", path));
    if let Some(name) = stats_block(block) {
        return format!("{name} {field} (ms)");
    }
    if block == "throughput" || block == "steady" {
        let steady = if block == "steady" { "steady " } else { "" };
        if let Some(x) = throughput_field(field) {
            return format!("{steady}{x}");
        }
    }
    if block == "spec" {
        if let Some(x) = spec_field(field) {
            return x.to_string();
        }
    }
    generic(path)
}

fn stats_block(block: &str) -> Option<&'static str> {
    Some(match block {
        "ttft_ms" => "TTFT",
        "tpot_ms" => "TPOT",
        "itl_ms" => "ITL",
        "chunk_gap_ms" => "chunk gap",
        "e2e_ms" => "end-to-end latency",
        "queue_ms" => "client queue time",
        "start_lag_ms" => "start lag",
        "e2e_incl_queue_ms" => "end-to-end latency with queue",
        _ => return None,
    })
}

fn throughput_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "output_tok_per_s" => "output throughput (tok/s)",
        "total_tok_per_s" => "total throughput (tok/s)",
        "requests_per_s" => "request rate (req/s)",
        "goodput_req_per_s" => "goodput (req/s)",
        "achieved_concurrency" => "requests in flight (mean)",
        "slo_attainment" => "SLO attainment (share of requests)",
        "elapsed_s" => "wall time (s)",
        _ => return None,
    })
}

fn spec_field(field: &str) -> Option<&'static str> {
    Some(match field {
        "accept_length" => "accept length (tokens per step)",
        "acceptance_rate" => "acceptance rate (share of drafts)",
        "draft_tokens" => "draft tokens (count)",
        "accepted_tokens" => "accepted tokens (count)",
        "drafts" => "drafts (count)",
        _ => return None,
    })
}

/// Words from the path, the unit from its last segment's ending.
fn generic(path: &str) -> String {
    let last = path.rsplit('.').next().unwrap_or(path);
    let units = [
        ("_tok_per_s", "tok/s"),
        ("_per_s", "per s"),
        ("_ms", "ms"),
        ("_s", "s"),
    ];
    let (stem, unit) = units
        .iter()
        .find_map(|(end, u)| last.strip_suffix(end).map(|s| (s, *u)))
        .unwrap_or((last, "count"));
    format!("{} ({unit})", stem.replace('_', " "))
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn names_are_words_with_units() {
        assert_eq!(
            human("throughput.output_tok_per_s"),
            "output throughput (tok/s)"
        );
        assert_eq!(human("ttft_ms.p99"), "TTFT p99 (ms)");
        assert_eq!(human("tpot_ms.p50"), "TPOT p50 (ms)");
        assert_eq!(
            human("spec.accept_length"),
            "accept length (tokens per step)"
        );
        assert_eq!(human("client_cpu_s"), "client cpu (s)");
        assert_eq!(human("tokens_per_chunk"), "tokens per chunk (count)");
    }
}
