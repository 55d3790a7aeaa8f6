//! Writing results: JSON records per level (flushed as each level ends),
//! CSV through `sweepkit::flat` (never by hand), a Markdown table for
//! people, and per-request JSON lines for `--requests-out`.

use std::io::Write;

use serde_json::Value;
use sweepkit::lines::{RequestFailure, RequestFigures, RequestLine, RequestTimings};
use sweepkit::records::{BenchRecord, Record};

use crate::cli::Format;
use crate::client::{kind_name, Sample};
use crate::per_request::{ms, Derived};

/// Records kept for the formats that need all levels before writing.
pub struct Sink<W: Write> {
    pub out: W,
    pub format: Format,
    pending: Vec<Record>,
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
                self.pending.push(rec.clone());
                Ok(())
            }
        }
    }

    pub fn finish(&mut self) -> std::io::Result<()> {
        match self.format {
            Format::Json => Ok(()),
            Format::Csv => {
                let rows = self
                    .pending
                    .iter()
                    .map(serde_json::to_value)
                    .collect::<Result<Vec<Value>, _>>()
                    .map_err(std::io::Error::other)?;
                sweepkit::flat::write_csv(&mut self.out, &rows).map_err(std::io::Error::other)?;
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

/// A number as a table cell: whole numbers bare, else two decimals.
fn number(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(f) if f.fract() == 0.0 => format!("{f:.0}"),
        Some(f) => format!("{f:.2}"),
    }
}

/// A Markdown column: its header and the field it shows, read from the
/// typed record, so a renamed field does not compile rather than go blank.
type Column = (&'static str, fn(&BenchRecord) -> Option<f64>);

const COLUMNS: [Column; 13] = [
    ("conc", |b| b.load.concurrency.map(f64::from)),
    ("rate", |b| b.load.rate_rps),
    ("ok", |b| Some(b.counts.completed as f64)),
    ("failed", |b| Some(b.counts.failed as f64)),
    ("req/s", |b| Some(b.throughput.requests_per_s)),
    ("out tok/s", |b| Some(b.throughput.output_tok_per_s)),
    ("TTFT p50", |b| Some(b.latency.ttft_ms.p50)),
    ("TTFT p99", |b| Some(b.latency.ttft_ms.p99)),
    ("TPOT p50", |b| Some(b.latency.tpot_ms.p50)),
    ("ITL p50", |b| Some(b.latency.itl_ms.p50)),
    ("ITL p99", |b| Some(b.latency.itl_ms.p99)),
    ("E2E p50", |b| Some(b.latency.e2e_ms.p50)),
    ("accept", |b| {
        b.spec.as_ref().and_then(|s| s.acceptance_rate)
    }),
];

/// A Markdown table: one row per level (failure records say why).
pub fn markdown(recs: &[Record]) -> String {
    let mut s = String::from("|");
    for (name, _) in &COLUMNS {
        s.push_str(&format!(" {name} |"));
    }
    s.push_str("\n|");
    for _ in &COLUMNS {
        s.push_str("---:|");
    }
    s.push('\n');
    for r in recs {
        match r {
            Record::Bench(b) => {
                s.push('|');
                for (_, get) in &COLUMNS {
                    s.push_str(&format!(" {} |", number(get(b))));
                }
                s.push('\n');
            }
            Record::Failure(f) => s.push_str(&format!("| failure: {} |\n", f.reason)),
            _ => {}
        }
    }
    s
}

/// One `--requests-out` line for a request (sweepkit-records(5)).
pub fn request_line(
    level: &str,
    started: std::time::Instant,
    s: &Sample,
    d: Option<&Derived>,
) -> RequestLine {
    RequestLine {
        level: level.to_string(),
        index: s.index,
        ok: s.error.is_none(),
        sent_s: ms(started, s.sent) / 1000.0,
        queue_ms: ms(s.scheduled, s.sent),
        e2e_ms: ms(s.sent, s.done),
        chunks: s.chunks.len() as u64,
        session: s.turn.map(|t| t.session),
        turn: s.turn.map(|t| t.turn),
        failed: s.error.as_ref().map(|k| RequestFailure {
            error: kind_name(k),
            detail: s.detail.clone(),
        }),
        completed: d.map(|d| RequestFigures {
            ttft_ms: d.ttft_ms,
            tpot_ms: d.tpot_ms,
            input_tokens: d.input_tokens,
            output_tokens: d.output_tokens,
            usage_missing: d.usage_missing,
            early_stop: d.early_stop,
            finish_reason: s.finish_reason.clone(),
            timings: s.timings.map(|t| RequestTimings {
                draft_n: t.draft_n,
                draft_n_accepted: t.draft_n_accepted,
                server_prompt_ms: t.prompt_ms,
            }),
        }),
    }
}

/// The short label of a level (`c=16`, `rate=4`).
pub fn label(b: &BenchRecord) -> String {
    let speed = b.load.workload.as_ref().and_then(|w| w.speed);
    let base = match (b.load.concurrency, b.load.rate_rps) {
        _ if speed.is_some() => format!("trace speed={}", speed.unwrap_or(1.0)),
        (Some(c), _) => format!("c={c}"),
        (_, Some(r)) => format!("rate={r}"),
        _ => "level".into(),
    };
    match b.load.repeat {
        Some(i) => format!("{base}#{i}"),
        None => base,
    }
}
