//! `--sessions`: the file read and checked once (plan.rs calls `load`;
//! session.rs and session_chat.rs parse the two kinds), then made into
//! scripts (setup.rs; session_run.rs runs them): each turn's messages and
//! text, Mooncake blocks spelled out as trace_prompts.rs spells them, so
//! equal hash ids are equal prefixes here too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::anyhow;
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{SessionStats, Workload};

use crate::session::{message, SessionError, SessionFile, UserInput};
use crate::session_run::{content_text, Script, ScriptTurn};

/// The sessions a run replays, checked.
#[derive(Debug, Clone)]
pub struct SessionsPlan {
    pub path: PathBuf,
    pub sha256: String,
    pub file: SessionFile,
    pub block_size: u64,
    /// `--think-time`: for turns that record none.
    pub think_time: Duration,
}

/// Read and check `--sessions FILE`; every problem names its line.
pub fn load(path: &Path, block_size: u64, think_time: Duration) -> Result<SessionsPlan, Exit> {
    let shown = path.display();
    let bad = |m: String| Exit::new(exit::BAD_INPUT, anyhow!("--sessions {shown}: {m}"));
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| bad(format!("not UTF-8 text ({e})")))?;
    let file = parse(text, block_size).map_err(|e| bad(e.to_string()))?;
    Ok(SessionsPlan {
        path: path.to_path_buf(),
        sha256: sweepkit::sha256::hex(&bytes),
        file,
        block_size,
        think_time,
    })
}

/// Parse a sessions file of either kind, told apart by its first line: a
/// `session_id` makes it a session trace, else it holds conversations.
pub fn parse(text: &str, block_size: u64) -> Result<SessionFile, SessionError> {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let is_trace = serde_json::from_str::<Value>(first)
        .ok()
        .is_some_and(|v| v.get("session_id").is_some());
    let f = if is_trace {
        crate::session::parse_trace(text, block_size)?
    } else {
        crate::session_chat::parse(text)?
    };
    if f.sessions.is_empty() {
        return Err(SessionError("no sessions in the file".into()));
    }
    Ok(f)
}

impl SessionsPlan {
    /// Does any turn need Mooncake blocks spelled out?
    pub fn has_blocks(&self) -> bool {
        let turns = self.file.sessions.iter().flat_map(|s| &s.turns);
        turns
            .into_iter()
            .any(|t| matches!(t.input, UserInput::Blocks { .. }))
    }

    /// The record's workload block (the level adds what it replayed).
    pub fn workload(&self) -> Workload {
        let f = &self.file;
        Workload {
            kind: "sessions".into(),
            sha256: Some(self.sha256.clone()),
            requests: f.turns() as u64,
            block_size: self.has_blocks().then_some(self.block_size),
            sessions: Some(SessionStats {
                source: f.source.into(),
                sessions: f.sessions.len() as u64,
                turns: f.turns() as u64,
                think_time_default_s: self.think_time.as_secs_f64(),
                ..SessionStats::default()
            }),
            ..Workload::default()
        }
    }
}

/// The scripts of every session, blocks spelled with `vocab`'s words.
pub fn scripts(sp: &SessionsPlan, vocab: &[&'static str]) -> Vec<Script> {
    let mut blocks = crate::trace_prompts::Speller::new(sp.block_size, vocab);
    let t0 = sp.file.sessions.iter().filter_map(|s| s.start_ms);
    let t0 = t0.fold(f64::INFINITY, f64::min);
    let mut out = Vec::with_capacity(sp.file.sessions.len());
    for s in &sp.file.sessions {
        let turns = s.turns.iter().map(|t| {
            let messages = match &t.input {
                UserInput::Text(x) => vec![message("user", Value::String(x.clone()))],
                UserInput::Blocks {
                    input_length,
                    hash_ids,
                } => vec![message(
                    "user",
                    Value::String(blocks.spell(*input_length, hash_ids)),
                )],
                UserInput::Messages(m) => m.clone(),
            };
            let text = messages
                .iter()
                .map(content_text)
                .collect::<Vec<_>>()
                .join("\n");
            ScriptTurn {
                messages,
                text,
                output_tokens: t.output_tokens,
                gap: t.gap,
            }
        });
        out.push(Script {
            start_ms: s.start_ms.map_or(0.0, |x| x - t0.min(x)),
            system: s.system.clone(),
            turns: turns.collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str) -> SessionsPlan {
        SessionsPlan {
            path: "s.jsonl".into(),
            sha256: String::new(),
            file: parse(text, 4).unwrap(),
            block_size: 4,
            think_time: Duration::from_secs(2),
        }
    }

    #[test]
    fn blocks_are_spelled_once_and_starts_count_from_the_first() {
        let sp = plan(
            "{\"session_id\":\"a\",\"timestamp\":500,\"input_length\":6,\"hash_ids\":[1,2]}\n\
             {\"session_id\":\"b\",\"timestamp\":800,\"input_length\":3,\"hash_ids\":[1]}\n\
             {\"session_id\":\"a\",\"delay\":250,\"text_input\":\"next\"}\n",
        );
        let sc = scripts(&sp, crate::prompts::WORDS);
        assert_eq!((sc[0].start_ms, sc[1].start_ms), (0.0, 300.0));
        let a: Vec<&str> = sc[0].turns[0].text.split(' ').collect();
        let b: Vec<&str> = sc[1].turns[0].text.split(' ').collect();
        assert_eq!((a.len(), b.len()), (6, 3));
        assert_eq!(a[..3], b[..]);
        assert_eq!(sc[0].turns[1].text, "next");
        let w = sp.workload();
        assert_eq!(
            (w.kind.as_str(), w.requests, w.block_size),
            ("sessions", 3, Some(4))
        );
        let s = w.sessions.unwrap();
        assert_eq!((s.sessions, s.turns, s.source.as_str()), (2, 3, "trace"));
    }
}
