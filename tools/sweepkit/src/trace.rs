//! A request trace (loadgen `--trace FILE`, sweep `--validate-on FILE`): read to replay at its recorded
//! times. Two line formats, told apart per line:
//! - Mooncake (`timestamp` ms, `input_length`, `output_length`,
//!   `hash_ids`): each hash id is one block of `--block-size` tokens, the
//!   last block cut to what `input_length` leaves, as AIPerf checks it
//!   (src/aiperf/dataset/generator/prompt.py `_build_token_sequence`: the
//!   final block must hold more than 0 and at most block_size tokens);
//!   AIPerf's docs/benchmark_modes/trace_replay.md names the fields.
//! - plain JSONL: `timestamp` ms with `prompt` (text) or `messages` (chat),
//!   `output_tokens` or `output_length` optional.
//!
//! Every problem is one error naming the line; the whole file is checked
//! before anything is sent.

use std::time::Duration;

use serde_json::{Map, Value};

/// The tokens a Mooncake hash id stands for unless `--block-size` says
/// otherwise (Mooncake's traces and AIPerf's default; vLLM's timed trace
/// loader defaults to 16, which silently shortens Mooncake prompts).
pub const DEFAULT_BLOCK_SIZE: u64 = 512;

/// What one trace line asks to send.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// Mooncake: `input_length` tokens made of the blocks of `hash_ids`.
    Blocks {
        input_length: u64,
        hash_ids: Vec<u64>,
    },
    /// Plain JSONL `prompt`.
    Text(String),
    /// Plain JSONL `messages` (a chat request as recorded).
    Messages(Value),
}

/// One request of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// 1-based line number in the file, for errors and records.
    pub line: usize,
    /// `timestamp`, milliseconds on the trace's own clock.
    pub at_ms: f64,
    pub input: Input,
    pub output_tokens: Option<u64>,
}

/// The parsed trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub entries: Vec<Entry>,
    /// `mooncake` when any line has `hash_ids`, else `jsonl`.
    pub kind: &'static str,
}

/// A bad trace: the line and what is wrong with it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct TraceError {
    pub line: usize,
    pub what: String,
}

fn bad(line: usize, what: impl Into<String>) -> TraceError {
    TraceError {
        line,
        what: what.into(),
    }
}

/// Parse and check a whole trace; `block_size` sizes Mooncake blocks.
pub fn parse(text: &str, block_size: u64) -> Result<Trace, TraceError> {
    let mut entries: Vec<Entry> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(raw).map_err(|e| bad(line, format!("not a JSON object ({e})")))?;
        let Value::Object(obj) = v else {
            return Err(bad(line, "not a JSON object"));
        };
        if obj.contains_key("session_id") {
            // Replayed as independent requests, a session's turns would
            // lose their history: say where they belong.
            return Err(bad(
                line,
                "has a \"session_id\": replay multi-turn sessions with --sessions FILE",
            ));
        }
        let e = entry(line, &obj, block_size)?;
        if let Some(prev) = entries.last() {
            if e.at_ms < prev.at_ms {
                return Err(bad(
                    line,
                    format!(
                        "timestamp {} ms goes back from line {}'s {} ms; sort the trace \
                         by timestamp",
                        e.at_ms, prev.line, prev.at_ms
                    ),
                ));
            }
        }
        entries.push(e);
    }
    if entries.is_empty() {
        return Err(bad(0, "no requests in the trace"));
    }
    let kind = if entries
        .iter()
        .any(|e| matches!(e.input, Input::Blocks { .. }))
    {
        "mooncake"
    } else {
        "jsonl"
    };
    Ok(Trace { entries, kind })
}

fn entry(line: usize, obj: &Map<String, Value>, block_size: u64) -> Result<Entry, TraceError> {
    let at_ms = match obj.get("timestamp") {
        Some(Value::Number(n)) => n.as_f64().unwrap_or(f64::NAN),
        Some(other) => return Err(bad(line, format!("\"timestamp\" {other} is not a number"))),
        None => return Err(bad(line, "no \"timestamp\" (milliseconds)")),
    };
    if !(at_ms.is_finite() && at_ms >= 0.0) {
        return Err(bad(line, format!("timestamp {at_ms} ms is negative")));
    }
    let output_tokens = output_tokens(line, obj)?;
    let input = input(line, obj, block_size)?;
    Ok(Entry {
        line,
        at_ms,
        input,
        output_tokens,
    })
}

fn input(line: usize, obj: &Map<String, Value>, block_size: u64) -> Result<Input, TraceError> {
    if let Some((input_length, hash_ids)) = blocks(line, obj, block_size)? {
        return Ok(Input::Blocks {
            input_length,
            hash_ids,
        });
    }
    if let Some(len) = obj.get("input_length") {
        // Checked so a negative length is named as such, not as a missing id list.
        count(line, "input_length", len)?;
        return Err(bad(
            line,
            "\"input_length\" without \"hash_ids\": give the blocks it is made of",
        ));
    }
    match (obj.get("prompt"), obj.get("messages")) {
        (Some(Value::String(p)), _) => Ok(Input::Text(p.clone())),
        (Some(_), _) => Err(bad(line, "\"prompt\" is not a string")),
        (None, Some(m @ Value::Array(a))) if !a.is_empty() => Ok(Input::Messages(m.clone())),
        (None, Some(_)) => Err(bad(line, "\"messages\" is not a non-empty array")),
        (None, None) => Err(bad(
            line,
            "no input: give \"hash_ids\" and \"input_length\" (Mooncake), \"prompt\" \
             or \"messages\"",
        )),
    }
}

/// A Mooncake line's `input_length` and `hash_ids`, checked to fit
/// `block_size`; None when it has no `hash_ids`.
pub fn blocks(
    line: usize,
    obj: &Map<String, Value>,
    block_size: u64,
) -> Result<Option<(u64, Vec<u64>)>, TraceError> {
    let Some(ids) = obj.get("hash_ids") else {
        return Ok(None);
    };
    let len = obj
        .get("input_length")
        .ok_or_else(|| bad(line, "\"hash_ids\" without \"input_length\""))?;
    let input_length = count(line, "input_length", len)?;
    let hash_ids = hash_ids(line, ids)?;
    fits(line, input_length, hash_ids.len() as u64, block_size)?;
    Ok(Some((input_length, hash_ids)))
}

/// A whole, non-negative number of tokens.
/// A line's output length: `output_length` (Mooncake), else
/// `output_tokens`, else none given.
pub fn output_tokens(line: usize, obj: &Map<String, Value>) -> Result<Option<u64>, TraceError> {
    Ok(match (obj.get("output_length"), obj.get("output_tokens")) {
        (Some(v), _) => Some(count(line, "output_length", v)?),
        (None, Some(v)) => Some(count(line, "output_tokens", v)?),
        (None, None) => None,
    })
}

fn count(line: usize, field: &str, v: &Value) -> Result<u64, TraceError> {
    if let Some(n) = v.as_u64() {
        return Ok(n);
    }
    match v.as_f64() {
        Some(x) if x < 0.0 => Err(bad(line, format!("\"{field}\" {v} is negative"))),
        _ => Err(bad(line, format!("\"{field}\" {v} is not a whole number"))),
    }
}

fn hash_ids(line: usize, v: &Value) -> Result<Vec<u64>, TraceError> {
    let Some(a) = v.as_array() else {
        return Err(bad(line, "\"hash_ids\" is not an array"));
    };
    a.iter()
        .map(|x| {
            x.as_u64()
                .ok_or_else(|| bad(line, format!("hash id {x} is not a whole number >= 0")))
        })
        .collect()
}

/// `input_length` must fill every block but the last, and the last must
/// hold at least one token and at most a block.
pub(crate) fn fits(
    line: usize,
    input_length: u64,
    ids: u64,
    block_size: u64,
) -> Result<(), TraceError> {
    let room = ids.saturating_mul(block_size);
    if input_length > room {
        return Err(bad(
            line,
            format!(
                "input_length {input_length} needs {} hash_ids of {block_size} tokens, the \
                 line has {ids}; check --block-size (the trace's block size)",
                input_length.div_ceil(block_size)
            ),
        ));
    }
    if ids > 0 && input_length <= (ids - 1) * block_size {
        return Err(bad(
            line,
            format!(
                "input_length {input_length} leaves hash_ids' last block empty: {ids} \
                 blocks of {block_size} tokens need more than {} tokens; check --block-size",
                (ids - 1) * block_size
            ),
        ));
    }
    Ok(())
}

/// The part of the trace a level replays: entries whose timestamp lies in
/// `[start, end)` on the trace's clock, with times taken from the first
/// kept entry.
pub fn window(t: &Trace, start: Option<Duration>, end: Option<Duration>) -> Vec<Entry> {
    let lo = start.map_or(f64::NEG_INFINITY, |d| d.as_secs_f64() * 1e3);
    let hi = end.map_or(f64::INFINITY, |d| d.as_secs_f64() * 1e3);
    t.entries
        .iter()
        .filter(|e| e.at_ms >= lo && e.at_ms < hi)
        .cloned()
        .collect()
}

/// Burstiness of arrivals: the coefficient of variation of the gaps
/// between sends (standard deviation over mean; 1 for Poisson arrivals,
/// 0 for a steady pace, above 1 for bursts). None with fewer than two gaps.
pub fn arrival_cv(times_s: &[f64]) -> Option<f64> {
    let gaps: Vec<f64> = times_s.windows(2).map(|w| w[1] - w[0]).collect();
    if gaps.len() < 2 {
        return None;
    }
    let n = gaps.len() as f64;
    let mean = gaps.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(var.sqrt() / mean)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse(text, 4).unwrap_err().to_string()
    }

    #[test]
    fn mooncake_and_plain_lines_parse() {
        let t = parse(
            "{\"timestamp\":0,\"input_length\":6,\"output_length\":3,\"hash_ids\":[7,8]}\n\n\
             {\"timestamp\":5.5,\"prompt\":\"hi\"}\n\
             {\"timestamp\":9,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"output_tokens\":2}\n",
            4,
        )
        .unwrap();
        assert_eq!(t.kind, "mooncake");
        assert_eq!(t.entries.len(), 3);
        assert_eq!(
            t.entries[0].input,
            Input::Blocks {
                input_length: 6,
                hash_ids: vec![7, 8]
            }
        );
        assert_eq!(t.entries[1].line, 3);
        assert_eq!(t.entries[2].output_tokens, Some(2));
        assert_eq!(t.entries[1].at_ms, 5.5);
    }

    #[test]
    fn bad_traces_name_the_line() {
        assert!(
            err("{\"timestamp\":0,\"prompt\":\"a\"}\nnot json\n").starts_with("line 2: not a JSON")
        );
        let back = err("{\"timestamp\":10,\"prompt\":\"a\"}\n{\"timestamp\":9,\"prompt\":\"b\"}");
        assert!(
            back.starts_with("line 2: timestamp 9 ms goes back from line 1's 10 ms"),
            "{back}"
        );
        let neg = err("{\"timestamp\":0,\"input_length\":-3,\"hash_ids\":[1]}");
        assert!(
            neg.starts_with("line 1: \"input_length\" -3 is negative"),
            "{neg}"
        );
        let neg_out = err("{\"timestamp\":0,\"prompt\":\"a\",\"output_length\":-1}");
        assert!(
            neg_out.contains("\"output_length\" -1 is negative"),
            "{neg_out}"
        );
        let few = err("{\"timestamp\":0,\"input_length\":9,\"hash_ids\":[1,2]}");
        assert!(
            few.starts_with("line 1: input_length 9 needs 3 hash_ids of 4 tokens, the line has 2"),
            "{few}"
        );
        let many = err("{\"timestamp\":0,\"input_length\":4,\"hash_ids\":[1,2]}");
        assert!(many.contains("last block empty"), "{many}");
        assert!(err("{\"timestamp\":-1,\"prompt\":\"a\"}").contains("negative"));
        assert!(err("{\"prompt\":\"a\"}").contains("no \"timestamp\""));
        assert!(err("\n\n").contains("no requests"));
    }

    #[test]
    fn window_keeps_the_range_and_cv_measures_bursts() {
        let t = parse(
            &(0..10)
                .map(|i| format!("{{\"timestamp\":{},\"prompt\":\"p\"}}\n", i * 1000))
                .collect::<String>(),
            4,
        )
        .unwrap();
        let w = window(
            &t,
            Some(Duration::from_secs(2)),
            Some(Duration::from_secs(5)),
        );
        assert_eq!(w.iter().map(|e| e.line).collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(w[2].at_ms - w[0].at_ms, 2000.0);
        assert_eq!(arrival_cv(&[0.0, 1.0, 2.0, 3.0]), Some(0.0));
        let bursty = arrival_cv(&[0.0, 0.01, 0.02, 3.0, 3.01, 3.02, 6.0]).unwrap();
        assert!(bursty > 1.0, "{bursty}");
    }
}
