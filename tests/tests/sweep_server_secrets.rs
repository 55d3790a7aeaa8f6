//! scripts/sweep.sh on llm-sim's SGLang personality: a
//! full sweep of a server started with `--api-key`, `--admin-api-key` and
//! `--ssl-keyfile-password` (which SGLang reports in `/server_info`) leaves
//! none of them in the results file, any stderr, or summarize's outputs;
//! `--swap-arg --no-preflight` lets steps without topk through to the
//! server's own TypeError, recorded by wait-ready as a crash at load, and
//! the sweep goes on. Needs `cargo build --workspace` first.

mod sweep_support;

use sweep_support::sim::eagle;
use sweep_support::{dump, fields, records, stderr, stdout, SimExec, SpecFile, SweepArgs};
use testkit::{cmd, run};

const STEPS: &str = "speculative-num-steps";
const SECRETS: [&str; 3] = ["sk-sweep-api-51c9", "adm-sweep-77e2", "pw-sweep-0b4a"];

/// llm-sim with `flags`, started once through svc-swap so a server runs
/// before the sweep (as `sweep_preflight.rs` does); the spec and URL.
fn running_sim(tag: &str, flags: &str) -> (SpecFile, String) {
    let sim = SimExec::free().load("100ms").warmup("50ms").probe("0s");
    sim.flags(flags).running(tag)
}

fn common(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "sglang")
        .args(&["--ready-timeout", "30s"])
        .levels("1,2")
        .quick("4", "8")
}

fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what}: secret {s} leaked:\n{text}");
    }
}

#[test]
fn a_full_sweep_of_a_keyed_sglang_server_leaks_no_secret() {
    let flags = format!(
        "{} --api-key {} --admin-api-key {} --ssl-keyfile-password {}",
        eagle(1),
        SECRETS[0],
        SECRETS[1],
        SECRETS[2]
    );
    let (spec, url) = running_sim("i11-secrets", &flags);
    let results = spec.results();
    let args = common(&spec, &url)
        .param(STEPS, "2,3")
        .arg("--expect-config")
        .load(&["--endpoint", "generate"]);
    // One key for every tool (wait-ready and loadgen both read it).
    let out = args
        .cmd()
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
    assert_no_secret("sweep stdout", &stdout(&out));
    assert_no_secret("sweep stderr", &stderr(&out));
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
    let out = common(&spec, &url)
        .param_new(STEPS, "2,3")
        .swap(&["--no-preflight"])
        .expect(41);
    let recs = records(&results);
    let steps = format!("/config/{STEPS}");
    assert_eq!(
        fields(&recs, &["/type", "/stage", "/kind", &steps]),
        [
            ["failure", "ready", "crashed_at_load", "2"],
            ["failure", "ready", "crashed_at_load", "3"],
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
    let err = stderr(&out);
    assert!(
        !err.contains("pre-flight: --speculative-num-steps"),
        "{err}"
    );
    assert_eq!(spec.exec_start(), original, "the original config is back");
    assert!(spec.live_pid().is_some(), "the restored server runs");
}
