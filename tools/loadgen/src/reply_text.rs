//! The text of a reply, for `--sessions`: the next turn sends it back as
//! the assistant's message. Read only for session requests (the sample's
//! `reply` is Some), in a second pass over the chunk, so the load's hot
//! path (sse.rs reads lengths, never copies text) costs nothing more.
//! Reasoning text is left out: chat clients send back the answer only.

use serde::Deserialize;

#[derive(Deserialize, Default)]
struct Message {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    delta: Option<Message>,
    #[serde(default)]
    message: Option<Message>,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    /// SGLang `/generate`.
    #[serde(default)]
    text: Option<String>,
}

/// The generated text one chunk (or a whole response) carries; empty for
/// a chunk that is not JSON or has none (sse.rs judges those).
pub fn of_chunk(data: &[u8]) -> String {
    let Ok(c) = serde_json::from_slice::<Chunk>(data) else {
        return String::new();
    };
    let mut out = c.text.unwrap_or_default();
    for ch in c.choices {
        out.push_str(ch.text.as_deref().unwrap_or(""));
        for m in [ch.delta, ch.message].into_iter().flatten() {
            out.push_str(m.content.as_deref().unwrap_or(""));
        }
    }
    out
}

/// Add a chunk's text to the reply so far. `cumulative`: the chunk holds
/// the whole text so far (SGLang `/generate` without incremental output).
pub fn gather(reply: &mut String, data: &[u8], cumulative: bool) {
    let t = of_chunk(data);
    if cumulative {
        if t.len() >= reply.len() {
            *reply = t;
        }
    } else {
        reply.push_str(&t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_and_text_are_read_and_reasoning_is_not() {
        let chat = br#"{"choices":[{"delta":{"content":" hi","reasoning_content":"hm"}}]}"#;
        assert_eq!(of_chunk(chat), " hi");
        assert_eq!(of_chunk(br#"{"choices":[{"text":"a\"b"}]}"#), "a\"b");
        let whole = br#"{"choices":[{"message":{"role":"assistant","content":"x y"}}]}"#;
        assert_eq!(of_chunk(whole), "x y");
        assert_eq!(of_chunk(br#"{"text":"so far","meta_info":{}}"#), "so far");
        assert_eq!(of_chunk(b"not json"), "");
        let mut r = String::new();
        gather(&mut r, br#"{"text":"a"}"#, true);
        gather(&mut r, br#"{"text":"a b"}"#, true);
        assert_eq!(r, "a b");
        gather(&mut r, br#"{"choices":[{"text":" c"}]}"#, false);
        assert_eq!(r, "a b c");
    }
}
