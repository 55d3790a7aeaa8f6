//! The performance model's curve, measured over real sockets: the shape of
//! the reference campaign (big gains to 4 steps, a plateau, and a loss at
//! high concurrency from KV pressure). One test in its own binary, so no
//! other test competes with its timings.

mod common;

use common::{eagle_with, sim, throughput};

/// The default timings doubled: the model is linear in them, so the shape
/// is the same, and a loaded machine's wake-up delays weigh half as much.
const SLOW: &str = "--step-time 4ms --per-seq-time 100us --draft-step-time 50us \
                    --prefill-per-token 10us";

fn measure(steps: u32, concurrency: usize, requests: usize, max_tokens: u64) -> f64 {
    measure_with(&[], steps, concurrency, requests, max_tokens)
}

fn measure_with(
    extra: &[&str],
    steps: u32,
    concurrency: usize,
    requests: usize,
    max_tokens: u64,
) -> f64 {
    let s = steps.to_string();
    let mut args = eagle_with(&s, &["--seed", "7"]);
    args.extend_from_slice(extra);
    let sim = sim(&args);
    let rate = throughput(sim.port, concurrency, requests, max_tokens);
    eprintln!("steps {steps} concurrency {concurrency}: {rate:.0} tok/s");
    rate
}

/// Output tok/s at concurrency 1 for steps 1, 4 and 5. The three run at
/// once, so a busy spell on the machine slows all of them alike instead of
/// skewing one ratio.
fn concurrency_one() -> Vec<f64> {
    let slow: Vec<&str> = SLOW.split_whitespace().collect();
    std::thread::scope(|scope| {
        let runs: Vec<_> = [1, 4, 5]
            .iter()
            .map(|&n| {
                let slow = &slow;
                scope.spawn(move || measure_with(slow, n, 1, 12, 128))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    })
}

/// Why the c=1 rates lack the reference shape, if they do.
fn c1_shape_error(c1: &[f64]) -> Option<String> {
    let (r41, r54) = (c1[1] / c1[0], c1[2] / c1[1]);
    if r41 <= 1.8 {
        return Some(format!("c=1: steps 4 / steps 1 = {r41:.3}, want > 1.8"));
    }
    if r54 >= 1.05 || r54 <= 0.85 {
        return Some(format!(
            "c=1: steps 5 / steps 4 = {r54:.3}, want < 1.05 (and > 0.85: a plateau)"
        ));
    }
    None
}

#[test]
fn curve_has_the_reference_shape() {
    // Wall-clock rates on a shared 2-core machine: a second measurement is
    // allowed when a busy spell spoiled the first; both are reported.
    let first = concurrency_one();
    if let Some(why) = c1_shape_error(&first) {
        eprintln!("{why}; measuring again");
        let second = concurrency_one();
        if let Some(why2) = c1_shape_error(&second) {
            panic!("{why} ({first:?}); again: {why2} ({second:?})");
        }
    }
    let s3 = measure(3, 64, 192, 64);
    let s5 = measure(5, 64, 192, 64);
    assert!(
        s5 < s3,
        "c=64: steps 5 {s5:.0} tok/s should be below steps 3 {s3:.0}"
    );
}

/// The whole sweep (steps 1..10 x concurrency 1/4/16/32/64), for the man
/// page and reports: `cargo test -p llm-sim --test curve -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn print_full_sweep() {
    for steps in 1..=10 {
        let row: Vec<String> = [1, 4, 16, 32, 64]
            .iter()
            .map(|&c| format!("{:6.0}", measure(steps, c, (c * 3).max(16), 128)))
            .collect();
        println!("steps {steps:2}: {}", row.join(" "));
    }
}
