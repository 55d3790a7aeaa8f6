//! summarize's schedule record: a per-load speculative schedule for the server.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use super::shared::Provenance;

/// `summarize --schedule vllm|sglang`'s result: from a sweep over one
/// speculative depth at two or more concurrency levels, the server's own
/// per-load schedule (summarize(1) SCHEDULE), with the flags that set it.
/// It has no `config`: it is a choice among the swept configs per level.
/// summarize skips it when reading it back; no other tool reads it.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScheduleRecord {
    pub schema: u32,
    /// The metric the depths were chosen on, e.g.
    /// `throughput.output_tok_per_s`.
    pub metric: String,
    /// Each level's choice, in ascending concurrency.
    pub per_level: Vec<ScheduleLevel>,
    /// The server's max batch: the last range runs to it.
    pub max_batch: u64,
    /// Where `max_batch` came from, for people: `--max-batch`, the records
    /// (the server's max running requests or `--max-num-seqs`), or the
    /// server's default.
    pub max_batch_source: String,
    /// The swept config keys the flags replace: a tool applying `flags`
    /// removes these flags.
    pub replaces: Vec<String>,
    /// Warnings a human should act on (levels within noise, levels above
    /// the max batch left out, the depth cap: where the deepest depth
    /// waited for KV and each cap's score, summarize(1) "Depth cap"), also
    /// printed on stderr.
    pub warnings: Vec<String>,
    /// True when any input came from llm-sim.
    pub simulated: bool,
    /// The server the schedule is for.
    pub server: ScheduleServer,
    /// The server flags that set the schedule, as words. vLLM:
    /// `--speculative-config` and the JSON of `speculative_config`. SGLang:
    /// the swept algorithm and draft, `--speculative-eagle-topk 1`,
    /// `--speculative-num-steps` (the lowest level's choice),
    /// `--speculative-adaptive`, `--speculative-adaptive-config` and
    /// `adaptive_config_file`.
    pub flags: Vec<String>,
    /// vLLM only: the complete `--speculative-config` as an object; vLLM's
    /// own JSON, kept free-form (the swept settings pass through): the
    /// swept method and draft settings,
    /// `num_speculative_tokens` = the largest depth used, and
    /// `num_speculative_tokens_per_batch_size`, inclusive `[range_start,
    /// range_end, k]` (vllm/config/speculative.py).
    pub speculative_config: Option<serde_json::Map<String, Value>>,
    /// SGLang only: the file `--speculative-adaptive-config` reads, SGLang's
    /// own format: each level's lowest batch size (a string key, `"1"`,
    /// `"16"`) -> `{"candidate_steps": [...]}`, the choice plus every depth
    /// within tolerance or noise of the best there
    /// (python/sglang/srt/speculative/adaptive_spec_params.py).
    pub adaptive_config: Option<BTreeMap<BatchSize, AdaptiveSlot>>,
    /// SGLang only: where the flags say `adaptive_config` is to be written
    /// (`--adaptive-config-file`).
    pub adaptive_config_file: Option<String>,
    pub provenance: Provenance,
}

/// The server a schedule is for (`summarize --schedule`, `sweep
/// --schedule`): the one list of the servers with a per-load schedule.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "args", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum ScheduleServer {
    Vllm,
    Sglang,
}

impl ScheduleServer {
    /// Its name, as records and the flags spell it.
    pub fn name(self) -> &'static str {
        match self {
            ScheduleServer::Vllm => "vllm",
            ScheduleServer::Sglang => "sglang",
        }
    }
}

/// One level's choice in a schedule.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ScheduleLevel {
    /// The level's label, e.g. `c=16`.
    pub level: String,
    /// Its concurrency (requests in flight).
    pub concurrency: u64,
    /// The first batch size the choice holds for (1 for the lowest level).
    pub batch_from: u64,
    /// The last batch size it holds for (inclusive): the next level's
    /// batch size - 1, the last level's the max batch.
    pub batch_to: u64,
    /// The depth chosen: draft tokens (vLLM) or steps (SGLang); 0 is
    /// speculation off.
    pub k: u32,
    /// The chosen config's label in summarize's table.
    pub config: String,
    /// The chosen config's score there, in the unit of `metric`.
    pub score: f64,
    /// Depths within tolerance or noise of the best there, sorted (has `k`).
    pub close: Vec<u32>,
    /// The depth the choice was decided against; `null` when it had none.
    pub rival_k: Option<u32>,
    /// That depth's score, in the unit of `metric`; `null` with `rival_k`.
    pub rival_score: Option<f64>,
    /// True when the choice is within noise of the rival (repeats spread
    /// wider than the gap).
    pub within_noise: bool,
}

/// One slot of SGLang's adaptive config file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AdaptiveSlot {
    /// The steps SGLang may move among at these batch sizes.
    pub candidate_steps: Vec<u32>,
}

/// A batch size as a JSON object key (`"16"`), ordered as a number: the
/// keys of SGLang's adaptive config. (serde reads integer keys back only
/// through serde_json's own map, not inside a tagged [`Record`].)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct BatchSize(pub u64);

impl Serialize for BatchSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for BatchSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.trim().parse().map(BatchSize).map_err(|_| {
            serde::de::Error::custom(format!("batch size {text:?} is not a whole number"))
        })
    }
}
