//! SGLang's adaptive speculative decoding (`--speculative-adaptive`,
//! `--speculative-adaptive-config FILE`): the config's validation, the
//! start-up resolution, and the per-batch-size slots whose steps move by an
//! EMA of accepted drafts. A port of SGLang's own rules:
//!
//! - python/sglang/srt/speculative/adaptive_spec_params.py:
//!   `DEFAULT_ADAPTIVE_CONFIG`, `resolve_adaptive_strategy`,
//!   `_load_adaptive_config` (its ValueError texts),
//!   `adaptive_unsupported_reason`, `AdaptiveStepSlot` (`update`,
//!   `_recompute_params`: warm-up, update interval, down/up hysteresis,
//!   the zero-step probe, `ceiling_coeff`) and its knob defaults;
//! - python/sglang/srt/speculative/adaptive_step_router.py: a batch goes to
//!   the largest key not above it (the smallest key below all keys); no
//!   CUDA graphs are simulated, so no padding first;
//! - python/sglang/srt/arg_groups/speculative_hook.py
//!   `_maybe_disable_adaptive` (a warning and static steps) and
//!   `_init_adaptive_speculative_params` (topk 1, default steps = the
//!   middle candidate, steps must be a candidate, draft tokens = steps + 1).
//!
//! SGLang reports no per-slot state in `/server_info` (its internal state
//! is the server args, where `speculative_num_steps` stays the launch
//! value); a slot's switch is a log line, which llm-sim prints the same way.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// `DEFAULT_ADAPTIVE_CONFIG`: bs 1 -> [1,3,5,7], 8 -> [0,1,3], 32 -> [0,1],
/// 64 -> [0], with its hysteresis values.
fn default_config() -> Value {
    serde_json::json!({
        "1": {"candidate_steps": [1, 3, 5, 7], "up_hysteresis": 0.0,
              "down_hysteresis": -0.25, "ceiling_coeff": 0},
        "8": {"candidate_steps": [0, 1, 3], "up_hysteresis": 0.0,
              "down_hysteresis": 0.0, "ceiling_coeff": 0},
        "32": {"candidate_steps": [0, 1], "up_hysteresis": 0.0,
               "down_hysteresis": 0.0, "ceiling_coeff": 0},
        "64": {"candidate_steps": [0], "up_hysteresis": 0.0,
               "down_hysteresis": 0.0, "ceiling_coeff": 0},
    })
}

/// The loaded config: batch-size key -> (candidates, merged knobs).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub slots: BTreeMap<u64, (Vec<u32>, Map<String, Value>)>,
    /// The file given, for `/server_info`.
    pub path: Option<String>,
    /// `ema` or `throughput_aware` (simulated as `ema`).
    pub strategy: String,
}

impl Config {
    /// The union of every slot's candidates, sorted.
    pub fn candidates(&self) -> Vec<u32> {
        let mut all: Vec<u32> = self.slots.values().flat_map(|s| s.0.clone()).collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Python's `repr` of a JSON value, as SGLang's messages print it.
fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("'{s}'"),
        Value::Array(a) => format!("[{}]", a.iter().map(py_repr).collect::<Vec<_>>().join(", ")),
        Value::Object(o) => format!(
            "{{{}}}",
            o.iter()
                .map(|(k, v)| format!("'{k}': {}", py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The exception SGLang raises for an adaptive config or its launch
/// steps, as the last line of its traceback prints it.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum Raised {
    #[error("FileNotFoundError: [Errno 2] No such file or directory: '{0}'")]
    FileNotFound(String),
    #[error("OSError: {err}: '{path}'")]
    Os { err: String, path: String },
    #[error("json.decoder.JSONDecodeError: {0}")]
    JsonDecode(String),
    #[error("ValueError: {0}")]
    Value(String),
}

/// Load and validate as `_load_adaptive_config` (plus the strategy check
/// of `resolve_adaptive_strategy`).
pub fn load(path: Option<&str>) -> Result<Config, Raised> {
    let cfg = match path {
        None => default_config(),
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Raised::FileNotFound(p.into()),
                _ => Raised::Os {
                    err: e.to_string(),
                    path: p.into(),
                },
            })?;
            serde_json::from_str(&text).map_err(|e| Raised::JsonDecode(e.to_string()))?
        }
    };
    let Value::Object(top) = &cfg else {
        let kind = match cfg {
            Value::Array(_) => "list",
            Value::String(_) => "str",
            Value::Number(_) => "int",
            _ => "NoneType",
        };
        return Err(Raised::Value(format!(
            "speculative adaptive config must be a JSON object, got {kind}"
        )));
    };
    let strategy = top.get("strategy").and_then(Value::as_str).unwrap_or("ema");
    if !["ema", "throughput_aware"].contains(&strategy) {
        return Err(Raised::Value(format!(
            "speculative adaptive config 'strategy' must be 'ema' or \
             'throughput_aware', got '{strategy}'"
        )));
    }
    let mut slots = BTreeMap::new();
    for (key, entry) in top {
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let steps = entry.get("candidate_steps").unwrap_or(&Value::Null);
        let list: Option<Vec<u32>> = steps.as_array().filter(|a| !a.is_empty()).and_then(|a| {
            a.iter()
                .map(|s| s.as_u64().and_then(|n| u32::try_from(n).ok()))
                .collect()
        });
        let Some(mut list) = list else {
            return Err(Raised::Value(format!(
                "BS {key}: candidate_steps must be a list of non-negative ints, got {}",
                py_repr(steps)
            )));
        };
        list.sort_unstable();
        list.dedup();
        // `cfg={**cfg, **entry}`: top-level knobs, the slot's own winning.
        let mut knobs = top.clone();
        if let Value::Object(e) = entry {
            knobs.extend(e.clone());
        }
        slots.insert(key.parse().unwrap_or(u64::MAX), (list, knobs));
    }
    if slots.is_empty() {
        let keys: Vec<String> = top.keys().map(|k| format!("'{k}'")).collect();
        return Err(Raised::Value(format!(
            "speculative_adaptive_config must contain at least one \
             integer-string BS key, e.g. {{\"1\": {{\"candidate_steps\": [1,3,7]}}}}. \
             Got keys: [{}]",
            keys.join(", ")
        )));
    }
    Ok(Config {
        slots,
        path: path.map(String::from),
        strategy: strategy.to_string(),
    })
}

/// `adaptive_unsupported_reason` for what llm-sim simulates: the
/// algorithm (after NEXTN became EAGLE) and topk.
pub fn unsupported_reason(algorithm: &str, topk: Option<u32>) -> Option<String> {
    if !["EAGLE", "EAGLE3"].contains(&algorithm) {
        return Some(format!(
            "speculative_algorithm={algorithm} (only EAGLE/EAGLE3 are supported)"
        ));
    }
    match topk {
        Some(k) if k != 1 => Some(format!(
            "speculative_eagle_topk={k} (only topk=1 is supported)"
        )),
        _ => None,
    }
}

/// `_init_adaptive_speculative_params`: the launch steps (given, else the
/// middle candidate) or the ValueError when they are not a candidate.
pub fn initial_steps(cfg: &Config, steps: Option<u32>) -> Result<u32, Raised> {
    let c = cfg.candidates();
    let steps = steps.unwrap_or(c[c.len() / 2]);
    if !c.contains(&steps) {
        let list: Vec<String> = c.iter().map(u32::to_string).collect();
        return Err(Raised::Value(format!(
            "--speculative-num-steps={steps} is not in the adaptive config \
             candidate_steps [{}]. Pass one of those values.",
            list.join(", ")
        )));
    }
    Ok(steps)
}

/// One batch-size slot: `AdaptiveStepSlot`.
#[derive(Debug, Clone)]
pub struct Slot {
    pub candidates: Vec<u32>,
    pub current: u32,
    pub ema: f64,
    ema_alpha: f64,
    update_interval: u64,
    warmup_batches: u64,
    down_hysteresis: f64,
    up_hysteresis: f64,
    ceiling_coeff: f64,
    batches: u64,
}

impl Slot {
    pub fn new(initial: u32, candidates: Vec<u32>, knobs: &Map<String, Value>) -> Slot {
        let f = |k: &str, d: f64| knobs.get(k).and_then(Value::as_f64).unwrap_or(d);
        let n = |k: &str, d: u64| knobs.get(k).and_then(Value::as_u64).unwrap_or(d);
        let current = if candidates.contains(&initial) {
            initial
        } else {
            candidates[candidates.len() / 2]
        };
        Slot {
            ema: current as f64 - 1.0,
            current,
            candidates,
            ema_alpha: f("ema_alpha", 0.2),
            update_interval: n("update_interval", 5).max(1),
            warmup_batches: n("warmup_batches", 10),
            down_hysteresis: f("down_hysteresis", -0.25),
            up_hysteresis: f("up_hysteresis", 0.0),
            ceiling_coeff: f("ceiling_coeff", 0.0),
            batches: 0,
        }
    }

    /// `update`: feed one verify's accepted drafts per request; the old
    /// steps when they changed.
    pub fn update(&mut self, accepted: &[u32]) -> Option<u32> {
        if accepted.is_empty() {
            return None;
        }
        if self.current > 0 {
            let avg = accepted.iter().map(|&a| a as f64).sum::<f64>() / accepted.len() as f64;
            self.ema = (1.0 - self.ema_alpha) * self.ema + self.ema_alpha * avg;
        }
        self.batches += 1;
        if self.batches <= self.warmup_batches
            || !(self.batches - self.warmup_batches).is_multiple_of(self.update_interval)
        {
            return None;
        }
        let old = self.current;
        let target = self.recompute();
        (target != old).then(|| {
            self.current = target;
            old
        })
    }

    /// `_recompute_params`: the steps the EMA asks for.
    fn recompute(&mut self) -> u32 {
        let c = &self.candidates;
        let old = self.current;
        let mut i = c.iter().position(|&s| s == old).unwrap_or(0);
        if old == 0 {
            i = (i + 1).min(c.len() - 1);
            if c[i] > 0 && self.ema < 0.0 {
                self.ema = c[i] as f64 - 1.0;
            }
            return c[i];
        }
        let start = i;
        while i > 0 {
            let prev = c[i - 1];
            let drop = if prev == 0 { 0.5 } else { prev as f64 - 0.5 } + self.down_hysteresis;
            if self.ema <= drop {
                i -= 1;
            } else {
                break;
            }
        }
        if i == start {
            while i + 1 < c.len() && self.ema > c[i] as f64 - 0.5 + self.up_hysteresis {
                i += 1;
            }
        }
        if self.ceiling_coeff > 0.0 {
            let ceiling = ((self.ema * self.ceiling_coeff).ceil() as i64).max(1) as u32;
            if c[i] > ceiling && c[i] <= old {
                while i > 0 && c[i] > ceiling {
                    i -= 1;
                }
            }
        }
        c[i]
    }
}

/// Every slot and the router: `AdaptiveSpeculativeParams`.
#[derive(Debug, Clone)]
pub struct Adaptive {
    pub slots: BTreeMap<u64, Slot>,
}

impl Adaptive {
    pub fn new(cfg: &Config, initial: u32) -> Adaptive {
        let slots = cfg
            .slots
            .iter()
            .map(|(&bs, (cands, knobs))| (bs, Slot::new(initial, cands.clone(), knobs)))
            .collect();
        Adaptive { slots }
    }

    /// `batch_size_key_for_batch`: the largest key not above `batch`, else
    /// the smallest key.
    pub fn key_for(&self, batch: usize) -> u64 {
        let b = batch as u64;
        self.slots
            .keys()
            .rev()
            .find(|&&k| k <= b)
            .or_else(|| self.slots.keys().next())
            .copied()
            .expect("at least one slot")
    }

    pub fn steps_for(&self, batch: usize) -> u32 {
        self.slots[&self.key_for(batch)].current
    }

    /// `on_verify_complete`: feed the routed slot; log a switch as SGLang
    /// does (`_apply_target_steps`).
    pub fn observe(&mut self, batch: usize, accepted: &[u32]) {
        let key = self.key_for(batch);
        let slot = self.slots.get_mut(&key).expect("routed to a slot");
        if let Some(old) = slot.update(accepted) {
            sweepkit::diag::verbatim(&format!(
                "Adaptive spec params updated: steps {old} -> {} (ema_accept_len={:.2}) \
                 [bs slot {key}; simulated by llm-sim]",
                slot.current, slot.ema
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(text: &str) -> Result<Config, Raised> {
        let dir = std::env::temp_dir().join(format!("llm-sim-adaptive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join(format!(
            "{:x}.json",
            text.len() * 31 + text.bytes().map(u64::from).sum::<u64>() as usize
        ));
        std::fs::write(&p, text).unwrap();
        load(Some(p.to_str().unwrap()))
    }

    #[test]
    fn the_default_config_and_its_candidates() {
        let c = load(None).unwrap();
        assert_eq!(c.candidates(), vec![0, 1, 3, 5, 7]);
        assert_eq!(initial_steps(&c, None), Ok(3));
    }

    #[test]
    fn sglang_refuses_what_sglang_refuses() {
        let c = cfg(r#"{"1": {"candidate_steps": [1, 3]}}"#).unwrap();
        assert_eq!(
            initial_steps(&c, Some(2)).unwrap_err().to_string(),
            "ValueError: --speculative-num-steps=2 is not in the adaptive config \
             candidate_steps [1, 3]. Pass one of those values."
        );
        assert_eq!(
            cfg(r#"{"1": {"candidate_steps": [1, -1]}}"#)
                .unwrap_err()
                .to_string(),
            "ValueError: BS 1: candidate_steps must be a list of non-negative ints, \
             got [1, -1]"
        );
        assert!(cfg(r#"{"ema_alpha": 0.5}"#)
            .unwrap_err()
            .to_string()
            .ends_with("Got keys: ['ema_alpha']"));
        assert!(cfg("[1]").unwrap_err().to_string().ends_with("got list"));
        assert_eq!(
            unsupported_reason("STANDALONE", Some(1)).unwrap(),
            "speculative_algorithm=STANDALONE (only EAGLE/EAGLE3 are supported)"
        );
        assert_eq!(
            unsupported_reason("EAGLE3", Some(4)).unwrap(),
            "speculative_eagle_topk=4 (only topk=1 is supported)"
        );
        assert_eq!(unsupported_reason("EAGLE", None), None);
    }

    #[test]
    fn a_batch_goes_to_the_largest_key_not_above_it() {
        let c = load(None).unwrap();
        let a = Adaptive::new(&c, 3);
        let keys: Vec<u64> = [1, 7, 8, 31, 32, 63, 64, 500]
            .iter()
            .map(|&b| a.key_for(b))
            .collect();
        assert_eq!(keys, vec![1, 1, 8, 8, 32, 32, 64, 64]);
        // Initial 3 where it is a candidate, else the middle one.
        let steps: Vec<u32> = [1, 8, 32, 64].iter().map(|&b| a.steps_for(b)).collect();
        assert_eq!(steps, vec![3, 3, 1, 0]);
    }

    #[test]
    fn steps_climb_with_full_acceptance_and_fall_with_none() {
        let knobs = Map::new();
        let mut s = Slot::new(1, vec![1, 3, 5, 7], &knobs);
        let mut seen = vec![s.current];
        for _ in 0..200 {
            let full = vec![s.current; 4];
            if s.update(&full).is_some() {
                seen.push(s.current);
            }
        }
        assert_eq!(seen, vec![1, 3, 5, 7], "one candidate at a time, up");
        for _ in 0..200 {
            s.update(&[0, 0]);
        }
        assert_eq!(s.current, 1, "all the way down with nothing accepted");
        // Warm-up: no change in the first 10 batches, then every 5th.
        let mut w = Slot::new(1, vec![1, 3], &knobs);
        for i in 1..=14 {
            assert_eq!(w.update(&[1]), None, "batch {i}");
        }
        assert_eq!(w.update(&[1]), Some(1));
    }

    #[test]
    fn a_zero_step_slot_probes_the_next_candidate() {
        let mut s = Slot::new(0, vec![0, 1, 3], &Map::new());
        s.warmup_batches = 0;
        s.update_interval = 1;
        assert_eq!(s.update(&[0]), Some(0));
        assert_eq!(s.current, 1);
        assert_eq!(s.ema, 0.0, "the probe starts from its neutral EMA");
    }
}
