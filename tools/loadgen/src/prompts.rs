//! Prompts: synthetic ones of an exact token length (checked and corrected
//! with the server's tokenizer when it has a `/tokenize` endpoint), or read
//! from a JSONL file (`{"prompt": ..., "output_tokens": ...}`) or a ShareGPT
//! JSON file. Random word sequences re-tokenize to other lengths (vLLM PR
//! 24937, SGLang PR 15732), so lengths are measured, not assumed.

use std::path::Path;

use anyhow::{bail, Context};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// One prompt and the output length it asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub text: String,
    /// Input length in tokens (measured or approximated).
    pub input_tokens: u64,
    /// Output length asked for; None: `--max-tokens` applies.
    pub output_tokens: Option<u64>,
    /// A recorded chat (`--trace` `messages`), sent instead of `text`.
    pub messages: Option<Value>,
}

/// Common English words that are one token each (with the leading space)
/// in the GPT-2, Llama, Qwen and Mistral vocabularies alike: a word count is
/// then a good first guess at the token count.
pub const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "are",
    "with",
    "as",
    "at",
    "be",
    "this",
    "have",
    "from",
    "or",
    "one",
    "had",
    "by",
    "but",
    "not",
    "what",
    "all",
    "were",
    "we",
    "when",
    "your",
    "can",
    "said",
    "there",
    "use",
    "an",
    "each",
    "which",
    "she",
    "do",
    "how",
    "their",
    "if",
    "will",
    "up",
    "other",
    "about",
    "out",
    "many",
    "then",
    "them",
    "these",
    "so",
    "some",
    "her",
    "would",
    "make",
    "like",
    "him",
    "into",
    "time",
    "has",
    "look",
    "two",
    "more",
    "write",
    "go",
    "see",
    "number",
    "no",
    "way",
    "could",
    "people",
    "my",
    "than",
    "first",
    "water",
    "been",
    "call",
    "who",
    "oil",
    "its",
    "now",
    "find",
    "long",
    "down",
    "day",
    "did",
    "get",
    "come",
    "made",
    "may",
    "part",
    "over",
    "new",
    "sound",
    "take",
    "only",
    "little",
    "work",
    "know",
    "place",
    "year",
    "live",
    "me",
    "back",
    "give",
    "most",
    "very",
    "after",
    "thing",
    "our",
    "just",
    "name",
    "good",
    "man",
    "think",
    "say",
    "great",
    "where",
    "help",
    "through",
    "much",
    "before",
    "line",
    "right",
    "too",
    "mean",
    "old",
    "any",
    "same",
    "tell",
    "boy",
    "follow",
    "came",
    "want",
    "show",
    "also",
    "around",
    "form",
    "three",
    "small",
    "set",
    "put",
    "end",
    "does",
    "another",
    "well",
    "large",
    "must",
    "big",
    "even",
    "such",
    "because",
    "turn",
    "here",
    "why",
    "ask",
    "went",
    "men",
    "read",
    "need",
    "land",
    "different",
    "home",
];

/// How input lengths were obtained, as the record says it.
pub const METHOD_TOKENIZE: &str = "tokenize";
pub const METHOD_APPROX: &str = "approx";

/// A word sequence of `n` words from a seeded generator.
pub fn words(rng: &mut StdRng, n: usize) -> Vec<&'static str> {
    words_of(rng, WORDS, n)
}

/// A word sequence of `n` words of `vocab` from a seeded generator.
pub fn words_of(rng: &mut StdRng, vocab: &[&'static str], n: usize) -> Vec<&'static str> {
    (0..n)
        .map(|_| vocab[rng.gen_range(0..vocab.len())])
        .collect()
}

/// A tokenizer: text -> token count, or None when the server has none.
pub trait Tokenizer {
    fn count(&self, text: &str) -> Option<u64>;
}

/// Synthetic prompts of exactly `len` tokens when `tok` can count, else
/// `len` words (about `len` tokens: see WORDS). Returns the method used.
pub fn synthetic(
    n: usize,
    len: u64,
    seed: u64,
    tok: Option<&dyn Tokenizer>,
) -> (Vec<Prompt>, &'static str) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(n);
    let mut method = if tok.is_some() {
        METHOD_TOKENIZE
    } else {
        METHOD_APPROX
    };
    for _ in 0..n {
        let pool = words(&mut rng, 2 * len as usize + 16);
        let (words_n, measured) = match (tok, method) {
            (Some(t), METHOD_TOKENIZE) => match fit(&pool, len, t) {
                Some(x) => x,
                None => {
                    method = METHOD_APPROX;
                    (len as usize, len)
                }
            },
            _ => (len as usize, len),
        };
        out.push(Prompt {
            text: pool[..words_n.min(pool.len())].join(" "),
            input_tokens: measured,
            output_tokens: None,
            messages: None,
        });
    }
    (out, method)
}

/// The word count whose text is `len` tokens, searched with the server's
/// tokenizer: proportional steps first (a byte-level vocabulary makes a
/// word several tokens), then one word at a time. When no word count hits
/// `len` exactly, the longest text under it wins (its measured length is
/// what the record reports). None when the tokenizer stops answering.
fn fit(pool: &[&str], len: u64, t: &dyn Tokenizer) -> Option<(usize, u64)> {
    let mut n = (len as usize).clamp(1, pool.len());
    let mut best: Option<(usize, u64)> = None;
    let mut seen = Vec::new();
    for round in 0..12 {
        let c = t.count(&pool[..n].join(" "))?;
        seen.push(n);
        let better = match best {
            None => true,
            Some((_, b)) => (c <= len && (b > len || c > b)) || (b > len && c < b),
        };
        if better {
            best = Some((n, c));
        }
        if c == len || c == 0 {
            break;
        }
        let mut next = if round < 4 {
            ((n as f64) * len as f64 / c as f64).round() as usize
        } else if c < len {
            n + 1
        } else {
            n - 1
        };
        next = next.clamp(1, pool.len());
        if next == n {
            next = if c < len {
                (n + 1).min(pool.len())
            } else {
                n.saturating_sub(1).max(1)
            };
        }
        if seen.contains(&next) {
            break;
        }
        n = next;
    }
    best
}

/// Read prompts from a JSONL file (one `{"prompt","output_tokens"}` per
/// line) or a ShareGPT JSON array; `format` is `jsonl`, `sharegpt` or `auto`.
pub fn from_file(path: &Path, format: &str) -> anyhow::Result<PromptsFile> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let trimmed = text.trim_start();
    let is_sharegpt = match format {
        "sharegpt" => true,
        "jsonl" => false,
        _ => trimmed.starts_with('['),
    };
    let prompts = if is_sharegpt {
        sharegpt(&text).with_context(|| format!("{}", path.display()))?
    } else {
        jsonl(&text).with_context(|| format!("{}", path.display()))?
    };
    if prompts.is_empty() {
        bail!("{}: no prompts", path.display());
    }
    let label = format!(
        "{}:{}",
        if is_sharegpt { "sharegpt" } else { "jsonl" },
        path.display()
    );
    Ok(PromptsFile {
        prompts,
        label,
        sha256: sweepkit::sha256::hex(text.as_bytes()),
    })
}

/// A `--prompts-file` as read once: its prompts, its label
/// (`FORMAT:PATH`) and the digest the workload names it by.
pub struct PromptsFile {
    pub prompts: Vec<Prompt>,
    pub label: String,
    pub sha256: String,
}

/// About 4 characters per token (OpenAI's rule of thumb), for lengths we
/// cannot measure; `tokenize` replaces it when the server can count.
pub fn approx_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4).max(1)
}

fn jsonl(text: &str) -> anyhow::Result<Vec<Prompt>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let v: Value =
            serde_json::from_str(line).with_context(|| format!("line {}: not JSON", i + 1))?;
        let Some(p) = v.get("prompt").and_then(Value::as_str) else {
            bail!("line {}: no string \"prompt\" field", i + 1);
        };
        let out_tok = match v.get("output_tokens") {
            None | Some(Value::Null) => None,
            Some(x) => Some(x.as_u64().with_context(|| {
                format!("line {}: \"output_tokens\" is not a whole number", i + 1)
            })?),
        };
        out.push(Prompt {
            text: p.to_string(),
            input_tokens: approx_tokens(p),
            output_tokens: out_tok,
            messages: None,
        });
    }
    Ok(out)
}

fn sharegpt(text: &str) -> anyhow::Result<Vec<Prompt>> {
    let v: Value = serde_json::from_str(text).context("not JSON")?;
    let Some(items) = v.as_array() else {
        bail!("ShareGPT file is not a JSON array");
    };
    let mut out = Vec::new();
    for item in items {
        let Some(conv) = item.get("conversations").and_then(Value::as_array) else {
            continue;
        };
        // First human turn and the reply after it, as vLLM's sampler does.
        if conv.len() < 2 {
            continue;
        }
        let (Some(q), Some(a)) = (
            conv[0].get("value").and_then(Value::as_str),
            conv[1].get("value").and_then(Value::as_str),
        ) else {
            continue;
        };
        out.push(Prompt {
            text: q.to_string(),
            input_tokens: approx_tokens(q),
            output_tokens: Some(approx_tokens(a)),
            messages: None,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct WordCount(i64);
    impl Tokenizer for WordCount {
        fn count(&self, text: &str) -> Option<u64> {
            // A tokenizer that adds a BOS-like offset: the loop must correct it.
            Some((text.split_whitespace().count() as i64 + self.0) as u64)
        }
    }

    #[test]
    fn synthetic_lengths_are_corrected_by_the_tokenizer() {
        let (ps, m) = synthetic(3, 50, 7, Some(&WordCount(3)));
        assert_eq!(m, METHOD_TOKENIZE);
        for p in &ps {
            assert_eq!(p.input_tokens, 50);
            assert_eq!(p.text.split_whitespace().count(), 47);
        }
        let (ps2, m2) = synthetic(3, 50, 7, None);
        assert_eq!(m2, METHOD_APPROX);
        assert_eq!(ps2[0].text.split_whitespace().count(), 50);
        // Same seed, same prompts; prompts differ from each other.
        assert_eq!(ps2, synthetic(3, 50, 7, None).0);
        assert_ne!(ps2[0].text, ps2[1].text);
    }

    struct Bytes;
    impl Tokenizer for Bytes {
        fn count(&self, text: &str) -> Option<u64> {
            Some(text.len() as u64 + 1)
        }
    }

    #[test]
    fn byte_level_tokenizers_converge_near_the_length() {
        // Several tokens per word: the search must not oscillate.
        let (ps, m) = synthetic(4, 128, 3, Some(&Bytes));
        assert_eq!(m, METHOD_TOKENIZE);
        for p in ps {
            assert!(
                p.input_tokens <= 128 && p.input_tokens > 118,
                "{}",
                p.input_tokens
            );
            assert_eq!(p.input_tokens, p.text.len() as u64 + 1);
        }
    }

    #[test]
    fn jsonl_and_sharegpt_parse() {
        let j =
            jsonl("{\"prompt\":\"hi there\",\"output_tokens\":5}\n\n{\"prompt\":\"x\"}\n").unwrap();
        assert_eq!(j.len(), 2);
        assert_eq!(j[0].output_tokens, Some(5));
        assert!(jsonl("{\"text\":1}")
            .unwrap_err()
            .to_string()
            .contains("line 1"));
        let s = sharegpt(
            r#"[{"id":"a","conversations":[{"from":"human","value":"why?"},{"from":"gpt","value":"because of this"}]},{"id":"b","conversations":[]}]"#,
        )
        .unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].output_tokens, Some(4));
    }
}
