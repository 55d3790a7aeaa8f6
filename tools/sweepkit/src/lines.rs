//! The line formats that are not records: `loadgen --requests-out` lines
//! and `summarize --format csv` rows. They carry no `type` tag and no tool
//! reads them back, but they are data too, so they are typed here and
//! documented in sweepkit-records(5) LINE FORMATS (generated from this file
//! beside records/).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The line formats that are not records (no `type` tag): the struct each
/// is, listed once for the man page (section LINE FORMATS).
pub const LINE_FORMATS: [(&str, &str); 2] = [
    ("loadgen --requests-out line", "RequestLine"),
    ("summarize --format csv row", "SummaryRow"),
];

/// One request, as `loadgen --requests-out FILE` writes it: one JSON line
/// per request, each level's lines written when the level ends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RequestLine {
    /// The level's label (`c=16`, `rate=4`; `c=16#2` under `--repeat`).
    pub level: String,
    /// The request's number in the run (0-based, counted across levels).
    pub index: u64,
    /// True when the request completed without error.
    pub ok: bool,
    /// Seconds from the level's start to the send.
    pub sent_s: f64,
    /// Time the request waited in the client before it was sent.
    pub queue_ms: f64,
    /// Send to last byte (or to the failure).
    pub e2e_ms: f64,
    /// Content chunks received.
    pub chunks: u64,
    /// `--sessions`: the session this request belongs to (its number in
    /// the file, 0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u32>,
    /// `--sessions`: the turn in its session (0-based; 0 is the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Present when the request failed.
    #[serde(flatten)]
    pub failed: Option<RequestFailure>,
    /// Present when the request completed.
    #[serde(flatten)]
    pub completed: Option<RequestFigures>,
}

/// Why one request failed (`--requests-out`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RequestFailure {
    /// The failure kind, as counted in the bench record's `errors`.
    pub error: String,
    /// What was seen (HTTP body, connect error); `null` when nothing more.
    pub detail: Option<String>,
}

/// One completed request's figures (`--requests-out`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RequestFigures {
    /// Send to first content chunk; `null` without streaming.
    pub ttft_ms: Option<f64>,
    /// (E2E - TTFT) / (output tokens - 1); `null` below two tokens.
    pub tpot_ms: Option<f64>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// True when the token count was not from the server's usage.
    pub usage_missing: bool,
    /// True when it stopped before max_tokens.
    pub early_stop: bool,
    /// The server's `finish_reason` (`length`, `stop`), `null` if none.
    pub finish_reason: Option<String>,
    /// Present when the server reported per-request timings (llama.cpp's
    /// and llm-sim's `timings`).
    #[serde(flatten)]
    pub timings: Option<RequestTimings>,
}

/// A server's own per-request timings (llama.cpp `timings`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct RequestTimings {
    /// Draft tokens proposed (`timings.draft_n`).
    pub draft_n: Option<u64>,
    /// Draft tokens accepted (`timings.draft_n_accepted`).
    pub draft_n_accepted: Option<u64>,
    /// Prompt processing time as the server measured it.
    pub server_prompt_ms: Option<f64>,
}

/// One row of `summarize --format csv`: one per (config, level) cell, in
/// long form; CSV columns are these fields flattened with dots
/// (`config.speculative-num-steps`). The summary record's `details.cells`
/// holds the same rows as JSON.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SummaryRow {
    /// The config's varying parameters (`null`: the config did not set it).
    pub config: BTreeMap<String, Option<String>>,
    /// The config as the table labels it.
    pub label: String,
    /// The level (`c=16`, `rate=4`).
    pub level: String,
    /// The metric's dotted path.
    pub metric: String,
    /// Measured runs of this cell (repeats); 0: none measured.
    pub runs: u64,
    /// Present when the cell was measured.
    #[serde(flatten)]
    pub measured: Option<SummaryCell>,
    /// What failed in this cell (`OOM at load`; several joined by `/`);
    /// empty when nothing failed.
    pub failure: String,
    /// A figure that is not the level's own (SGLang's lifetime acceptance
    /// average), beside the cell; `null` when there is none. Present only
    /// when some cell has one.
    #[serde(flatten)]
    pub aside: Option<SummaryAside>,
    /// True when any input came from llm-sim (CSV only; the summary
    /// record's `details.cells` are these rows without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub simulated: Option<bool>,
    /// The host the cell was measured on, when summarize shows per-host
    /// tables (results from hosts of different hardware); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A measured cell's figures (`summarize --format csv`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SummaryCell {
    /// Median of the runs.
    pub median: f64,
    /// The conservative score: the median moved against the user by
    /// 1.4826 x MAD (one run: the value).
    pub score: f64,
    /// Spread of the runs: max - min (0 for one run).
    pub spread: f64,
    /// Change against the baseline in percent; `null` when none.
    pub change_pct: Option<f64>,
    /// True when this config is the best at this level.
    pub best: bool,
    /// True when a run was cut short (absent otherwise).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// Whether the cell met every `--slo` (absent without `--slo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_ok: Option<bool>,
}

/// A figure beside a cell (`summarize --format csv`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SummaryAside {
    pub not_per_level: Option<f64>,
    /// Where it came from (`lifetime_average`, `gauge`).
    pub not_per_level_source: Option<String>,
}
