//! A level's latency distributions, mergeable across starts and windows:
//! one HdrHistogram per latency metric, so a p99 over several starts is the
//! p99 of their merged counts (never a median of p99s) and two runs can be
//! tested from their records alone.

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

#[cfg(feature = "histogram")]
pub mod codec;

/// The one encoding written: HdrHistogram's V2 compressed form (the payload
/// of its interval logs, `HISTFAAA...`), base64. Java's
/// `Histogram.decodeFromCompressedByteBuffer`, Python's
/// `HdrHistogram.decode` and Rust's `hdrhistogram` read it.
pub const HDR_ENCODING: &str = "hdr_v2_deflate_base64";

/// Per-level latency distributions (loadgen writes them from this version
/// on; records without them still read, and their percentiles pool as
/// medians). Values are whole microseconds.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Histograms {
    /// How each distribution is written: `hdr_v2_deflate_base64`.
    pub encoding: String,
    /// Significant decimal digits the histograms keep (HdrHistogram's
    /// precision).
    pub significant_digits: u32,
    /// Bound on the relative error of any value read back from a bucket
    /// (a percentile, the mean), as a fraction: 0.001 is 0.1%. Below 1 ms
    /// the bound is the 1 us resolution instead.
    pub relative_error: f64,
    /// TTFT of each completed request (`ttft_ms`'s distribution).
    pub ttft_us: Option<String>,
    /// TPOT of each completed request of two or more tokens.
    pub tpot_us: Option<String>,
    /// Inter-token latency, each chunk's per-token gap counted once per
    /// token (apportioned fractions rounded): `itl_ms`'s distribution.
    pub itl_us: Option<String>,
    /// E2E latency of each completed request.
    pub e2e_us: Option<String>,
}

impl Histograms {
    /// The latency blocks that carry a distribution, and its field here.
    pub const BLOCKS: [(&'static str, &'static str); 4] = [
        ("ttft_ms", "ttft_us"),
        ("tpot_ms", "tpot_us"),
        ("itl_ms", "itl_us"),
        ("e2e_ms", "e2e_us"),
    ];

    /// The encoded distribution of a latency block (`ttft_ms`), if kept.
    pub fn of_block(&self, block: &str) -> Option<&str> {
        match block {
            "ttft_ms" => self.ttft_us.as_deref(),
            "tpot_ms" => self.tpot_us.as_deref(),
            "itl_ms" => self.itl_us.as_deref(),
            "e2e_ms" => self.e2e_us.as_deref(),
            _ => None,
        }
    }
}
