//! Live counters and their Prometheus text: vLLM's names, SGLang's (whose
//! speculative figures are gauges over a window of recent verify steps,
//! not counters) and llama.cpp's (`llamacpp:`, unlabelled).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Draft positions with their own accepted-token counter.
pub const MAX_POSITIONS: usize = 16;
/// Verify steps per SGLang gauge update: the scheduler recomputes
/// `spec_accept_length` every `decode_log_interval` (40) decode batches
/// (`python/sglang/srt/managers/scheduler_metrics_mixin.py`
/// `log_decode_stats`), then resets its window.
pub const SGLANG_WINDOW: u64 = 40;

/// The running window of SGLang's speculative gauges.
#[derive(Debug, Default)]
struct Window {
    steps: u64,
    drafted: u64,
    accepted: u64,
}

#[derive(Debug, Default)]
pub struct Metrics {
    /// TCP connections accepted (a client's connection reuse shows here).
    pub connections: AtomicU64,
    pub requests_received: AtomicU64,
    pub requests_success: AtomicU64,
    pub requests_error: AtomicU64,
    /// Streams the client closed before their end (cancelled requests).
    pub requests_aborted: AtomicU64,
    pub prompt_tokens: AtomicU64,
    /// Prompt tokens looked up in the prefix cache, and found there
    /// (prefix_cache.rs).
    pub prefix_cache_queries: AtomicU64,
    pub prefix_cache_hits: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub drafts: AtomicU64,
    pub draft_tokens: AtomicU64,
    pub accepted_tokens: AtomicU64,
    pub accepted_per_pos: [AtomicU64; MAX_POSITIONS],
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub kv_used: AtomicU64,
    window: Mutex<Window>,
    /// Last window's tokens per verify step (f64 bits; 0 before any).
    accept_length_bits: AtomicU64,
    /// Last window's accepted / proposed drafts (f64 bits).
    accept_rate_bits: AtomicU64,
}

impl Metrics {
    /// Count one step's speculative outcome for one sequence.
    pub fn spec(&self, drafted: u32, accepted: u32) {
        if drafted == 0 {
            return;
        }
        self.drafts.fetch_add(1, Relaxed);
        self.draft_tokens.fetch_add(drafted as u64, Relaxed);
        self.accepted_tokens.fetch_add(accepted as u64, Relaxed);
        for pos in 0..(accepted as usize).min(MAX_POSITIONS) {
            self.accepted_per_pos[pos].fetch_add(1, Relaxed);
        }
        let mut w = self.window.lock().unwrap_or_else(|e| e.into_inner());
        w.steps += 1;
        w.drafted += drafted as u64;
        w.accepted += accepted as u64;
        if w.steps >= SGLANG_WINDOW {
            let len = (w.steps + w.accepted) as f64 / w.steps as f64;
            let rate = w.accepted as f64 / w.drafted.max(1) as f64;
            self.accept_length_bits.store(len.to_bits(), Relaxed);
            self.accept_rate_bits.store(rate.to_bits(), Relaxed);
            *w = Window::default();
        }
    }

    /// SGLang's Prometheus text (`python/sglang/srt/metrics/collector.py`
    /// `SchedulerMetricsCollector`, `TokenizerMetricsCollector`): token and
    /// request counters, load gauges, and `spec_accept_length` /
    /// `spec_accept_rate` as gauges.
    pub fn render_sglang(&self, model: &str, kv_capacity: u64) -> String {
        let mut x = Exposition::new(format!(
            "engine_type=\"unified\",model_name=\"{model}\",tp_rank=\"0\",dp_rank=\"0\""
        ));
        let mut put = |name: &str, kind: &str, help: &str, v: String| x.put(name, kind, help, v);
        let c = |a: &AtomicU64| a.load(Relaxed).to_string();
        let f = |a: &AtomicU64| format!("{}", f64::from_bits(a.load(Relaxed)));
        put(
            "sglang:num_running_reqs",
            "gauge",
            "The number of running requests.",
            c(&self.running),
        );
        put(
            "sglang:num_queue_reqs",
            "gauge",
            "The number of requests in the waiting queue.",
            c(&self.waiting),
        );
        let usage = self.kv_used.load(Relaxed) as f64 / kv_capacity.max(1) as f64;
        put(
            "sglang:token_usage",
            "gauge",
            "The token usage.",
            format!("{usage}"),
        );
        // SGLang's gauge is over recent prefill batches; this one is the
        // lifetime ratio of the counters vLLM's personality serves.
        let q = self.prefix_cache_queries.load(Relaxed);
        let hit_rate = self.prefix_cache_hits.load(Relaxed) as f64 / q.max(1) as f64;
        put(
            "sglang:cache_hit_rate",
            "gauge",
            "The prefix cache hit rate.",
            format!("{hit_rate}"),
        );
        put(
            "sglang:spec_accept_length",
            "gauge",
            "The average acceptance length of speculative decoding.",
            f(&self.accept_length_bits),
        );
        put(
            "sglang:spec_accept_rate",
            "gauge",
            "The average acceptance rate of speculative decoding.",
            f(&self.accept_rate_bits),
        );
        put(
            "sglang:prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            c(&self.prompt_tokens),
        );
        put(
            "sglang:generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            c(&self.generation_tokens),
        );
        put(
            "sglang:num_requests_total",
            "counter",
            "Number of requests processed.",
            c(&self.requests_success),
        );
        self.render_own(&mut x);
        x.text
    }

    /// llm-sim's own counters (not a real server's), for clients' own tests.
    fn render_own(&self, x: &mut Exposition) {
        let c = |a: &AtomicU64| a.load(Relaxed).to_string();
        for (name, help, v) in [
            (
                "llm_sim_connections_total",
                "TCP connections accepted.",
                &self.connections,
            ),
            (
                "llm_sim_requests_received_total",
                "Generation requests received.",
                &self.requests_received,
            ),
            (
                "llm_sim_requests_error_total",
                "Requests answered with an error.",
                &self.requests_error,
            ),
            (
                "llm_sim_requests_aborted_total",
                "Streams the client closed before their end.",
                &self.requests_aborted,
            ),
        ] {
            x.put(name, "counter", help, c(v));
        }
    }

    /// SGLang's avg_spec_accept_length: tokens per verify step, lifetime.
    pub fn avg_accept_length(&self) -> f64 {
        let drafts = self.drafts.load(Relaxed);
        if drafts == 0 {
            return 1.0;
        }
        (drafts + self.accepted_tokens.load(Relaxed)) as f64 / drafts as f64
    }

    /// llama-server's Prometheus text: the names of
    /// `server_task_result_metrics::to_metrics` (`tools/server/server-task.cpp`)
    /// as llama-server with `--metrics` serves them, unlabelled. llm-sim
    /// keeps no prompt or generation timings, nor decode calls: those
    /// families (`prompt_seconds_total`, `tokens_predicted_seconds_total`,
    /// `n_decode_total`, `n_tokens_max` and the throughput gauges) are
    /// left out rather than served as invented numbers.
    pub fn render_llamacpp(&self) -> String {
        let mut x = Exposition::new(String::new());
        let c = |a: &AtomicU64| a.load(Relaxed);
        let cached = c(&self.prefix_cache_hits);
        let counters = [
            (
                "prompt_tokens_total",
                "Number of prompt tokens processed, excluding cached tokens",
                c(&self.prompt_tokens).saturating_sub(cached),
            ),
            (
                "prompt_tokens_cached_total",
                "Number of prompt tokens reused from the cache",
                cached,
            ),
            (
                "tokens_predicted_total",
                "Number of generation tokens processed",
                c(&self.generation_tokens),
            ),
            (
                "spec_decode_num_draft_tokens_total",
                "Speculative: Total draft tokens generated",
                c(&self.draft_tokens),
            ),
            (
                "spec_decode_num_accepted_tokens_total",
                "Speculative: Total draft tokens accepted by the target model",
                c(&self.accepted_tokens),
            ),
            (
                "spec_decode_num_drafts_total",
                "Speculative: Total speculative decoding verification steps",
                c(&self.drafts),
            ),
        ];
        for (name, help, v) in counters {
            x.put(&format!("llamacpp:{name}"), "counter", help, v.to_string());
        }
        let gauges = [
            (
                "requests_processing",
                "Number of requests processing",
                &self.running,
            ),
            (
                "requests_deferred",
                "Number of requests deferred",
                &self.waiting,
            ),
        ];
        for (name, help, v) in gauges {
            x.put(&format!("llamacpp:{name}"), "gauge", help, c(v).to_string());
        }
        x.text
    }

    /// Prometheus text exposition.
    pub fn render(&self, model: &str, steps: u32, kv_capacity: u64) -> String {
        let mut x = Exposition::new(format!("model_name=\"{model}\""));
        let mut put = |name: &str, kind: &str, help: &str, v: String| x.put(name, kind, help, v);
        let c = |a: &AtomicU64| a.load(Relaxed).to_string();
        put(
            "vllm:num_requests_running",
            "gauge",
            "Requests in the decode batch.",
            c(&self.running),
        );
        put(
            "vllm:num_requests_waiting",
            "gauge",
            "Requests queued.",
            c(&self.waiting),
        );
        let kv = self.kv_used.load(Relaxed) as f64 / kv_capacity.max(1) as f64;
        put(
            "vllm:kv_cache_usage_perc",
            "gauge",
            "KV cache usage (1 = full).",
            format!("{kv}"),
        );
        // vLLM 0.32 always publishes it (v1/metrics/loggers.py
        // `PrometheusStatLogger`, counter `vllm:num_preemptions`). llm-sim
        // reserves a request's whole KV when it admits it (engine.rs), so
        // a request that does not fit queues (`num_requests_waiting`) and
        // none is ever preempted: 0, as a vLLM that never preempted says.
        put(
            "vllm:num_preemptions_total",
            "counter",
            "Cumulative number of preemption from the engine.",
            "0".into(),
        );
        put(
            "vllm:prompt_tokens_total",
            "counter",
            "Prompt tokens.",
            c(&self.prompt_tokens),
        );
        put(
            "vllm:generation_tokens_total",
            "counter",
            "Generated tokens.",
            c(&self.generation_tokens),
        );
        put(
            "vllm:prefix_cache_queries_total",
            "counter",
            "Prefix cache queries, in terms of number of queried tokens.",
            c(&self.prefix_cache_queries),
        );
        put(
            "vllm:prefix_cache_hits_total",
            "counter",
            "Prefix cache hits, in terms of number of cached tokens.",
            c(&self.prefix_cache_hits),
        );
        put(
            "vllm:spec_decode_num_drafts_total",
            "counter",
            "Verify steps with drafts.",
            c(&self.drafts),
        );
        put(
            "vllm:spec_decode_num_draft_tokens_total",
            "counter",
            "Draft tokens proposed.",
            c(&self.draft_tokens),
        );
        put(
            "vllm:spec_decode_num_accepted_tokens_total",
            "counter",
            "Draft tokens accepted.",
            c(&self.accepted_tokens),
        );
        self.render_own(&mut x);
        let Exposition { text: s, labels: l } = &mut x;
        let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
        let _ = writeln!(
            s,
            "# HELP {name} Accepted draft tokens by position.\n# TYPE {name} counter"
        );
        for pos in 0..(steps as usize).min(MAX_POSITIONS) {
            let v = self.accepted_per_pos[pos].load(Relaxed);
            let _ = writeln!(s, "{name}{{{l},position=\"{pos}\"}} {v}");
        }
        let name = "vllm:request_success_total";
        let _ = writeln!(s, "# HELP {name} Finished requests.\n# TYPE {name} counter");
        let _ = writeln!(
            s,
            "{name}{{{l},finished_reason=\"any\"}} {}",
            c(&self.requests_success)
        );
        // No finished_reason="abort" for a client that went away: vLLM
        // 0.32's API server aborts such a request in
        // v1/engine/output_processor.py `abort_requests`, which records no
        // finished-request stats, so its counters do not move either.
        let name = "vllm:cache_config_info";
        let _ = writeln!(s, "# HELP {name} Cache config.\n# TYPE {name} gauge");
        let _ = writeln!(
            s,
            "{name}{{num_gpu_blocks=\"{kv_capacity}\",block_size=\"1\"}} 1"
        );
        x.text
    }
}

/// A Prometheus text exposition being written: its text so far and the
/// labels every sample carries.
struct Exposition {
    text: String,
    labels: String,
}

impl Exposition {
    fn new(labels: String) -> Exposition {
        Exposition {
            text: String::from("# llm-sim: SIMULATED server, not a real model\n"),
            labels,
        }
    }

    /// One metric family: its HELP and TYPE lines and its one sample.
    fn put(&mut self, name: &str, kind: &str, help: &str, v: String) {
        let (s, l) = (&mut self.text, &self.labels);
        let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}");
        match l.is_empty() {
            true => writeln!(s, "{name} {v}"),
            false => writeln!(s, "{name}{{{l}}} {v}"),
        }
        .ok();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_counters_and_accept_length() {
        let m = Metrics::default();
        m.spec(4, 3);
        m.spec(4, 1);
        m.spec(0, 0);
        assert_eq!(m.draft_tokens.load(Relaxed), 8);
        assert_eq!(m.accepted_per_pos[0].load(Relaxed), 2);
        assert_eq!(m.accepted_per_pos[2].load(Relaxed), 1);
        assert_eq!(m.avg_accept_length(), 3.0);
        let text = m.render("x", 4, 100);
        assert!(text.contains("vllm:spec_decode_num_accepted_tokens_total{model_name=\"x\"} 4\n"));
    }

    #[test]
    fn sglang_gauges_cover_the_last_window() {
        let m = Metrics::default();
        let gauge = |m: &Metrics| {
            let t = m.render_sglang("x", 100);
            let line = t
                .lines()
                .find(|l| l.starts_with("sglang:spec_accept_length{"))
                .unwrap()
                .to_string();
            line.rsplit(' ').next().unwrap().parse::<f64>().unwrap()
        };
        assert_eq!(gauge(&m), 0.0);
        for _ in 0..SGLANG_WINDOW {
            m.spec(4, 4);
        }
        assert_eq!(gauge(&m), 5.0);
        for _ in 0..SGLANG_WINDOW {
            m.spec(4, 0);
        }
        assert_eq!(
            gauge(&m),
            1.0,
            "a gauge of the last window, not a lifetime average"
        );
        assert_eq!(m.avg_accept_length(), 3.0);
        assert!(!m.render_sglang("x", 100).contains("spec_decode"));
    }
}
