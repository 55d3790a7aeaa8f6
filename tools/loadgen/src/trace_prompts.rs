//! `--trace`: the file read and checked once, before anything is sent
//! (plan.rs calls `load`), then turned into prompts (setup.rs) and into
//! the record's workload block. A Mooncake hash id becomes one fixed block
//! of `--block-size` words drawn from prompts.rs's one-token words with the
//! id as the seed, so equal ids are equal token prefixes on the server and
//! its prefix cache sees what production saw. A request's last block is
//! the first words of its id's block: a short last block still shares its
//! start with the full one (AIPerf caches whichever length it met first).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::anyhow;
use rand::rngs::StdRng;
use rand::SeedableRng;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::Workload;
use sweepkit::trace::{self, Entry, Input};

use crate::prompts::{approx_tokens, words_of, Prompt, Tokenizer, WORDS};

/// Mixed into each hash id's seed so a block's words differ from those of
/// a synthetic prompt with the same `--seed`.
const BLOCK_SALT: u64 = 0x6d6f_6f6e_6361_6b65;

/// The trace a run replays, checked.
#[derive(Debug, Clone)]
pub struct TracePlan {
    pub path: PathBuf,
    /// `mooncake` or `jsonl` (trace.rs).
    pub kind: &'static str,
    pub sha256: String,
    /// The entries in the window, in order.
    pub entries: Vec<Entry>,
    pub block_size: u64,
    /// `--trace-start`..`--trace-end` as the record says it.
    pub window: String,
}

fn bad_input(msg: String) -> Exit {
    Exit::new(exit::BAD_INPUT, anyhow!(msg))
}

/// Read, parse and window `--trace FILE`; every problem names the line.
pub fn load(
    path: &std::path::Path,
    block_size: u64,
    start: Option<Duration>,
    end: Option<Duration>,
) -> Result<TracePlan, Exit> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| bad_input(format!("--trace {shown}: {e}")))?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| bad_input(format!("--trace {shown}: not UTF-8 text ({e})")))?;
    let t =
        trace::parse(text, block_size).map_err(|e| bad_input(format!("--trace {shown}: {e}")))?;
    let entries = trace::window(&t, start, end);
    let human = |d: Option<Duration>| d.map(|d| humantime::format_duration(d).to_string());
    let window = format!(
        "{}..{}",
        human(start).unwrap_or_else(|| "0s".into()),
        human(end).unwrap_or_default()
    );
    if entries.is_empty() {
        let last = t.entries.last().map_or(0.0, |e| e.at_ms) / 1e3;
        return Err(Exit::new(
            exit::USAGE,
            anyhow!(
                "--trace-start/--trace-end: no request of the trace's {} falls in {window} \
                 (its timestamps run from {}s to {last}s)",
                t.entries.len(),
                t.entries[0].at_ms / 1e3
            ),
        ));
    }
    Ok(TracePlan {
        path: path.to_path_buf(),
        kind: t.kind,
        sha256: sweepkit::sha256::hex(&bytes),
        entries,
        block_size,
        window,
    })
}

/// The words of hash id `id`'s block: the same for the same id, size and
/// vocabulary.
fn block(id: u64, block_size: u64, vocab: &[&'static str]) -> Vec<&'static str> {
    let mut rng = StdRng::seed_from_u64(id ^ BLOCK_SALT);
    words_of(&mut rng, vocab, block_size as usize)
}

/// Spells Mooncake hash ids as words, each id's block made once.
pub(crate) struct Speller<'v> {
    blocks: HashMap<u64, Vec<&'static str>>,
    block_size: u64,
    vocab: &'v [&'static str],
}

impl<'v> Speller<'v> {
    pub(crate) fn new(block_size: u64, vocab: &'v [&'static str]) -> Self {
        Speller {
            blocks: HashMap::new(),
            block_size,
            vocab,
        }
    }

    /// `input_length` words: the blocks of `ids` in turn, the last one cut.
    pub(crate) fn spell(&mut self, input_length: u64, ids: &[u64]) -> String {
        let mut ws: Vec<&str> = Vec::with_capacity(input_length as usize);
        for id in ids {
            let (size, vocab) = (self.block_size, self.vocab);
            let b = self
                .blocks
                .entry(*id)
                .or_insert_with(|| block(*id, size, vocab));
            let room = input_length as usize - ws.len();
            ws.extend_from_slice(&b[..room.min(b.len())]);
        }
        ws.join(" ")
    }
}

/// The words of prompts.rs's list that `tok` makes exactly one token
/// after a space, so a block of N words is N tokens on that server (a
/// small model's vocabulary splits words the big ones keep whole). None
/// when the tokenizer does not answer or keeps too few whole.
pub fn one_token_words(tok: &dyn Tokenizer) -> Option<Vec<&'static str>> {
    let base = tok.count("the")?;
    let mut keep = Vec::new();
    for w in WORDS {
        if tok.count(&format!("the {w}"))? == base + 1 {
            keep.push(*w);
        }
    }
    (keep.len() >= 16).then_some(keep)
}

/// One prompt per entry, its blocks made of `vocab`'s words. `chat`: the
/// endpoint takes messages (a trace's `messages` need it).
pub fn prompts(tp: &TracePlan, chat: bool, vocab: &[&'static str]) -> Result<Vec<Prompt>, Exit> {
    let mut blocks = Speller::new(tp.block_size, vocab);
    tp.entries
        .iter()
        .map(|e| {
            let (text, messages, input_tokens) = match &e.input {
                Input::Blocks {
                    input_length,
                    hash_ids,
                } => (blocks.spell(*input_length, hash_ids), None, *input_length),
                Input::Text(t) => (t.clone(), None, approx_tokens(t)),
                Input::Messages(m) if chat => {
                    let n = approx_tokens(&m.to_string());
                    (String::new(), Some(m.clone()), n)
                }
                Input::Messages(_) => {
                    return Err(Exit::new(
                        exit::USAGE,
                        anyhow!(
                            "--trace {}: line {}: \"messages\" need --endpoint chat",
                            tp.path.display(),
                            e.line
                        ),
                    ))
                }
            };
            Ok(Prompt {
                text,
                input_tokens,
                output_tokens: e.output_tokens,
                messages,
            })
        })
        .collect()
}

/// The trace's send times on its own clock, ms after the first.
pub fn times_ms(tp: &TracePlan) -> Vec<f64> {
    let t0 = tp.entries.first().map_or(0.0, |e| e.at_ms);
    tp.entries.iter().map(|e| e.at_ms - t0).collect()
}

/// The record's workload block for the trace (the replay's own figures
/// are added per level).
pub fn workload(tp: &TracePlan, prompts: &[Prompt]) -> Workload {
    let times: Vec<f64> = times_ms(tp).iter().map(|t| t / 1e3).collect();
    let mut uses: HashMap<u64, u64> = HashMap::new();
    for e in &tp.entries {
        if let Input::Blocks { hash_ids, .. } = &e.input {
            for id in hash_ids {
                *uses.entry(*id).or_default() += 1;
            }
        }
    }
    let mooncake = tp.kind == "mooncake";
    Workload {
        kind: format!("{}_trace", tp.kind),
        sha256: Some(tp.sha256.clone()),
        requests: tp.entries.len() as u64,
        block_size: mooncake.then_some(tp.block_size),
        window: Some(tp.window.clone()),
        trace_duration_s: times.last().copied(),
        trace_input_tokens: Some(prompts.iter().map(|p| p.input_tokens).sum()),
        trace_arrival_cv: trace::arrival_cv(&times).map(crate::stats::round3),
        reused_blocks: mooncake.then(|| uses.values().filter(|&&n| n > 1).count() as u64),
        ..Workload::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(text: &str, block_size: u64) -> TracePlan {
        let t = trace::parse(text, block_size).unwrap();
        TracePlan {
            path: "t.jsonl".into(),
            kind: t.kind,
            sha256: String::new(),
            entries: t.entries,
            block_size,
            window: "0s..".into(),
        }
    }

    #[test]
    fn equal_hash_ids_are_equal_prefixes_of_exact_length() {
        let tp = plan(
            "{\"timestamp\":0,\"input_length\":20,\"output_length\":4,\"hash_ids\":[1,2,3]}\n\
             {\"timestamp\":100,\"input_length\":17,\"output_length\":4,\"hash_ids\":[1,2,9]}\n\
             {\"timestamp\":300,\"input_length\":5,\"output_length\":4,\"hash_ids\":[1]}\n",
            8,
        );
        let ps = prompts(&tp, false, WORDS).unwrap();
        let w: Vec<Vec<&str>> = ps.iter().map(|p| p.text.split(' ').collect()).collect();
        assert_eq!((w[0].len(), w[1].len(), w[2].len()), (20, 17, 5));
        assert_eq!(w[0][..16], w[1][..16]);
        assert_ne!(w[0][16..17], w[1][16..17]);
        // A short last block is the start of the same id's full block.
        assert_eq!(w[2][..], w[0][..5]);
        assert_eq!(ps[0].input_tokens, 20);
        assert_eq!(ps[0].output_tokens, Some(4));
        let wl = workload(&tp, &ps);
        assert_eq!(wl.kind, "mooncake_trace");
        assert_eq!(wl.reused_blocks, Some(2));
        assert_eq!(wl.trace_input_tokens, Some(42));
        assert_eq!(wl.trace_duration_s, Some(0.3));
        assert_eq!(wl.block_size, Some(8));
        // The same trace gives the same prompts on every run.
        assert_eq!(ps, prompts(&tp, false, WORDS).unwrap());
    }

    #[test]
    fn messages_need_the_chat_endpoint() {
        let tp = plan(
            "{\"timestamp\":0,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n",
            8,
        );
        let e = prompts(&tp, false, WORDS).unwrap_err();
        assert!(
            format!("{:#}", e.error.unwrap()).contains("line 1: \"messages\" need --endpoint chat")
        );
        assert!(prompts(&tp, true, WORDS).unwrap()[0].messages.is_some());
    }

    /// Counts "to" as two tokens, as a small vocabulary might.
    struct SplitsTo;
    impl Tokenizer for SplitsTo {
        fn count(&self, text: &str) -> Option<u64> {
            Some(text.split(' ').map(|w| if w == "to" { 2 } else { 1 }).sum())
        }
    }

    #[test]
    fn words_the_tokenizer_splits_are_left_out() {
        let v = one_token_words(&SplitsTo).unwrap();
        assert_eq!(v.len(), WORDS.len() - 1);
        assert!(!v.contains(&"to"));
    }
}
