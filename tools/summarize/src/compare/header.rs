//! What each side of a comparison is (label, server, model, hardware,
//! when) and how the sides differ: a different server version or GPU is
//! usually the point of the comparison, so it is said, never refused.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::load::{field_text, Matched, Side};

/// The facts a side is described by: (name, dotted path).
const FACTS: [(&str, &str); 6] = [
    ("label", "label"),
    ("server", "server.kind"),
    ("server version", "server.version"),
    ("model", "server.model"),
    ("hardware", "server.host.fingerprint"),
    ("loadgen version", "provenance.version"),
];

/// One side's value of each fact (several values joined by ` | `).
fn facts(side: &Side) -> Vec<(&'static str, Option<String>)> {
    FACTS
        .iter()
        .map(|(name, path)| {
            let vals: BTreeSet<String> =
                side.benches().filter_map(|r| field_text(r, path)).collect();
            let v = (!vals.is_empty()).then(|| vals.into_iter().collect::<Vec<_>>().join(" | "));
            (*name, v)
        })
        .collect()
}

/// The first and last day a side's records were written.
fn dates(side: &Side) -> Option<String> {
    let days: BTreeSet<String> = side
        .benches()
        .filter_map(|r| field_text(r, "provenance.started_at"))
        .map(|t| t.chars().take(10).collect())
        .collect();
    let first = days.iter().next()?;
    let last = days.iter().next_back()?;
    Some(if first == last {
        first.clone()
    } else {
        format!("{first}..{last}")
    })
}

/// The header: one line per side, then what differs, as text lines.
pub struct Header {
    pub lines: Vec<String>,
    pub json: Value,
}

pub fn of(before: &Side, after: &Side, m: &Matched) -> Header {
    let (fb, fa) = (facts(before), facts(after));
    let describe = |side: &Side, f: &[(&str, Option<String>)]| -> String {
        let mut parts = vec![format!("{} bench records", side.benches().count())];
        parts.extend(
            f.iter()
                .filter(|(n, _)| *n != "loadgen version")
                .filter_map(|(n, v)| Some(format!("{n} {}", v.as_ref()?))),
        );
        if let Some(d) = dates(side) {
            parts.push(format!("run {d}"));
        }
        parts.join(", ")
    };
    let mut lines = vec![
        format!("before: {}: {}", before.name, describe(before, &fb)),
        format!("after:  {}: {}", after.name, describe(after, &fa)),
    ];
    let mut differs: Vec<String> = fb
        .iter()
        .zip(&fa)
        .filter(|((n, _), _)| *n != "label")
        .filter(|((_, x), (_, y))| x != y)
        .map(|((n, x), (_, y))| {
            let t = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
            format!("{n} {} -> {}", t(x), t(y))
        })
        .collect();
    differs.extend(
        m.changed
            .iter()
            .map(|(k, x, y)| format!("config {k} {x} -> {y}")),
    );
    if !differs.is_empty() {
        lines.push(format!("differs: {}", differs.join("; ")));
    }
    if m.only_before + m.only_after > 0 {
        lines.push(format!(
            "not in both: {} config x level cells before only, {} after only (left out)",
            m.only_before, m.only_after
        ));
    }
    let side_json = |side: &Side, f: &[(&str, Option<String>)]| {
        let mut o = serde_json::Map::new();
        o.insert("name".into(), json!(side.name));
        o.insert("bench_records".into(), json!(side.benches().count()));
        for (n, v) in f {
            o.insert(n.replace(' ', "_"), json!(v));
        }
        o.insert("dates".into(), json!(dates(side)));
        Value::Object(o)
    };
    let json = json!({
        "before": side_json(before, &fb),
        "after": side_json(after, &fa),
        "differs": differs,
        "only_before": m.only_before,
        "only_after": m.only_after,
    });
    Header { lines, json }
}
