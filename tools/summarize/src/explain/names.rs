//! The new metrics in a serving engineer's words, with units: the
//! report's axes say "KV cache in use, peak (share)", never
//! `server_metrics.kv_cache_usage_ratio.peak`.

/// The words for `path`, or None when it is not a server or GPU figure.
pub fn human(path: &str) -> Option<String> {
    let mut seg = path.split('.');
    let (block, field, stat) = (seg.next()?, seg.next()?, seg.next());
    let what = match (block, field) {
        ("server_metrics", "kv_cache_usage_ratio") => "KV cache in use (share)",
        ("server_metrics", "running_requests") => "requests running (server)",
        ("server_metrics", "waiting_requests") => "requests waiting (server queue)",
        ("server_metrics", "prefix_cache_hit_rate") => "prefix cache hit rate (share)",
        ("server_metrics", "spec_accept_length") => "accept length, server gauge (tokens per step)",
        ("server_metrics", "preemptions") => "preemptions (count)",
        ("server_metrics", "prefix_cache_queried_tokens") => "prefix cache queried (tokens)",
        ("server_metrics", "prefix_cache_hit_tokens") => "prefix cache hits (tokens)",
        ("gpu", "power_w") => "GPU power (W)",
        ("gpu", "memory_used_mib") => "GPU memory used (MiB)",
        ("gpu", "utilization_pct") => "GPU utilisation (%)",
        ("gpu", "energy_j") => "GPU energy (J)",
        ("gpu", "energy_per_output_token_j") => "energy per output token (J)",
        ("gpu", "output_tok_per_s_per_w") => "output tok/s per watt",
        _ => return None,
    };
    Some(match stat {
        Some("mean") => format!("{what}, mean"),
        Some("peak") => format!("{what}, peak"),
        Some("increase") | None => what.to_string(),
        Some(other) => format!("{what}, {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn server_and_gpu_figures_read_as_words() {
        assert_eq!(
            human("server_metrics.kv_cache_usage_ratio.peak").unwrap(),
            "KV cache in use (share), peak"
        );
        assert_eq!(
            human("gpu.energy_per_output_token_j").unwrap(),
            "energy per output token (J)"
        );
        assert_eq!(
            human("server_metrics.preemptions.increase").unwrap(),
            "preemptions (count)"
        );
        assert_eq!(human("ttft_ms.p99"), None);
    }
}
