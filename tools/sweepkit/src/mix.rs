//! SplitMix64's finalizer: a seed and an index mixed into one well-spread
//! 64-bit value, so "random" choices (which requests llm-sim accepts,
//! which ones loadgen cancels) are the same on every run with one seed.
//! Steele, Lea and Flood, "Fast splittable pseudorandom number
//! generators" (OOPSLA 2014), as in `java.util.SplittableRandom`.

/// The golden-ratio increment that spreads successive indexes.
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function of `z`.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    #[test]
    fn splitmix64_s_first_output_from_seed_zero() {
        // SplittableRandom(0).nextLong(): mix64(0 + GOLDEN).
        assert_eq!(super::mix64(super::GOLDEN) as i64, -2152535657050944081);
    }
}
