//! Prefix-cache hits, counted as vLLM counts them: a prompt's full blocks
//! of `BLOCK` tokens are hashed in a chain (each hash covers its block and
//! every block before it: vllm/v1/core/kv_cache_utils.py
//! `hash_block_tokens`), a request hits the longest run of leading blocks
//! already cached (vllm/v1/core/kv_cache_manager.py `get_computed_blocks`,
//! which leaves at least the last token to compute), and the counters are
//! tokens queried and tokens hit (vllm/v1/metrics/loggers.py
//! `vllm:prefix_cache_queries`, `vllm:prefix_cache_hits`; metrics.rs
//! serves them). Only counted: a hit does not shorten the simulated
//! prefill.

use std::collections::HashSet;
use std::sync::Mutex;

/// Tokens per block: vLLM's default `--block-size`.
pub const BLOCK: usize = 16;

/// The cached block hashes and the two counters.
#[derive(Debug, Default)]
pub struct PrefixCache {
    seen: Mutex<HashSet<u64>>,
    /// Most blocks kept; past it the cache starts empty again (a crude
    /// eviction: the KV cache holds this many blocks at most).
    cap: usize,
}

impl PrefixCache {
    /// A cache of at most `kv_tokens` tokens.
    pub fn new(kv_tokens: u64) -> PrefixCache {
        PrefixCache {
            cap: (kv_tokens as usize / BLOCK).max(1),
            ..PrefixCache::default()
        }
    }

    /// Look `ids` up and cache its full blocks; returns the tokens found
    /// cached.
    pub fn lookup(&self, ids: &[u32]) -> u64 {
        let hashes = chain(ids);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let cached = hashes.iter().take_while(|h| seen.contains(h)).count();
        // The last token is always computed: a fully cached prompt hits
        // one block less.
        let max_blocks = ids.len().saturating_sub(1) / BLOCK;
        let hit = (cached.min(max_blocks) * BLOCK) as u64;
        if seen.len() + hashes.len() > self.cap {
            seen.clear();
        }
        seen.extend(hashes);
        hit
    }
}

/// The chained hash of each full block (FNV-1a over the previous hash and
/// the block's ids: stable across runs, unlike std's hasher).
fn chain(ids: &[u32]) -> Vec<u64> {
    let mut prev: u64 = 0xcbf2_9ce4_8422_2325;
    ids.chunks_exact(BLOCK)
        .map(|block| {
            let mut h = prev;
            for x in std::iter::once(prev).chain(block.iter().map(|&t| t as u64)) {
                for b in x.to_le_bytes() {
                    h ^= b as u64;
                    h = h.wrapping_mul(0x0100_0000_01b3);
                }
            }
            prev = h;
            h
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_leading_blocks_hit_and_others_miss() {
        let c = PrefixCache::new(1 << 20);
        let a: Vec<u32> = (0..40).collect();
        assert_eq!(c.lookup(&a), 0);
        // Same first two blocks, then different.
        let mut b: Vec<u32> = (0..32).collect();
        b.extend(100..120);
        assert_eq!(c.lookup(&b), 32);
        // The same ids at another position are not a prefix.
        let shifted: Vec<u32> = (1..41).collect();
        assert_eq!(c.lookup(&shifted), 0);
        // A prompt cached whole still computes its last block.
        let whole: Vec<u32> = (0..32).collect();
        assert_eq!(c.lookup(&whole), 16);
    }
}
