//! `--sessions FILE`: multi-turn sessions, read and checked before
//! anything is sent. Two kinds of file, told apart by their first line:
//! - a session trace: JSONL lines with a `session_id`, one user turn each,
//!   in the file's order within a session; AIPerf's mooncake_trace names
//!   these fields (aiperf/dataset/loader/models.py `MooncakeTrace`:
//!   `session_id`, `timestamp` ms, `delay` ms before the turn, and
//!   `input_length` + `hash_ids`, `text_input` or `messages`). A session's
//!   first `timestamp` is its start; a later turn waits `delay` ms after the
//!   previous reply ended, or is sent at its `timestamp` (not before that
//!   reply ended), else after `--think-time`.
//! - conversations (session_chat.rs): ShareGPT `conversations` or
//!   `messages` with several user turns.
//!
//! Each turn's request is the history so far, with the replies received
//! live, plus the turn's own messages: a file's recorded replies are never
//! sent (they only size the turn's output).

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use sweepkit::trace::{self, TraceError};

/// What a turn adds to the history before it is sent.
#[derive(Debug, Clone, PartialEq)]
pub enum UserInput {
    /// Text: `prompt`/`text_input`, or a user message's content.
    Text(String),
    /// Mooncake blocks: `input_length` tokens of the blocks of `hash_ids`.
    Blocks {
        input_length: u64,
        hash_ids: Vec<u64>,
    },
    /// Recorded messages (with at least one user message), appended as given.
    Messages(Vec<Value>),
}

/// When a turn is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Gap {
    /// The session's first turn: at the session's start.
    First,
    /// After the previous reply's end: `delay` ms, or None for
    /// `--think-time`.
    Think(Option<f64>),
    /// At `timestamp` ms on the trace's clock, not before the previous
    /// reply's end.
    At(f64),
}

/// One user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// Where it is in the file (1-based line; conversation number for a
    /// JSON array).
    pub line: usize,
    pub input: UserInput,
    /// Output tokens asked for: the trace's, or the recorded reply's
    /// length; None: `--max-tokens`.
    pub output_tokens: Option<u64>,
    pub gap: Gap,
}

/// One session: its system messages and user turns.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    /// The session's start, ms on the file's clock, when it has one.
    pub start_ms: Option<f64>,
    /// Leading system messages, sent first in every turn.
    pub system: Vec<Value>,
    pub turns: Vec<Turn>,
}

/// A sessions file, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionFile {
    /// `trace` or `conversations`.
    pub source: &'static str,
    pub sessions: Vec<Session>,
}

impl SessionFile {
    /// Every session has a start time: it can be replayed open loop.
    pub fn timed(&self) -> bool {
        self.sessions.iter().all(|s| s.start_ms.is_some())
    }

    pub fn turns(&self) -> usize {
        self.sessions.iter().map(|s| s.turns.len()).sum()
    }
}

/// A bad sessions file: where (`line N`, or `conversation N` of a JSON
/// array) and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SessionError(pub String);

impl From<TraceError> for SessionError {
    fn from(e: TraceError) -> Self {
        SessionError(e.to_string())
    }
}

/// The error for line `line`.
pub(crate) fn bad(line: usize, what: impl std::fmt::Display) -> SessionError {
    SessionError(format!("line {line}: {what}"))
}

/// A session trace: one turn per line, grouped by `session_id`.
pub fn parse_trace(text: &str, block_size: u64) -> Result<SessionFile, SessionError> {
    let mut sessions: Vec<Session> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let obj = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(o)) => o,
            Ok(_) => return Err(bad(line, "not a JSON object")),
            Err(e) => return Err(bad(line, format!("not a JSON object ({e})"))),
        };
        let id = match obj.get("session_id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            Some(other) => {
                return Err(bad(line, format!("\"session_id\" {other} is not a string")))
            }
            None => {
                return Err(bad(
                    line,
                    "no \"session_id\": every line of a session trace names its session",
                ))
            }
        };
        let k = *by_id.entry(id.clone()).or_insert_with(|| {
            sessions.push(Session {
                id,
                start_ms: None,
                system: Vec::new(),
                turns: Vec::new(),
            });
            sessions.len() - 1
        });
        add_trace_turn(&mut sessions[k], line, &obj, block_size)?;
    }
    Ok(SessionFile {
        source: "trace",
        sessions,
    })
}

/// Check one trace line and add it to its session.
fn add_trace_turn(
    s: &mut Session,
    line: usize,
    obj: &Map<String, Value>,
    block_size: u64,
) -> Result<(), SessionError> {
    let ms = |field: &str| -> Result<Option<f64>, SessionError> {
        match obj.get(field) {
            None => Ok(None),
            Some(v) => match v.as_f64() {
                Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
                Some(x) => Err(bad(line, format!("\"{field}\" {x} ms is negative"))),
                None => Err(bad(line, format!("\"{field}\" {v} is not a number (ms)"))),
            },
        }
    };
    let (at, delay) = (ms("timestamp")?, ms("delay")?);
    let gap = match (s.turns.is_empty(), at, delay) {
        (_, Some(_), Some(_)) => {
            return Err(bad(line, "both \"timestamp\" and \"delay\": give one"));
        }
        (true, _, Some(_)) => {
            return Err(bad(
                line,
                format!(
                    "session \"{}\"'s first turn has a \"delay\" but no reply to wait \
                     after: give its start as \"timestamp\"",
                    s.id
                ),
            ))
        }
        (true, at, None) => {
            s.start_ms = at;
            Gap::First
        }
        (false, Some(t), None) => {
            in_order(s, line, t)?;
            Gap::At(t)
        }
        (false, None, d) => Gap::Think(d),
    };
    let output_tokens = trace::output_tokens(line, obj)?;
    let input = trace_input(line, obj, block_size)?;
    s.turns.push(Turn {
        line,
        input,
        output_tokens,
        gap,
    });
    Ok(())
}

/// A later turn's `timestamp` must not go back from the session's last one.
fn in_order(s: &Session, line: usize, t: f64) -> Result<(), SessionError> {
    let last = s.turns.iter().rev().find_map(|u| match u.gap {
        Gap::At(x) => Some((x, u.line)),
        Gap::First => s.start_ms.map(|x| (x, u.line)),
        Gap::Think(_) => None,
    });
    match last {
        Some((x, prev)) if t < x => Err(bad(
            line,
            format!(
                "turns out of order: timestamp {t} ms goes back from line {prev}'s {x} ms in \
                 session \"{}\"",
                s.id
            ),
        )),
        _ => Ok(()),
    }
}

fn trace_input(
    line: usize,
    obj: &Map<String, Value>,
    block_size: u64,
) -> Result<UserInput, SessionError> {
    if let Some((input_length, hash_ids)) = trace::blocks(line, obj, block_size)? {
        return Ok(UserInput::Blocks {
            input_length,
            hash_ids,
        });
    }
    let text = obj.get("text_input").or_else(|| obj.get("prompt"));
    match (text, obj.get("messages")) {
        (Some(Value::String(t)), _) => Ok(UserInput::Text(t.clone())),
        (Some(_), _) => Err(bad(line, "\"text_input\"/\"prompt\" is not a string")),
        (None, Some(Value::Array(m))) => {
            let user = m.iter().any(|x| role(x) == Some("user"));
            if !user {
                return Err(bad(line, "no user turn: \"messages\" has no user message"));
            }
            Ok(UserInput::Messages(m.clone()))
        }
        (None, Some(_)) => Err(bad(line, "\"messages\" is not an array")),
        (None, None) => Err(bad(
            line,
            "no user turn: give \"hash_ids\" and \"input_length\", \"text_input\" or \
             \"messages\"",
        )),
    }
}

/// A message's role, ShareGPT's `from` names mapped to the OpenAI ones.
pub fn role(m: &Value) -> Option<&'static str> {
    let r = m.get("role").or_else(|| m.get("from"))?.as_str()?;
    match r {
        "user" | "human" => Some("user"),
        "assistant" | "gpt" | "chatgpt" | "bard" | "bing" | "model" => Some("assistant"),
        "system" => Some("system"),
        _ => None,
    }
}

/// A message as the chat API takes it: OpenAI role and `content`.
pub fn message(role: &str, content: Value) -> Value {
    json!({"role": role, "content": content})
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
