//! The report's "What the server saw" section: each config's capacity,
//! the notes on lost levels, and by load level the KV cache in use and
//! the server's queue, then GPU power and energy per output token where
//! the records have them. Absent figures draw nothing.

use std::fmt::Write as _;

use super::charts::by_level;
use crate::analysis::Analysis;
use crate::metric::lookup;
use crate::plot::chart::esc;

use crate::explain::Explained;

/// The charts, each drawn only when some record has its figure.
const CHARTS: [(&str, &str); 4] = [
    ("chart-kv-cache", "server_metrics.kv_cache_usage_ratio.peak"),
    ("chart-waiting", "server_metrics.waiting_requests.mean"),
    ("chart-gpu-power", "gpu.power_w.mean"),
    ("chart-energy-per-token", "gpu.energy_per_output_token_j"),
];

/// The section, or nothing when the records say nothing of the server.
pub(crate) fn section(a: &Analysis, e: &Explained, sfx: &str) -> String {
    let drawn: Vec<&(&str, &str)> = CHARTS
        .iter()
        .filter(|(_, path)| {
            a.records
                .iter()
                .flatten()
                .flatten()
                .any(|r| lookup(r, path).is_some())
        })
        .collect();
    if e.is_empty() && drawn.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "<section id=\"server{sfx}\"><h2>What the server saw</h2>\n<p class=\"legend\">From \
         the server's own /metrics during each level (KV cache peak, mean queue) and, with \
         loadgen --gpu-metrics, the GPUs'; capacity as the server reported it once ready.</p>\n"
    );
    let list = |out: &mut String, id: &str, items: &[String]| {
        if items.is_empty() {
            return;
        }
        let _ = writeln!(out, "<ul id=\"{id}{sfx}\">");
        for i in items {
            let _ = writeln!(out, "<li>{}</li>", esc(i));
        }
        out.push_str("</ul>\n");
    };
    list(&mut out, "server-capacity", &e.capacity);
    list(&mut out, "server-notes", &e.notes);
    if let Some(l) = &e.absent {
        let _ = writeln!(out, "<p class=\"warn\">{}</p>", esc(l));
    }
    out += "<div class=\"charts\">\n";
    for (id, path) in drawn {
        out += &by_level(a, id, path);
    }
    out += "</div></section>\n";
    out
}
