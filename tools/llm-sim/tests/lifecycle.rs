//! Process lifecycle over real sockets: closed port while loading, 503
//! while warming up, 200 when ready; crashes at load and mid-run; SIGTERM
//! handling; bad flags.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{completion, eagle_with, post, run_sim, signal, sim, wait_exit, Sim};
use testkit::assert_contains;
use testkit::{cmd, http_get, run};

#[test]
fn readiness_goes_refused_then_503_then_200() {
    // Every poll that sees 503 also sends a generation request, which must be
    // refused too. On a starved machine the warm-up can end between the 503
    // and the POST (CI once saw 200 there): a POST answered 200 is then only
    // allowed when /health says 200 right after it, and at least one POST
    // must have been refused inside the warm-up.
    let sim = Sim::start(&testkit::words("--load-time 700ms --warmup-time 4s"));
    let port = sim.port;
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port must refuse connections while loading"
    );
    let mut refused_posts = 0;
    let seen = common::health_phases(Duration::from_millis(25), |_| {
        match http_get(port, "/health") {
            None => "refused",
            Some((503, body)) => {
                assert_eq!(
                    body, "",
                    "SGLang's health_generate answers 503 with no body"
                );
                // SGLang's trap: /v1/models answers during warm-up.
                let (code, models) = http_get(port, "/v1/models").unwrap();
                assert_eq!(code, 200);
                assert_contains(&models, "llm-sim (simulated)");
                let (code, _, _) = post(port, "/v1/completions", &completion(4, false));
                if code == 503 {
                    refused_posts += 1;
                } else {
                    assert_eq!(code, 200, "generation during warm-up");
                    let after = http_get(port, "/health").map(|(c, _)| c);
                    assert_eq!(
                        after,
                        Some(200),
                        "generation answered 200 while /health says 503"
                    );
                }
                "503"
            }
            Some((200, _)) => "200",
            Some((code, body)) => panic!("unexpected {code}: {body}"),
        }
    });
    assert_eq!(seen, ["refused", "503", "200"], "{}", sim.stderr());
    assert!(
        refused_posts > 0,
        "no generation request was refused during warm-up"
    );
    assert!(sim.stderr().contains("SIMULATED"));
}

#[test]
fn crash_on_load_prints_cuda_oom_and_exits_1() {
    let r = run_sim(&["--load-time", "50ms", "--crash-on-load"]);
    r.expect_code(1);
    let bound = &r.json_lines()[0];
    assert_eq!(bound["event"], "bound");
    assert_eq!(bound["simulated"], true);
    assert!(r
        .stderr()
        .contains("torch.OutOfMemoryError: CUDA out of memory"));
}

#[test]
fn speculative_kv_over_capacity_ooms_at_load() {
    let args = eagle_with(
        "1",
        &testkit::words("--port 0 --load-time 0s --kv-capacity-tokens 4096"),
    );
    let r = run(cmd("llm-sim", &args), "");
    r.expect_code(1);
    let err = r.stderr();
    assert_contains(&err, "CUDA out of memory");
    assert_contains(&err, "speculative KV does not fit");
}

#[test]
fn crash_after_duration_exits_1_mid_run() {
    let mut sim = sim(&["--crash-after", "300ms"]);
    assert_eq!(http_get(sim.port, "/health").unwrap().0, 200);
    assert_eq!(wait_exit(&mut sim, Duration::from_secs(10)), Some(1));
    assert_contains(&sim.stderr(), "illegal memory access");
}

#[test]
fn crash_after_requests_kills_the_nth_request() {
    let mut sim = sim(&["--crash-after-requests", "3"]);
    for _ in 0..2 {
        assert_eq!(
            post(sim.port, "/v1/completions", &completion(4, false)).0,
            200
        );
    }
    let r = ureq::post(&format!("{}/v1/completions", sim.base_url()))
        .send_string(&completion(4, false).to_string());
    assert!(r.is_err(), "the third request must fail");
    assert_eq!(wait_exit(&mut sim, Duration::from_secs(10)), Some(1));
    assert!(sim.stderr().contains("--crash-after-requests"));
}

#[test]
fn sigterm_exits_0() {
    let mut sim = sim(&[]);
    signal(sim.pid(), "-TERM");
    assert_eq!(wait_exit(&mut sim, Duration::from_secs(5)), Some(0));
}

#[test]
fn ignore_sigterm_keeps_serving_then_exits() {
    let mut sim = sim(&["--ignore-sigterm", "1200ms"]);
    let t0 = Instant::now();
    signal(sim.pid(), "-TERM");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        sim.child.try_wait().unwrap().is_none(),
        "exited despite --ignore-sigterm"
    );
    assert_eq!(http_get(sim.port, "/health").unwrap().0, 200);
    assert_contains(&sim.stderr(), "received SIGTERM; ignoring it");
    assert_eq!(wait_exit(&mut sim, Duration::from_secs(10)), Some(0));
    assert!(t0.elapsed() >= Duration::from_millis(1100));
}

#[test]
fn ignore_sigterm_yields_to_sigkill() {
    let mut sim = sim(&["--ignore-sigterm", "60s"]);
    signal(sim.pid(), "-TERM");
    std::thread::sleep(Duration::from_millis(200));
    assert!(sim.child.try_wait().unwrap().is_none());
    signal(sim.pid(), "-KILL");
    assert_eq!(wait_exit(&mut sim, Duration::from_secs(5)), Some(-1));
}

#[test]
fn bad_flags_are_usage_errors() {
    let r = run(cmd("llm-sim", &["--error-rate", "2"]), "");
    r.expect_code(2);
    assert!(
        r.stderr().starts_with("llm-sim: error: --error-rate"),
        "{}",
        r.stderr()
    );
    assert!(r.stdout().is_empty());
    run(cmd("llm-sim", &["--step-time", "soon"]), "").expect_code(2);
}

#[test]
fn port_in_use_is_an_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let r = run(cmd("llm-sim", &["--port", &port]), "");
    r.expect_code(1);
    assert_contains(&r.stderr(), "llm-sim: error: binding");
}
