//! `--expect-config` checks that the live server runs the schedule svc-swap
//! applied: vLLM's parsed `--speculative-config` ranges, SGLang's
//! `/server_info` `speculative_adaptive` and config path (llm-sim reports
//! them as SGLang 0.5.23's /server_info does: the resolved server args at
//! the top level), and the copied file's SHA-256 on the far side, read from
//! the swap record's `files` (a changed far file is exit 13).

use std::process::Command;

use serde_json::Value;
use testkit::spec::SimSpec;

/// A process spec for llm-sim with `flags`; `swap` runs svc-swap on it
/// and gives its swap record (the stdin wait-ready reads).
struct Sim(SimSpec);

impl Sim {
    fn new(tag: &str, flags: &str) -> Sim {
        Sim(SimSpec::new(tag, flags))
    }

    fn swap(&self, args: &[&str]) -> String {
        let r = self.0.swap(args);
        r.expect_code(0);
        r.stdout().to_string()
    }
}

fn wait_ready(stdin: &str, args: &[&str]) -> testkit::Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wait-ready"));
    c.args(["--timeout", "20s"]).args(args);
    testkit::run(c, stdin)
}

fn record(r: &testkit::Run) -> Value {
    r.json_lines().into_iter().next().expect("a record")
}

#[test]
fn sglang_adaptive_schedule_and_its_far_file_are_checked() {
    let s = Sim::new("wr-sched-sg", testkit::spec::EAGLE);
    let cfg = s.0.dir.join("adaptive.json");
    std::fs::write(
        &cfg,
        "{\"1\": {\"candidate_steps\": [1, 3]}, \"8\": {\"candidate_steps\": [0, 1]}}\n",
    )
    .unwrap();
    let swap = s.swap(&[
        "--set-file",
        &format!("speculative-adaptive-config={}", cfg.display()),
        "--set",
        "speculative-adaptive",
        "--set",
        "speculative-num-steps=3",
    ]);
    let rec: Value = serde_json::from_str(swap.lines().next().unwrap()).unwrap();
    let far = rec["files"][0]["far_path"].as_str().unwrap().to_string();
    let expect = [
        "--server",
        "sglang",
        "--expect-config",
        "speculative-adaptive=true",
        "--expect-config",
    ];
    let path = format!("speculative-adaptive-config={far}");
    let mut args = expect.to_vec();
    args.push(&path);
    let r = wait_ready(&swap, &args);
    r.expect_code(0);
    let ready = record(&r);
    assert_eq!(ready["outcome"], "ready", "{ready}");
    assert_eq!(
        ready["server"]["args"]["speculative_adaptive_config"],
        far.as_str()
    );
    // Another path than the live one: a config mismatch.
    let r = wait_ready(
        &swap,
        &testkit::words(
            "--server sglang --expect-config speculative-adaptive-config=/elsewhere.json",
        ),
    );
    r.expect_code(13);
    // The far file changed after the swap: its checksum no longer matches.
    std::fs::write(&far, "{\"1\": {\"candidate_steps\": [1, 5]}}\n").unwrap();
    let r = wait_ready(&swap, &args);
    r.expect_code(13);
    let f = record(&r);
    assert!(
        f["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("file {far} has sha256")),
        "{f}"
    );
    std::fs::remove_file(&far).unwrap();
    let r = wait_ready(&swap, &args);
    r.expect_code(13);
    assert!(r.stderr().contains("No such file"), "{}", r.stderr());
}

#[test]
fn vllm_schedule_is_read_from_the_live_speculative_config() {
    let s = Sim::new("wr-sched-vllm", "--personality vllm");
    let sc = r#"{"method":"ngram","num_speculative_tokens":4,"num_speculative_tokens_per_batch_size":[[1,1,4],[2,64,1]]}"#;
    let swap = s.swap(&["--set", &format!("speculative-config={sc}")]);
    let key = "speculative-config.num_speculative_tokens_per_batch_size";
    let ok = format!("{key}=[[1,1,4],[2,64,1]]");
    let r = wait_ready(&swap, &["--server", "vllm", "--expect-config", &ok]);
    r.expect_code(0);
    let bad = format!("{key}=[[1,1,3],[2,64,1]]");
    let r = wait_ready(&swap, &["--server", "vllm", "--expect-config", &bad]);
    r.expect_code(13);
    assert!(
        record(&r)["reason"].as_str().unwrap().contains(key),
        "{}",
        r.stdout()
    );
}
