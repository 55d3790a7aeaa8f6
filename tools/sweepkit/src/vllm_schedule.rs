//! vLLM's checks of `num_speculative_tokens_per_batch_size` entries
//! (`validate_and_normalize_dynamic_sd_schedule`), with vLLM's messages: the
//! one rule that svc-swap's pre-flight refuses by and that llm-sim's `vllm`
//! personality starts (or fails) by.

/// Inclusive batch-size ranges and their k: `(start, end, k)`.
pub type Ranges = Vec<(u64, u64, u64)>;

/// The ValueError vLLM raises for a schedule, with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error("num_speculative_tokens_per_batch_size must not be empty.")]
    Empty,
    #[error("Batch-size range ({0}, {1}) must be positive.")]
    NotPositive(i64, i64),
    #[error("Batch-size range start must be <= end for ({0}, {1}, {2}).")]
    StartAfterEnd(i64, i64, i64),
    #[error("num_speculative_tokens_per_batch_size values must be >= 0.")]
    NegativeK,
    #[error("Batch-size ranges must be non-overlapping and sorted.")]
    Overlap,
    #[error(
        "The first batch-size range must start at 1 so every runtime \
         batch size has a defined schedule."
    )]
    NotFromOne,
}

/// `validate_and_normalize_dynamic_sd_schedule` for 3-item entries, with
/// its messages as vLLM 0.32 has them (vllm/v1/spec_decode/dynamic/utils.py
/// lines 26-72 of the installed 0.32.0+cpu wheel): entries sorted by their
/// start only (Python's stable `sort(key=lambda entry: entry[0])`), so a
/// repeated range is an overlap.
pub fn validate(entries: &[[i64; 3]]) -> Result<Ranges, ScheduleError> {
    if entries.is_empty() {
        return Err(ScheduleError::Empty);
    }
    for &[lo, hi, k] in entries {
        if lo <= 0 || hi <= 0 {
            return Err(ScheduleError::NotPositive(lo, hi));
        }
        if lo > hi {
            return Err(ScheduleError::StartAfterEnd(lo, hi, k));
        }
        if k < 0 {
            return Err(ScheduleError::NegativeK);
        }
    }
    let mut sorted: Vec<(u64, u64, u64)> = entries
        .iter()
        .map(|&[lo, hi, k]| (lo as u64, hi as u64, k as u64))
        .collect();
    sorted.sort_by_key(|e| e.0);
    let mut prev_end = 0;
    for &(lo, hi, _) in &sorted {
        if lo <= prev_end {
            return Err(ScheduleError::Overlap);
        }
        prev_end = hi;
    }
    if sorted[0].0 != 1 {
        return Err(ScheduleError::NotFromOne);
    }
    Ok(sorted)
}
