//! The simulated tokenizer: one token per whitespace-separated word. Text
//! llm-sim generates re-tokenizes to exactly the count it reported, so a
//! client that counts tokens itself can be checked against `usage`.

/// Words generated text is made of; a token id < VOCAB.len() is a word.
pub const VOCAB: [&str; 32] = [
    "the",
    "model",
    "is",
    "simulated",
    "and",
    "tokens",
    "flow",
    "at",
    "a",
    "steady",
    "rate",
    "while",
    "draft",
    "heads",
    "guess",
    "ahead",
    "so",
    "each",
    "step",
    "may",
    "emit",
    "several",
    "words",
    "when",
    "guesses",
    "hold",
    "up",
    "under",
    "load",
    "queues",
    "grow",
    "again",
];

/// Token ids of `text`: a word's vocabulary index, else a stable hash.
pub fn tokenize(text: &str) -> Vec<u32> {
    text.split_whitespace().map(token_id).collect()
}

fn token_id(word: &str) -> u32 {
    if let Some(i) = VOCAB.iter().position(|w| *w == word) {
        return i as u32;
    }
    // FNV-1a: stable across runs and platforms, unlike std's hasher.
    let mut h: u32 = 0x811c_9dc5;
    for b in word.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    VOCAB.len() as u32 + h % 128_000
}

/// Text of generated tokens: each token is a space and a word.
pub fn detokenize(ids: &[u32]) -> String {
    let mut s = String::with_capacity(ids.len() * 7);
    for &id in ids {
        s.push(' ');
        s.push_str(VOCAB[id as usize % VOCAB.len()]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_text_round_trips() {
        let ids = [0, 5, 31, 7];
        let text = detokenize(&ids);
        assert_eq!(tokenize(&text), ids);
    }

    #[test]
    fn unknown_words_hash_stably() {
        assert_eq!(tokenize("zebra  zebra\nthe"), tokenize("zebra zebra the"));
        assert!(tokenize("zebra")[0] >= VOCAB.len() as u32);
    }
}
