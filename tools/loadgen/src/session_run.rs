//! A sessions level's shared state (level/sessions.rs runs it): each
//! session's script, the request bodies, the think time. `History` builds
//! a turn's request from the session so far: system messages, every
//! earlier user turn and the reply received live to it, then the turn.

use std::time::Duration;

use serde_json::Value;

use crate::body::{Bodies, Prepared};
use crate::prompts::{approx_tokens, Prompt};
use crate::session::{message, Gap};

/// One turn, ready to add to a history.
#[derive(Debug, Clone)]
pub struct ScriptTurn {
    /// The chat messages it adds (a user message, or the recorded ones).
    pub messages: Vec<Value>,
    /// The same as text, for the completions and `/generate` endpoints.
    pub text: String,
    pub output_tokens: Option<u64>,
    pub gap: Gap,
}

/// One session, ready to run.
#[derive(Debug, Clone)]
pub struct Script {
    /// The session's start on the file's clock, ms (0 when it has none).
    pub start_ms: f64,
    pub system: Vec<Value>,
    pub turns: Vec<ScriptTurn>,
}

/// Everything a sessions level needs, shared by its tasks.
#[derive(Debug)]
pub struct SessionRun {
    pub scripts: Vec<Script>,
    pub bodies: Bodies,
    pub think_time: Duration,
    /// `--speed` for a closed-loop level (its think times over it).
    pub closed_speed: f64,
}

impl SessionRun {
    /// The think time before a later turn: recorded (ms) or `--think-time`,
    /// over `speed`.
    pub fn think(&self, recorded_ms: Option<f64>, speed: f64) -> Duration {
        let d = recorded_ms.map_or(self.think_time, |ms| Duration::from_secs_f64(ms / 1e3));
        d.div_f64(speed)
    }
}

/// The text of a message's content: a string, or its parts' texts.
pub(crate) fn content_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

/// A session's requests so far: the chat messages and, for the text
/// endpoints, the same history as one string.
pub struct History<'a> {
    bodies: &'a Bodies,
    messages: Vec<Value>,
    text: String,
}

impl<'a> History<'a> {
    pub fn new(bodies: &'a Bodies, script: &Script) -> History<'a> {
        let text = script.system.iter().map(content_text).collect::<Vec<_>>();
        History {
            bodies,
            messages: script.system.clone(),
            text: text.join("\n"),
        }
    }

    /// Add `turn` to the history; the request that sends it all.
    pub fn turn(&mut self, turn: &ScriptTurn) -> Prepared {
        self.messages.extend(turn.messages.iter().cloned());
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(&turn.text);
        let chat = self.bodies.spec.chat;
        let p = Prompt {
            text: if chat {
                String::new()
            } else {
                self.text.clone()
            },
            input_tokens: approx_tokens(&self.text),
            output_tokens: turn.output_tokens,
            messages: chat.then(|| Value::Array(self.messages.clone())),
        };
        self.bodies.prepare(&p)
    }

    /// The reply received to the last turn, as the server sent it: the
    /// assistant's message, or (text endpoints) the prompt's continuation.
    pub fn reply(&mut self, reply: String) {
        self.text.push_str(&reply);
        self.messages
            .push(message("assistant", Value::String(reply)));
    }
}
