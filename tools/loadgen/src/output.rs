//! Writing results: JSON records per level (flushed as each level ends),
//! CSV through `sweepkit::flat` (never by hand), a Markdown table for
//! people, and per-request JSON lines for `--requests-out`.

use std::io::Write;

use serde_json::{json, Value};
use sweepkit::records::{BenchRecord, Record};

use crate::args::Format;
use crate::client::{kind_name, Sample};
use crate::metrics::{ms, Derived};

/// Records kept for the formats that need all levels before writing.
pub struct Sink<W: Write> {
    pub out: W,
    pub format: Format,
    pending: Vec<Value>,
}

impl<W: Write> Sink<W> {
    pub fn new(out: W, format: Format) -> Self {
        Sink {
            out,
            format,
            pending: Vec::new(),
        }
    }

    /// JSON: write now (one line, flushed). Others: keep for `finish`.
    pub fn record(&mut self, rec: &Record) -> std::io::Result<()> {
        match self.format {
            Format::Json => sweepkit::io::write_record(&mut self.out, rec),
            _ => {
                self.pending
                    .push(serde_json::to_value(rec).map_err(std::io::Error::other)?);
                Ok(())
            }
        }
    }

    pub fn finish(&mut self) -> std::io::Result<()> {
        match self.format {
            Format::Json => Ok(()),
            Format::Csv => {
                sweepkit::flat::write_csv(&mut self.out, &self.pending)
                    .map_err(std::io::Error::other)?;
                self.out.flush()
            }
            Format::Markdown => {
                let text = markdown(&self.pending);
                self.out.write_all(text.as_bytes())?;
                self.out.flush()
            }
        }
    }
}

fn cell(v: &Value, path: &[&str]) -> String {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(x) => cur = x,
            None => return "-".into(),
        }
    }
    match cur {
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(0.0);
            if f.fract() == 0.0 {
                format!("{f:.0}")
            } else {
                format!("{f:.2}")
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A Markdown table: one row per level (failure records say why).
pub fn markdown(recs: &[Value]) -> String {
    let cols: [(&str, &[&str]); 13] = [
        ("conc", &["load", "concurrency"]),
        ("rate", &["load", "rate_rps"]),
        ("ok", &["counts", "completed"]),
        ("failed", &["counts", "failed"]),
        ("req/s", &["throughput", "requests_per_s"]),
        ("out tok/s", &["throughput", "output_tok_per_s"]),
        ("TTFT p50", &["ttft_ms", "p50"]),
        ("TTFT p99", &["ttft_ms", "p99"]),
        ("TPOT p50", &["tpot_ms", "p50"]),
        ("ITL p50", &["itl_ms", "p50"]),
        ("ITL p99", &["itl_ms", "p99"]),
        ("E2E p50", &["e2e_ms", "p50"]),
        ("accept", &["spec", "acceptance_rate"]),
    ];
    let mut s = String::from("|");
    for (name, _) in &cols {
        s.push_str(&format!(" {name} |"));
    }
    s.push_str("\n|");
    for _ in &cols {
        s.push_str("---:|");
    }
    s.push('\n');
    for r in recs {
        if r.get("type").and_then(Value::as_str) == Some("failure") {
            s.push_str(&format!("| failure: {} |\n", cell(r, &["reason"])));
            continue;
        }
        s.push('|');
        for (_, path) in &cols {
            s.push_str(&format!(" {} |", cell(r, path)));
        }
        s.push('\n');
    }
    s
}

/// One `--requests-out` line for a request.
pub fn request_line(
    level: &str,
    started: std::time::Instant,
    s: &Sample,
    d: Option<&Derived>,
) -> Value {
    let mut v = json!({
        "level": level,
        "index": s.index,
        "ok": s.error.is_none(),
        "sent_s": (ms(started, s.sent) / 1000.0),
        "queue_ms": ms(s.scheduled, s.sent),
        "e2e_ms": ms(s.sent, s.done),
        "chunks": s.chunks.len(),
    });
    if let Some(k) = &s.error {
        v["error"] = json!(kind_name(k));
        v["detail"] = json!(s.detail);
    }
    if let Some(d) = d {
        v["ttft_ms"] = json!(d.ttft_ms);
        v["tpot_ms"] = json!(d.tpot_ms);
        v["input_tokens"] = json!(d.input_tokens);
        v["output_tokens"] = json!(d.output_tokens);
        v["usage_missing"] = json!(d.usage_missing);
        v["early_stop"] = json!(d.early_stop);
        v["finish_reason"] = json!(s.finish_reason);
        if let Some(t) = s.timings {
            v["draft_n"] = json!(t.draft_n);
            v["draft_n_accepted"] = json!(t.draft_n_accepted);
            v["server_prompt_ms"] = json!(t.prompt_ms);
        }
    }
    v
}

/// The short label of a level (`c=16`, `rate=4`).
pub fn label(b: &BenchRecord) -> String {
    let base = match (b.load.concurrency, b.load.rate_rps) {
        (Some(c), _) => format!("c={c}"),
        (_, Some(r)) => format!("rate={r}"),
        _ => "level".into(),
    };
    match b.load.repeat {
        Some(i) => format!("{base}#{i}"),
        None => base,
    }
}
