//! How many GPUs one server of a config used, for throughput per GPU:
//! tensor x pipeline x data parallel size from the server's flags (the
//! config, the server's own `args`, its `argv`), as vLLM's `vllm bench
//! sweep plot_pareto` counts a world size (`_infer_gpu_count`: tp x pp x
//! dp, `vllm/benchmarks/sweep/plot_pareto.py`), and the host's hardware
//! record (`server.host.gpus`, read by wait-ready) to tell whether there
//! are GPUs at all. Without parallel flags a server on a GPU host uses
//! one; on a host that lists no GPUs (or no hardware record) the count is
//! unknown and throughput stays per server.

use serde_json::Value;
use sweepkit::records::Config;

/// The flag names (without dashes, underscores as dashes) of each
/// parallel dimension, vLLM's and SGLang's spellings
/// (`--tensor-parallel-size`/`-tp`, SGLang `--tp-size`; `args` keys
/// `tp_size`, `dp_size`, `pp_size`).
const TP: &[&str] = &["tp", "tp-size", "tensor-parallel-size"];
const PP: &[&str] = &["pp", "pp-size", "pipeline-parallel-size"];
const DP: &[&str] = &["dp", "dp-size", "data-parallel-size"];

/// A server's GPU count and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuCount {
    /// `None`: unknown (no GPUs listed and no parallel flags).
    pub per_server: Option<u64>,
    /// For people: `tp 2 x dp 1 from flags`, `1 (no parallel flags; host
    /// lists 8 GPUs)`, `unknown: ...`.
    pub how: String,
    /// GPUs the host lists, when a hardware record says.
    pub host_gpus: Option<usize>,
}

fn norm(k: &str) -> String {
    k.trim_start_matches('-')
        .replace('_', "-")
        .to_ascii_lowercase()
}

/// A parallel size from the config, the server's `args` or its `argv`.
fn size(names: &[&str], config: &Config, rec: &Value) -> Option<u64> {
    let hit = |k: &str| names.contains(&norm(k).as_str());
    if let Some(v) = config.iter().find(|(k, _)| hit(k)).map(|(_, v)| v) {
        return v.trim().parse().ok();
    }
    if let Some(args) = rec.pointer("/server/args").and_then(Value::as_object) {
        for (k, v) in args {
            if hit(k) {
                return v.as_u64().or_else(|| v.as_str()?.trim().parse().ok());
            }
        }
    }
    let argv = rec.pointer("/server/argv").and_then(Value::as_array)?;
    let words: Vec<&str> = argv.iter().filter_map(Value::as_str).collect();
    for (i, w) in words.iter().enumerate() {
        if !w.starts_with('-') {
            continue;
        }
        let (k, inline) = match w.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (*w, None),
        };
        if hit(k) {
            return inline.or(words.get(i + 1).copied())?.trim().parse().ok();
        }
    }
    None
}

/// The GPUs the host of `rec` (or of a record it carries upstream) lists.
pub fn host_gpus(rec: &Value) -> Option<usize> {
    let head = crate::input::record_view::Head::of(rec);
    let host = head.chain().find_map(|h| h.host())?;
    Some(host.gpus.0.as_ref().map_or(0, Vec::len))
}

/// The GPU count of the server that wrote `rec` under `config`.
pub fn of(config: &Config, rec: &Value) -> GpuCount {
    let tp = size(TP, config, rec);
    let pp = size(PP, config, rec);
    let dp = size(DP, config, rec);
    let host = host_gpus(rec);
    let flags = tp.is_some() || pp.is_some() || dp.is_some();
    let n = tp.unwrap_or(1).max(1) * pp.unwrap_or(1).max(1) * dp.unwrap_or(1).max(1);
    let parts: Vec<String> = [("tp", tp), ("pp", pp), ("dp", dp)]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} {v}")))
        .collect();
    let (per_server, how) = match (flags, host) {
        (true, _) => (Some(n), format!("{} from flags", parts.join(" x "))),
        (false, Some(g)) if g > 0 => (Some(1), format!("1 (no parallel flags; host lists {g})")),
        (false, Some(_)) => (None, "unknown: the host lists no GPUs".into()),
        (false, None) => (
            None,
            "unknown: no hardware record, no parallel flags".into(),
        ),
    };
    GpuCount {
        per_server,
        how,
        host_gpus: host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(kv: &[(&str, &str)]) -> Config {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn flags_multiply() {
        let g = of(&cfg(&[("tp-size", "2"), ("dp-size", "2")]), &json!({}));
        assert_eq!(g.per_server, Some(4));
        assert_eq!(g.how, "tp 2 x dp 2 from flags");
        let rec = json!({"server": {"args": {"tp_size": 4, "dp_size": 1}}});
        assert_eq!(of(&Config::new(), &rec).per_server, Some(4));
        let rec = json!({"server": {"argv": ["vllm", "serve", "m", "-tp", "2", "--pipeline-parallel-size=2"]}});
        assert_eq!(of(&Config::new(), &rec).per_server, Some(4));
    }

    #[test]
    fn host_decides_without_flags() {
        let gpu = json!({"upstream": {"server": {"host": {"name": "h", "gpus": [{"name": "H200"}, {"name": "H200"}], "fingerprint": "f"}}}});
        assert_eq!(of(&Config::new(), &gpu).per_server, Some(1));
        assert_eq!(of(&Config::new(), &gpu).host_gpus, Some(2));
        let cpu = json!({"server": {"host": {"name": "h", "fingerprint": "f"}}});
        assert_eq!(of(&Config::new(), &cpu).per_server, None);
        assert_eq!(of(&Config::new(), &json!({})).per_server, None);
    }
}
