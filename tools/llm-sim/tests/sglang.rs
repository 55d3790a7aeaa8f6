//! The sglang personality over real sockets: start-up over time, flag
//! resolution and its crashes, the 48-request cap, API keys and the
//! secrets /server_info reports, /metrics, the OpenAI SSE shape and the
//! native /generate stream.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{call, completion, eagle, eagle_with, run_sim, sim, stream, throughput, Sim};
use serde_json::{json, Value};
use testkit::{cmd, http_get, run};

fn info(port: u16, key: Option<&str>) -> Value {
    let (code, body) = call(port, "/server_info", None, key);
    assert_eq!(code, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn start_up_refused_then_models_before_health_then_slow_probes() {
    let sim = Sim::start(&[
        "--load-time",
        "600ms",
        // Long enough for the seven requests the test sends once it sees
        // 503: with 600 ms the warm-up ended between /health and the
        // completion on a loaded machine (a cold `make test`).
        "--warmup-time",
        "3s",
        "--health-probe-time",
        "300ms",
    ]);
    let port = sim.port;
    assert!(
        TcpStream::connect(("127.0.0.1", port)).is_err(),
        "closed while loading"
    );
    let seen = common::health_phases(Duration::from_millis(20), |seen| {
        let probe = Instant::now();
        match http_get(port, "/health") {
            None => "refused",
            // The warm-up checks run once, at the first 503: later 503s
            // may come moments before the warm-up ends, and a completion
            // sent then can fairly be served.
            Some((503, _)) if seen.last() == Some(&"503") => "503",
            Some((503, body)) => {
                assert_eq!(body, "");
                assert_eq!(http_get(port, "/health_generate").unwrap().0, 503);
                for path in [
                    "/v1/models",
                    "/get_model_info",
                    "/server_info",
                    "/get_server_info",
                ] {
                    assert_eq!(
                        http_get(port, path).unwrap().0,
                        200,
                        "{path} while warming up"
                    );
                }
                let (code, _) = call(port, "/v1/completions", Some(&completion(2, false)), None);
                assert_eq!(code, 503);
                "503"
            }
            Some((200, _)) => {
                let took = probe.elapsed();
                assert!(
                    took >= Duration::from_millis(300),
                    "a probe generates: {took:?}"
                );
                "200"
            }
            Some((code, body)) => panic!("{code}: {body}"),
        }
    });
    assert_eq!(seen, ["refused", "503", "200"], "{}", sim.stderr());
    assert_eq!(http_get(port, "/health_generate").unwrap().0, 200);
}

#[test]
fn steps_without_topk_dies_with_sglangs_type_error_after_start_up() {
    let t0 = Instant::now();
    let args = [
        "--port",
        "0",
        "--load-time",
        "300ms",
        "--speculative-algorithm",
        "EAGLE",
        "--speculative-num-steps",
        "3",
    ];
    let r = run(cmd("llm-sim", &args), "");
    r.expect_code(1);
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "after the start-up delay"
    );
    assert_eq!(r.json_lines()[0]["event"], "bound");
    let err = r.stderr();
    assert_eq!(
        err.lines().last().unwrap(),
        "TypeError: '>' not supported between instances of 'NoneType' and 'int'",
        "{err}"
    );
    assert!(err.contains("Traceback (most recent call last):"));
    assert!(err.contains("SIMULATED"));
}

#[test]
fn mtp_is_not_an_algorithm() {
    let r = run_sim(&["--speculative-algorithm", "MTP"]);
    r.expect_code(2);
    assert_eq!(r.stdout(), "", "argparse fails before anything binds");
    assert!(
        r.stderr().contains(
            "launch_server.py: error: argument --speculative-algorithm: invalid choice: 'MTP' \
         (choose from 'EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM')"
        ),
        "{}",
        r.stderr()
    );
}

#[test]
fn topk_one_forces_draft_tokens_nextn_is_eagle_and_cap_is_48() {
    let sim = sim(&testkit::words("--speculative-algorithm NEXTN --speculative-eagle-topk 1 --speculative-num-steps 3 --speculative-num-draft-tokens 9"));
    let v = info(sim.port, None);
    assert_eq!(v["speculative_algorithm"], "EAGLE");
    assert_eq!(v["speculative_num_steps"], 3);
    assert_eq!(v["speculative_num_draft_tokens"], 4);
    assert_eq!(v["max_running_requests"], 48);
    assert!(sim.stderr().contains("Max running requests is reset to 48"));
    assert!(sim
        .stderr()
        .contains("adjusted to speculative_num_steps + 1"));
    // Given explicitly, the cap stays as given; no speculation, no cap.
    let given = common::sim(&eagle_with("3", &["--max-running-requests", "64"]));
    assert_eq!(info(given.port, None)["max_running_requests"], 64);
    let plain = common::sim(&[]);
    assert_eq!(info(plain.port, None)["max_running_requests"], 128);
    assert_eq!(info(plain.port, None)["speculative_algorithm"], Value::Null);
}

#[test]
fn tree_draft_tokens_beyond_the_bound_die_during_warm_up() {
    fn tree<'a>(draft: &'a str, warmup: &'a str) -> Vec<&'a str> {
        let mut a = vec!["--load-time", "0s", "--warmup-time", warmup];
        a.extend([
            "--speculative-algorithm",
            "EAGLE",
            "--speculative-num-steps",
            "3",
        ]);
        a.extend([
            "--speculative-eagle-topk",
            "2",
            "--speculative-num-draft-tokens",
            draft,
        ]);
        a
    }
    // 2 + (3 - 1) x 2^2 = 10 candidates: 11 draft tokens fit, 12 do not.
    let mut bad = Sim::start(&tree("12", "400ms"));
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", bad.port)).is_err() {
        assert!(t0.elapsed() < Duration::from_secs(10), "never listened");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        common::wait_exit(&mut bad, Duration::from_secs(10)),
        Some(1)
    );
    let err = bad.stderr();
    assert_eq!(
        err.lines().last().unwrap(),
        "RuntimeError: selected index k out of range",
        "{err}"
    );
    let good = Sim::start_ready(&tree("11", "0s"));
    assert_eq!(info(good.port, None)["speculative_num_draft_tokens"], 11);
}

#[test]
fn concurrency_64_runs_48_and_queues_16() {
    let mut args = eagle("1").to_vec();
    args.extend(["--enable-metrics", "--kv-capacity-tokens", "10000000"]);
    let sim = sim(&args);
    let port = sim.port;
    let load = std::thread::spawn(move || throughput(port, 64, 64, 400));
    let gauge = |m: &str, name: &str| -> u64 {
        let line = m.lines().find(|l| l.starts_with(name)).unwrap();
        line.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64
    };
    let t0 = Instant::now();
    let mut seen = (0, 0);
    while t0.elapsed() < Duration::from_secs(20) {
        let (_, m) = http_get(port, "/metrics").unwrap();
        seen = (
            gauge(&m, "sglang:num_running_reqs"),
            gauge(&m, "sglang:num_queue_reqs"),
        );
        if seen.0 + seen.1 == 64 {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(seen, (48, 16));
    load.join().unwrap();
}

#[test]
fn api_key_guards_all_but_health_and_server_info_leaks_every_secret() {
    let sim = sim(&testkit::words(
        "--api-key sk-live-1 --admin-api-key adm-2 --ssl-keyfile-password pw-3 --enable-metrics",
    ));
    let port = sim.port;
    for path in [
        "/v1/models",
        "/server_info",
        "/get_server_info",
        "/get_model_info",
    ] {
        assert_eq!(call(port, path, None, None).0, 401, "{path}");
        assert_eq!(call(port, path, None, Some("wrong")).0, 401, "{path}");
    }
    let (code, body) = call(port, "/v1/completions", Some(&completion(2, false)), None);
    assert_eq!((code, body.as_str()), (401, r#"{"error":"Unauthorized"}"#));
    assert_eq!(
        call(port, "/generate", Some(&json!({"text": "a"})), None).0,
        401
    );
    for path in ["/health", "/health_generate", "/metrics"] {
        assert_eq!(call(port, path, None, None).0, 200, "{path}");
    }
    let (code, _) = call(
        port,
        "/v1/completions",
        Some(&completion(2, false)),
        Some("sk-live-1"),
    );
    assert_eq!(code, 200);
    let v = info(port, Some("sk-live-1"));
    // As SGLang 0.5.23: in clear, at the top level and in internal_states.
    for scope in [&v, &v["internal_states"][0]] {
        assert_eq!(scope["api_key"], "sk-live-1");
        assert_eq!(scope["admin_api_key"], "adm-2");
        assert_eq!(scope["ssl_keyfile_password"], "pw-3");
    }
    assert!(v["version"].is_string());
}

#[test]
fn metrics_need_enable_metrics_and_are_sglangs_gauges() {
    let off = sim(&eagle("3"));
    assert_eq!(http_get(off.port, "/metrics").unwrap().0, 404);
    let mut args = eagle("3").to_vec();
    args.extend(["--enable-metrics", "--seed", "4"]);
    let on = sim(&args);
    let s = stream(on.port, "/v1/completions", &completion(100, true));
    let (_, m) = http_get(on.port, "/metrics").unwrap();
    let value = |name: &str| -> f64 { common::metric(&m, name) };
    assert_eq!(value("sglang:generation_tokens_total{"), 100.0);
    assert_eq!(value("sglang:prompt_tokens_total{"), 8.0);
    assert!(m.contains("# TYPE sglang:spec_accept_length gauge"));
    assert!(m.contains("# TYPE sglang:spec_accept_rate gauge"));
    assert!(!m.contains("vllm:") && !m.contains("spec_decode"), "{m}");
    // The lifetime average lives in internal_states only.
    let v = info(on.port, None);
    assert!(v.get("avg_spec_accept_length").is_none());
    let avg = v["internal_states"][0]["avg_spec_accept_length"]
        .as_f64()
        .unwrap();
    let verifies = s.events.len() as f64 - 3.0; // prefill chunk, usage, [DONE]
    assert!((avg - 99.0 / verifies).abs() < 1e-9, "{avg} vs {verifies}");
}

#[test]
fn openai_stream_has_sglangs_shape() {
    let mut args = eagle("4").to_vec();
    args.extend(["--speculative-accept-rate", "1", "--seed", "5"]);
    let sim = sim(&args);
    let s = stream(sim.port, "/v1/completions", &completion(40, true));
    assert!(s.done());
    let chunks: Vec<Value> = s.events.iter().filter_map(|e| e.json()).collect();
    for c in &chunks {
        assert!(c.get("meta_info").is_none(), "{c}");
        assert!(c.get("usage").is_some(), "every chunk carries usage: {c}");
    }
    let multi = chunks.iter().filter(|c| {
        c["choices"][0]["text"]
            .as_str()
            .is_some_and(|t| t.split_whitespace().count() > 1)
    });
    assert!(multi.count() > 0, "some chunks carry several tokens");
    let n = chunks.len();
    assert_eq!(chunks[n - 2]["choices"][0]["finish_reason"], "length");
    assert_eq!(chunks[n - 2]["usage"], Value::Null);
    assert_eq!(chunks[n - 1]["choices"], json!([]));
    assert_eq!(chunks[n - 1]["usage"]["completion_tokens"], 40);
    assert_eq!(chunks[n - 1]["usage"]["reasoning_tokens"], 0);
    assert_eq!(s.events.last().unwrap().data, "[DONE]");
}

#[test]
fn native_generate_streams_meta_info_with_spec_verify_ct() {
    let mut args = eagle("3").to_vec();
    args.extend(["--seed", "6"]);
    let sim = sim(&args);
    let body = json!({"text": "one two three", "stream": true,
        "sampling_params": {"max_new_tokens": 50, "temperature": 0, "ignore_eos": true}});
    let s = stream(sim.port, "/generate", &body);
    assert!(s.done() && s.clean_end);
    let outs: Vec<Value> = s.events.iter().filter_map(|e| e.json()).collect();
    let mut last_tokens = 0;
    for (i, o) in outs.iter().enumerate() {
        let m = &o["meta_info"];
        let tokens = m["completion_tokens"].as_u64().unwrap();
        assert!(tokens > last_tokens);
        last_tokens = tokens;
        assert_eq!(
            m["spec_verify_ct"], i as u64,
            "one verify per chunk after prefill"
        );
        assert_eq!(
            o["text"].as_str().unwrap().split_whitespace().count() as u64,
            tokens
        );
        assert_eq!(m["prompt_tokens"], 3);
    }
    let last = &outs.last().unwrap()["meta_info"];
    assert_eq!(last["completion_tokens"], 50);
    assert_eq!(
        last["finish_reason"],
        json!({"type": "length", "length": 50})
    );
    assert!(last["e2e_latency"].as_f64().unwrap() > 0.0);
    let len = last["spec_accept_length"].as_f64().unwrap();
    assert!((len - 50.0 / last["spec_verify_ct"].as_f64().unwrap()).abs() < 1e-9);
    let plain = common::sim(&[]);
    let (code, whole) = call(
        plain.port,
        "/generate",
        Some(&json!({"text": "a b",
        "sampling_params": {"max_new_tokens": 5, "ignore_eos": true}})),
        None,
    );
    assert_eq!(code, 200);
    let whole: Value = serde_json::from_str(&whole).unwrap();
    assert_eq!(whole["meta_info"]["completion_tokens"], 5);
    assert!(
        whole["meta_info"].get("spec_verify_ct").is_none(),
        "no algorithm, no counter"
    );
}
