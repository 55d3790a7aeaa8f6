//! Conversations for `--sessions`: a ShareGPT JSON array (`conversations`
//! of `from`/`value`) or JSONL with one conversation per line
//! (`conversations`, or `messages` of `role`/`content`, as vLLM's
//! benchmarks/multi_turn reads them). Leading system messages are kept;
//! then user and assistant messages alternate. Each user message is a
//! turn; a recorded assistant reply is never sent, only its length asks
//! for the turn's output (as vLLM's ShareGPT loader does). A line may give
//! the session's start as `timestamp` ms (open-loop replay).

use serde_json::Value;

use crate::prompts::approx_tokens;
use crate::session::{
    bad, message, role, Gap, Session, SessionError, SessionFile, Turn, UserInput,
};

/// Parse a conversations file: a JSON array, or one object per line.
pub fn parse(text: &str) -> Result<SessionFile, SessionError> {
    let mut sessions = Vec::new();
    if text.trim_start().starts_with('[') {
        let all: Vec<Value> = serde_json::from_str(text)
            .map_err(|e| SessionError(format!("not a JSON array of conversations ({e})")))?;
        for (i, c) in all.iter().enumerate() {
            let at = Where::Item(i + 1);
            sessions.push(conversation(at, c)?);
        }
    } else {
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let at = Where::Line(i + 1);
            let v: Value = serde_json::from_str(raw)
                .map_err(|e| at.error(format!("not a JSON object ({e})")))?;
            sessions.push(conversation(at, &v)?);
        }
    }
    Ok(SessionFile {
        source: "conversations",
        sessions,
    })
}

/// Where a conversation is: a JSONL line, or an item of a JSON array.
#[derive(Clone, Copy)]
enum Where {
    Line(usize),
    Item(usize),
}

impl Where {
    fn number(self) -> usize {
        match self {
            Where::Line(n) | Where::Item(n) => n,
        }
    }

    fn error(self, what: String) -> SessionError {
        match self {
            Where::Line(n) => bad(n, what),
            // The array's items have no lines of their own: name the item.
            Where::Item(n) => SessionError(format!("conversation {n}: {what}")),
        }
    }
}

/// One conversation as a session; Err says what is wrong with it, and
/// where.
fn conversation(at: Where, v: &Value) -> Result<Session, SessionError> {
    let msgs = v
        .get("conversations")
        .or_else(|| v.get("messages"))
        .and_then(Value::as_array)
        .ok_or_else(|| at.error("no \"conversations\" or \"messages\" array".into()))?;
    let mut s = empty_session(at, v)?;
    let mut last = "system";
    for (k, m) in msgs.iter().enumerate() {
        let r =
            role(m).ok_or_else(|| at.error(format!("message {}: unknown role in {m}", k + 1)))?;
        let content = m
            .get("content")
            .or_else(|| m.get("value"))
            .cloned()
            .unwrap_or(Value::Null);
        match (last, r) {
            ("system", "system") => s.system.push(message("system", content)),
            ("system" | "assistant", "user") => s.turns.push(Turn {
                line: at.number(),
                input: user_input(content),
                output_tokens: None,
                gap: if s.turns.is_empty() {
                    Gap::First
                } else {
                    Gap::Think(None)
                },
            }),
            ("user", "assistant") => {
                if let Some(t) = s.turns.last_mut() {
                    let text = content.as_str().unwrap_or_default();
                    t.output_tokens = Some(approx_tokens(text));
                }
            }
            (prev, now) => {
                return Err(at.error(format!(
                    "turns out of order: message {} is {now} after {prev}; after system \
                     messages, user and assistant messages alternate",
                    k + 1
                )))
            }
        }
        last = r;
    }
    if s.turns.is_empty() {
        return Err(at.error("no user turn".into()));
    }
    Ok(s)
}

/// The session a conversation starts: its `id` (else its number) and
/// `timestamp`, no turns yet.
fn empty_session(at: Where, v: &Value) -> Result<Session, SessionError> {
    let id = match v.get("id").or_else(|| v.get("session_id")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => at.number().to_string(),
    };
    let start_ms = match v.get("timestamp") {
        None => None,
        Some(t) => match t.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Some(x),
            _ => return Err(at.error(format!("\"timestamp\" {t} is not a time >= 0 (ms)"))),
        },
    };
    Ok(Session {
        id,
        start_ms,
        system: Vec::new(),
        turns: Vec::new(),
    })
}

fn user_input(content: Value) -> UserInput {
    match content {
        Value::String(t) => UserInput::Text(t),
        other => UserInput::Messages(vec![message("user", other)]),
    }
}
