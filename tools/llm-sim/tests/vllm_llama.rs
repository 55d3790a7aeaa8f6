//! The vllm and llama.cpp personalities over real sockets: start-up over
//! time, vLLM's --speculative-config and its failures, developer-mode
//! /server_info, its counters, API keys, and the SIGTERM lost while loading.

mod common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{call, completion, run_sim, signal, sim, stream, Sim};
use serde_json::{json, Value};
use testkit::assert_contains;
use testkit::{bin, http_get};

const SPEC3: &str = r#"{"method": "eagle", "num_speculative_tokens": 3}"#;

#[test]
fn vllm_port_refused_until_the_engine_is_built_then_everything_at_once() {
    let sim = Sim::start(&testkit::words(
        "--personality vllm --load-time 400ms --warmup-time 400ms",
    ));
    let port = sim.port;
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(10), "{}", sim.stderr());
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        t0.elapsed() >= Duration::from_millis(700),
        "load and warm-up behind a closed port"
    );
    for path in ["/health", "/v1/models", "/version", "/metrics"] {
        assert_eq!(
            http_get(port, path).unwrap().0,
            200,
            "{path} at the first connect"
        );
    }
    let (_, v) = http_get(port, "/version").unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&v).unwrap()["version"],
        "0.32.0"
    );
    for path in ["/health_generate", "/server_info", "/get_server_info"] {
        assert_eq!(http_get(port, path).unwrap().0, 404, "{path} is not vLLM's");
    }
}

#[test]
fn vllm_speculative_config_sets_steps_and_counters() {
    let sim = sim(&[
        "--personality",
        "vllm",
        "--speculative-config",
        SPEC3,
        "--seed",
        "8",
    ]);
    let s = stream(
        sim.port,
        "/v1/chat/completions",
        &json!({
        "messages": [{"role": "user", "content": "hi there"}], "max_tokens": 60,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}}),
    );
    let first = s.events[0].json().unwrap();
    assert_eq!(
        first["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert!(first.get("usage").is_none(), "vLLM leaves unset fields out");
    let (_, m) = http_get(sim.port, "/metrics").unwrap();
    let value = |name: &str| -> u64 { common::metric(&m, name) };
    assert_eq!(value("vllm:generation_tokens_total{"), 60);
    let drafts = value("vllm:spec_decode_num_drafts_total{");
    assert_eq!(
        value("vllm:spec_decode_num_draft_tokens_total{"),
        3 * drafts
    );
    assert!(m.contains("vllm:spec_decode_num_accepted_tokens_total{"));
    assert!(m.contains("vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name=\"sim-llama-8b\",position=\"2\"}"));
    assert!(
        !m.contains("position=\"3\""),
        "three positions for three tokens"
    );
}

#[test]
fn vllm_bad_speculative_config_fails_like_vllm() {
    let r = run_sim(&[
        "--personality",
        "vllm",
        "--speculative-config",
        "{\"method\": eagle",
    ]);
    r.expect_code(2);
    assert_eq!(r.stdout(), "");
    assert!(
        r.stderr().contains(
            "vllm serve: error: argument --speculative-config: Value {\"method\": eagle cannot be \
         converted to <function loads"
        ),
        "{}",
        r.stderr()
    );
    let r = run_sim(&[
        "--personality",
        "vllm",
        "--load-time",
        "100ms",
        "--speculative-config",
        r#"{"method": "eagle"}"#,
    ]);
    r.expect_code(1);
    assert_eq!(r.json_lines()[0]["event"], "bound");
    assert!(r
        .stderr()
        .contains("ValidationError: 1 validation error for SpeculativeConfig"));
    let r = run_sim(&testkit::words(
        "--personality vllm --speculative-num-steps 3",
    ));
    r.expect_code(2);
    assert!(r
        .stderr()
        .contains("unrecognized arguments: --speculative-num-steps"));
}

/// llm-sim started with an extra environment; killed on drop.
struct EnvSim(Child, u16);

impl EnvSim {
    fn start(args: &[&str], env: (&str, &str)) -> EnvSim {
        let mut child = Command::new(bin("llm-sim"))
            .args(["--port", "0", "--load-time", "0s", "--warmup-time", "0s"])
            .args(args)
            .env(env.0, env.1)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = serde_json::from_str::<Value>(&line).unwrap()["port"]
            .as_u64()
            .unwrap() as u16;
        let t0 = Instant::now();
        while http_get(port, "/health").map(|r| r.0) != Some(200) {
            assert!(t0.elapsed() < Duration::from_secs(10));
            std::thread::sleep(Duration::from_millis(10));
        }
        EnvSim(child, port)
    }
}

impl Drop for EnvSim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn vllm_server_info_only_in_dev_mode_text_unless_json() {
    let args = ["--personality", "vllm", "--speculative-config", SPEC3];
    let off = EnvSim::start(&args, ("VLLM_SERVER_DEV_MODE", "0"));
    assert_eq!(http_get(off.1, "/server_info").unwrap().0, 404);
    let on = EnvSim::start(&args, ("VLLM_SERVER_DEV_MODE", "1"));
    let (code, text) = http_get(on.1, "/server_info").unwrap();
    assert_eq!(code, 200);
    let v: Value = serde_json::from_str(&text).unwrap();
    let config = v["vllm_config"]
        .as_str()
        .expect("str(vllm_config) by default");
    assert_contains(config, "num_speculative_tokens");
    let (_, j) = http_get(on.1, "/server_info?config_format=json").unwrap();
    let v: Value = serde_json::from_str(&j).unwrap();
    assert_eq!(
        v["vllm_config"]["speculative_config"]["num_speculative_tokens"],
        3
    );
    assert!(v["vllm_env"].is_object() && v["system_env"].is_object());
}

#[test]
fn vllm_api_key_guards_v1_only() {
    let sim = sim(&testkit::words("--personality vllm --api-key k-9"));
    assert_eq!(call(sim.port, "/v1/models", None, None).0, 401);
    assert_eq!(call(sim.port, "/v1/models", None, Some("k-9")).0, 200);
    let (code, _) = call(
        sim.port,
        "/v1/completions",
        Some(&completion(2, false)),
        None,
    );
    assert_eq!(code, 401);
    for path in ["/health", "/version", "/metrics"] {
        assert_eq!(call(sim.port, path, None, None).0, 200, "{path}");
    }
}

#[test]
fn vllm_first_sigterm_while_loading_is_lost_the_second_ends_it() {
    let mut sim = Sim::start(&testkit::words(
        "--personality vllm --load-time 800ms --warmup-time 0s",
    ));
    std::thread::sleep(Duration::from_millis(200));
    signal(sim.pid(), "-TERM");
    // Lost: it comes up anyway.
    sim.wait_health(Duration::from_secs(10));
    assert!(sim.child.try_wait().unwrap().is_none());
    assert!(sim
        .stderr()
        .contains("received SIGTERM while loading; lost"));
    let t0 = Instant::now();
    signal(sim.pid(), "-TERM");
    assert_eq!(common::wait_exit(&mut sim, Duration::from_secs(5)), Some(0));
    assert!(t0.elapsed() < Duration::from_secs(2));
    // Two SIGTERMs during load: the second ends it before it ever listens.
    let mut twice = Sim::start(&testkit::words("--personality vllm --load-time 5s"));
    std::thread::sleep(Duration::from_millis(200)); // signal handlers installed
    signal(twice.pid(), "-TERM");
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        twice.child.try_wait().unwrap().is_none(),
        "the first is lost"
    );
    signal(twice.pid(), "-TERM");
    assert_eq!(
        common::wait_exit(&mut twice, Duration::from_secs(3)),
        Some(0)
    );
}

#[test]
fn llama_cpp_listens_at_once_with_loading_model_503s() {
    let sim = Sim::start(&testkit::words(
        "--personality llama.cpp --load-time 400ms --warmup-time 200ms",
    ));
    let port = sim.port;
    let t0 = Instant::now();
    let (code, body) = loop {
        if let Some(r) = http_get(port, "/health") {
            break r;
        }
        assert!(t0.elapsed() < Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(code, 503);
    assert_contains(&body, "Loading model");
    assert_eq!(
        http_get(port, "/v1/models").unwrap().0,
        503,
        "every route while loading"
    );
    sim.wait_health(Duration::from_secs(10));
    for path in ["/v1/models", "/props", "/slots"] {
        assert_eq!(http_get(port, path).unwrap().0, 200, "{path}");
    }
    // llama-server serves /metrics only with --metrics: 501 naming it.
    let (code, body) = http_get(port, "/metrics").unwrap();
    assert_eq!(code, 501, "{body}");
    assert_contains(&body, "Start it with `--metrics`");
    let s = stream(port, "/v1/completions", &completion(5, true));
    assert!(s.usage_event().unwrap()["timings"]["predicted_n"] == 5);
}

/// With `--metrics`, llama-server's own names, unlabelled: the requests
/// processing and deferred, the token and speculative counters (never
/// vLLM's names, which the llama.cpp personality served before).
#[test]
fn llama_cpp_metrics_carry_llama_servers_names() {
    let sim = Sim::start_ready(&testkit::words(
        "--personality llama.cpp --metrics --zero-delay",
    ));
    let s = stream(sim.port, "/v1/completions", &completion(5, true));
    assert!(s.usage_event().is_some());
    let (code, m) = http_get(sim.port, "/metrics").unwrap();
    assert_eq!(code, 200, "{m}");
    assert!(!m.contains("vllm:"), "{m}");
    assert!(m.contains("llamacpp:requests_processing 0\n"), "{m}");
    assert!(m.contains("llamacpp:requests_deferred 0\n"), "{m}");
    assert!(m.contains("llamacpp:tokens_predicted_total 5\n"), "{m}");
    assert!(m.contains("llamacpp:spec_decode_num_drafts_total "), "{m}");
}
