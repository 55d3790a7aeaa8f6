//! vLLM's dynamic speculative decoding by batch size: the
//! `num_speculative_tokens_per_batch_size` key of `--speculative-config`,
//! validated and expanded as vLLM does, and looked up per step.
//!
//! Sources: vllm/config/speculative.py `SpeculativeConfig`
//! (`num_speculative_tokens_per_batch_size: list[tuple[int, int, int]] |
//! None`, so pydantic refuses entries that are not three integers);
//! vllm/v1/spec_decode/dynamic/utils.py
//! `validate_and_normalize_dynamic_sd_schedule` (the checks and their
//! ValueError texts, as in vLLM 0.32; ranges are sorted by start before
//! the overlap check) and
//! `build_dynamic_sd_schedule_lookup` (dense table indexed by batch size:
//! gaps and the tail carry the previous k forward, every k clamped to
//! `num_speculative_tokens`); vllm/v1/core/sched/scheduler.py
//! `Scheduler.__init__` builds it with `max_num_seqs` and `schedule()`
//! reads `dynamic_sd_lookup[len(num_scheduled_tokens)]` each step.

use serde_json::Value;
/// vLLM's own checks of the entries, shared with svc-swap's pre-flight.
pub use sweepkit::vllm_schedule::{validate, Ranges};

/// Why vLLM refuses the schedule, and where.
#[derive(Debug, Clone, PartialEq)]
pub enum Invalid {
    /// pydantic, while building `SpeculativeConfig` (the API server).
    Pydantic(String),
    /// `ValueError` in the engine core's scheduler start-up.
    Value(String),
}

/// The ranges `[start, end, k]` of `v`, validated (`None`: no schedule).
pub fn ranges(v: &Value) -> Result<Option<Ranges>, Invalid> {
    let Some(s) = v.get("num_speculative_tokens_per_batch_size") else {
        return Ok(None);
    };
    if s.is_null() {
        return Ok(None);
    }
    let Some(list) = s.as_array() else {
        return Err(Invalid::Pydantic(format!(
            "num_speculative_tokens_per_batch_size\n  Input should be a valid list \
             [type=list_type, input_value={s}, input_type={}]",
            py_type(s)
        )));
    };
    let mut parsed = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let items = e.as_array().filter(|a| a.len() == 3).ok_or_else(|| {
            Invalid::Pydantic(format!(
                "num_speculative_tokens_per_batch_size.{i}\n  Tuple should have 3 \
                 items [type=tuple_type, input_value={e}, input_type={}]",
                py_type(e)
            ))
        })?;
        let mut n = [0i64; 3];
        for (j, x) in items.iter().enumerate() {
            n[j] = x.as_i64().ok_or_else(|| {
                Invalid::Pydantic(format!(
                    "num_speculative_tokens_per_batch_size.{i}.{j}\n  Input should be a \
                     valid integer [type=int_type, input_value={x}, input_type={}]",
                    py_type(x)
                ))
            })?;
        }
        parsed.push(n);
    }
    validate(&parsed)
        .map(Some)
        .map_err(|e| Invalid::Value(e.to_string()))
}

fn py_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "int",
        Value::Number(_) => "float",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// `build_dynamic_sd_schedule_lookup`: `k` for every batch size
/// 0..=max_batch (index 0 unused).
pub fn lookup(ranges: &[(u64, u64, u64)], max_batch: usize, k_max: u32) -> Vec<u32> {
    let clamp = |k: u64| k.min(k_max as u64) as u32;
    let mut dense = vec![0u32; max_batch + 1];
    let mut next = 1usize;
    let mut last: Option<u64> = None;
    for &(lo, hi, k) in ranges {
        let (lo, hi) = (lo as usize, hi as usize);
        if let (true, Some(l)) = (lo > next, last) {
            for slot in dense.iter_mut().take(lo.min(max_batch + 1)).skip(next) {
                *slot = clamp(l);
            }
        }
        for slot in dense
            .iter_mut()
            .take(hi.min(max_batch) + 1)
            .skip(lo.max(next))
        {
            *slot = clamp(k);
        }
        next = next.max(hi + 1);
        last = Some(k);
        if next > max_batch {
            break;
        }
    }
    if let Some(l) = last {
        for slot in dense.iter_mut().skip(next) {
            *slot = clamp(l);
        }
    }
    dense
}

/// The engine-core failure vLLM dies with when the scheduler's start-up
/// raises `msg` (a ValueError), ending with the API server's line.
pub fn engine_core_failure(msg: &str) -> Vec<String> {
    vec![
        "(EngineCore_DP0 pid=1) ERROR EngineCore failed to start.".into(),
        "Traceback (most recent call last):".into(),
        "  File \"vllm/v1/engine/core.py\", in run_engine_core".into(),
        "  File \"vllm/v1/core/sched/scheduler.py\", in __init__".into(),
        "    self.dynamic_sd_lookup = build_dynamic_sd_schedule_lookup(".into(),
        "  File \"vllm/v1/spec_decode/dynamic/utils.py\", in \
         validate_and_normalize_dynamic_sd_schedule"
            .into(),
        format!("ValueError: {msg}"),
        "RuntimeError: Engine core initialization failed. See root cause above. \
         Failed core proc(s): {}"
            .into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> Invalid {
        ranges(&json!({ "num_speculative_tokens_per_batch_size": v })).unwrap_err()
    }

    #[test]
    fn vllm_refuses_what_vllm_refuses_with_its_text() {
        let v = |s: &str| Invalid::Value(s.into());
        assert_eq!(
            err(json!([[2, 8, 3]])),
            v(
                "The first batch-size range must start at 1 so every runtime batch size \
               has a defined schedule."
            )
        );
        assert_eq!(
            err(json!([[1, 8, 3], [8, 16, 1]])),
            v("Batch-size ranges must be non-overlapping and sorted.")
        );
        assert_eq!(
            err(json!([[1, 8, -1]])),
            v("num_speculative_tokens_per_batch_size values must be >= 0.")
        );
        assert_eq!(
            err(json!([[4, 2, 1]])),
            v("Batch-size range start must be <= end for (4, 2, 1).")
        );
        assert_eq!(
            err(json!([[0, 2, 1]])),
            v("Batch-size range (0, 2) must be positive.")
        );
        assert_eq!(
            err(json!([])),
            v("num_speculative_tokens_per_batch_size must not be empty.")
        );
        assert!(matches!(err(json!([[1, 2]])), Invalid::Pydantic(_)));
        // A repeated range is an overlap to vLLM 0.32 (no duplicate check).
        assert_eq!(
            err(json!([[1, 8, 3], [1, 8, 2]])),
            v("Batch-size ranges must be non-overlapping and sorted.")
        );
        // Out of order but disjoint: vLLM sorts first and accepts it.
        let ok = ranges(&json!({"num_speculative_tokens_per_batch_size": [[9, 16, 1], [1, 8, 3]]}));
        assert_eq!(ok.unwrap().unwrap(), vec![(1, 8, 3), (9, 16, 1)]);
    }

    #[test]
    fn gaps_and_tail_carry_k_forward_clamped() {
        // vLLM's own example in build_dynamic_sd_schedule_lookup.
        let d = lookup(&[(1, 16, 3), (32, 128, 2)], 200, 3);
        assert_eq!((d[1], d[16], d[17], d[31], d[32]), (3, 3, 3, 3, 2));
        assert_eq!((d[128], d[129], d[200]), (2, 2, 2));
        // k above num_speculative_tokens is clamped; ranges past max stop.
        let d = lookup(&[(1, 1, 9), (2, 64, 1)], 8, 4);
        assert_eq!(d, vec![0, 4, 1, 1, 1, 1, 1, 1, 1]);
    }
}
