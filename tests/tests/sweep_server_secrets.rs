//! scripts/sweep.sh on llm-sim's SGLang personality: a
//! full sweep of a server started with `--api-key`, `--admin-api-key` and
//! `--ssl-keyfile-password` (which SGLang reports in `/server_info`) leaves
//! none of them in the results file, any stderr, or summarize's outputs;
//! `--swap-arg --no-preflight` lets steps without topk through to the
//! server's own TypeError, recorded by wait-ready as a crash at load, and
//! the sweep goes on. Needs `cargo build --workspace` first.

mod sweep_support;

use std::time::Duration;

use sweep_support::{dump, records, sweep, SpecFile};
use testkit::{cmd, run};

const STEPS: &str = "speculative-num-steps";
const SECRETS: [&str; 3] = ["sk-sweep-api-51c9", "adm-sweep-77e2", "pw-sweep-0b4a"];

/// llm-sim with `flags`, started once through svc-swap so a server runs
/// before the sweep (as `sweep_preflight.rs` does); the spec and URL.
fn running_sim(tag: &str, flags: &str) -> (SpecFile, String) {
    let port = testkit::free_port();
    let exec = format!(
        "{} --host 127.0.0.1 --port {port} --load-time 100ms --warmup-time 50ms \
         --health-probe-time 0s --seed 1 {flags}",
        testkit::bin("llm-sim").display()
    );
    let spec = SpecFile::new(tag, &exec, port);
    let out = std::process::Command::new(testkit::bin("svc-swap"))
        .args(["--spec", spec.s()])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "first start: {}", dump(&out));
    let t0 = std::time::Instant::now();
    while testkit::http_get(port, "/health").map(|r| r.0) != Some(200) {
        assert!(t0.elapsed() < Duration::from_secs(20), "never healthy");
        std::thread::sleep(Duration::from_millis(20));
    }
    (spec, format!("http://127.0.0.1:{port}"))
}

fn common<'a>(spec: &'a SpecFile, url: &'a str, results: &'a str) -> Vec<&'a str> {
    vec![
        "--spec",
        spec.s(),
        "--url",
        url,
        "--server",
        "sglang",
        "--results",
        results,
        "--ready-timeout",
        "30s",
        "--concurrency",
        "1,2",
        "--load-arg",
        "-n",
        "--load-arg",
        "4",
        "--load-arg",
        "--max-tokens",
        "--load-arg",
        "8",
    ]
}

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what}: secret {s} leaked:\n{text}");
    }
}

#[test]
fn a_full_sweep_of_a_keyed_sglang_server_leaks_no_secret() {
    let flags = format!(
        "--speculative-algorithm EAGLE --speculative-eagle-topk 1 --speculative-num-steps 1 \
         --api-key {} --admin-api-key {} --ssl-keyfile-password {}",
        SECRETS[0], SECRETS[1], SECRETS[2]
    );
    let (spec, url) = running_sim("i11-secrets", &flags);
    let results = spec.results();
    let mut args = common(&spec, &url, results.to_str().unwrap());
    args.extend(["--param", STEPS, "--values", "2,3", "--expect-config"]);
    args.extend(["--load-arg", "--endpoint", "--load-arg", "generate"]);
    // One key for every tool (wait-ready and loadgen both read it).
    let out = sweep(&args)
        .env("SWEEPKIT_API_KEY", SECRETS[0])
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let recs = records(&results);
    assert_eq!(recs.len(), 4, "two configs x two levels: {}", dump(&out));
    // Not vacuous: the server's args were read with the key and kept.
    for r in &recs {
        assert_eq!(r["type"], "bench", "{r}");
        assert_eq!(r["counts"]["completed"], 4, "{r}");
        let args = &r["server"]["args"];
        assert_eq!(args["api_key"], "<redacted>", "{r}");
        assert_eq!(args["admin_api_key"], "<redacted>", "{r}");
        assert_eq!(args["ssl_keyfile_password"], "<redacted>", "{r}");
    }
    let file = std::fs::read_to_string(&results).unwrap();
    assert_no_secret("results file", &file);
    assert_no_secret("sweep stdout", &String::from_utf8_lossy(&out.stdout));
    assert_no_secret("sweep stderr", &String::from_utf8_lossy(&out.stderr));
    let r = results.to_str().unwrap();
    for fmt in ["json", "text", "csv"] {
        let s = run(cmd("summarize", &["--format", fmt, r]), "");
        s.expect_code(0);
        assert_no_secret(&format!("summarize --format {fmt}"), &s.stdout());
        assert_no_secret(&format!("summarize --format {fmt}"), &s.stderr());
    }
}

#[test]
fn no_preflight_lets_steps_without_topk_crash_at_load_and_the_sweep_goes_on() {
    let (spec, url) = running_sim("i11-nopreflight", "--speculative-algorithm EAGLE");
    let original = spec.exec_start();
    let results = spec.results();
    let mut args = common(&spec, &url, results.to_str().unwrap());
    args.extend(["--param", STEPS, "--values", "2,3"]);
    args.extend(["--swap-arg", "--no-preflight"]);
    let out = sweep(&args).output().unwrap();
    assert_eq!(out.status.code(), Some(41), "{}", dump(&out));
    let recs = records(&results);
    let got: Vec<_> = recs
        .iter()
        .map(|r| {
            (
                r["type"].as_str().unwrap_or(""),
                r["stage"].as_str().unwrap_or(""),
                r["kind"].as_str().unwrap_or(""),
                r["config"][STEPS].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("failure", "ready", "crashed_at_load", "2"),
            ("failure", "ready", "crashed_at_load", "3"),
        ],
        "each config reached the server and crashed there: {}",
        dump(&out)
    );
    for r in &recs {
        let tail = r["log_tail"].to_string();
        assert!(
            tail.contains("TypeError: '>' not supported between instances of 'NoneType' and 'int'"),
            "SGLang's own error in the record: {r}"
        );
        assert!(!r["reason"].to_string().contains("pre-flight"), "{r}");
    }
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("pre-flight: --speculative-num-steps"),
        "{err}"
    );
    assert_eq!(spec.exec_start(), original, "the original config is back");
    assert!(spec.live_pid().is_some(), "the restored server runs");
}
