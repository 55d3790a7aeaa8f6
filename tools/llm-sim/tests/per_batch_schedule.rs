//! The vllm personality runs vLLM's per-batch-size speculative schedule
//! (`num_speculative_tokens_per_batch_size`), given in vLLM's dotted flag
//! form: draft tokens per step follow the number of running requests in
//! vLLM's own counters, and a schedule vLLM refuses fails the start with
//! vLLM's message.

mod common;

use common::{run_sim, sim, throughput};
use testkit::http_get;

/// (drafts, draft tokens) from vLLM's spec-decode counters.
fn counters(port: u16) -> (u64, u64) {
    let (_, m) = http_get(port, "/metrics").unwrap();
    let value = |name: &str| -> u64 {
        m.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} in\n{m}")) as u64
    };
    (
        value("vllm:spec_decode_num_drafts_total{"),
        value("vllm:spec_decode_num_draft_tokens_total{"),
    )
}

#[test]
fn draft_tokens_per_step_follow_the_batch_size() {
    let sim = sim(&testkit::words("--personality vllm --speculative-config.method eagle --speculative-config.num_speculative_tokens 4 --speculative-config.num_speculative_tokens_per_batch_size [[1,1,4],[2,64,1]] --seed 3"));
    throughput(sim.port, 1, 4, 40);
    let (d1, t1) = counters(sim.port);
    assert!(d1 > 0, "{}", sim.stderr());
    assert_eq!(t1, 4 * d1, "c=1: every verify drafts 4 tokens");
    throughput(sim.port, 8, 32, 40);
    let (d8, t8) = counters(sim.port);
    let per_draft = (t8 - t1) as f64 / (d8 - d1) as f64;
    // Batches of 2..8 draft 1; only the ramp-up and drain run alone.
    assert!(per_draft < 1.5, "c=8: {per_draft} draft tokens per verify");
}

#[test]
fn a_schedule_vllm_refuses_fails_the_start_with_its_message() {
    let bad = [
        (
            "[[2,8,3]]",
            "ValueError: The first batch-size range must start at 1 so every runtime \
             batch size has a defined schedule.",
        ),
        (
            "[[1,8,3],[4,16,1]]",
            "ValueError: Batch-size ranges must be non-overlapping and sorted.",
        ),
        (
            "[[1,8,-1]]",
            "ValueError: num_speculative_tokens_per_batch_size values must be >= 0.",
        ),
    ];
    for (schedule, line) in bad {
        let cfg = format!(
            r#"{{"method":"eagle","num_speculative_tokens":3,"num_speculative_tokens_per_batch_size":{schedule}}}"#
        );
        let r = run_sim(&[
            "--personality",
            "vllm",
            "--load-time",
            "50ms",
            "--warmup-time",
            "0s",
            "--speculative-config",
            &cfg,
        ]);
        r.expect_code(1);
        assert!(r.stderr().lines().any(|l| l == line), "{}", r.stderr());
        assert!(
            r.stderr().trim_end().ends_with(
                "Engine core initialization failed. See root cause above. Failed core proc(s): {}"
            ),
            "{}",
            r.stderr()
        );
    }
}
