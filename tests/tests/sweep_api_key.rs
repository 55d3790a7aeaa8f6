//! scripts/sweep.sh against a server that wants an API key (issue 46): a
//! launch line with `--api-key` and no key in the environment is refused
//! before the first stop; a key the server refuses (HTTP 401) stops the
//! sweep at once, with a line naming SWEEPKIT_API_KEY, instead of three
//! transport retries (22 s) and exit 41. wait-ready and loadgen alone stop
//! at the first 401 with exit 15. Needs `cargo build --workspace --bins`.

mod sweep_support;

use std::time::{Duration, Instant};

use sweep_support::{all_records, dump, records, stderr, SimExec, SpecFile, SweepArgs};
use testkit::{cmd, run};

const KEY: &str = "sk-issue46-3f1a";
const STEPS: &str = "speculative-num-steps";

/// llm-sim (EAGLE, steps 1) started with `--api-key`, running before the
/// sweep; the spec, its URL and the server's PID.
fn keyed(tag: &str) -> (SpecFile, String, u32) {
    let sim = SimExec::free().load("100ms").warmup("50ms").eagle(1);
    let (spec, url) = sim.flags(&format!("--api-key {KEY}")).running(tag);
    let pid = spec.live_pid().expect("the server runs");
    (spec, url, pid)
}

fn one_config(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "llm-sim")
        .param(STEPS, "2,3")
        .quick("2", "8")
}

/// Run `args` with `key` (or none) in SWEEPKIT_API_KEY and no
/// OPENAI_API_KEY, timed.
fn sweep_with(args: &SweepArgs, key: Option<&str>) -> (std::process::Output, Duration) {
    let mut c = args.cmd();
    c.env_remove("OPENAI_API_KEY");
    match key {
        Some(k) => c.env("SWEEPKIT_API_KEY", k),
        None => c.env_remove("SWEEPKIT_API_KEY"),
    };
    let t0 = Instant::now();
    let out = c.output().unwrap();
    (out, t0.elapsed())
}

#[test]
fn a_launch_line_with_api_key_and_no_key_to_send_is_refused_before_the_first_stop() {
    let (spec, url, pid) = keyed("key-none");
    let exec = spec.exec_start();
    let (out, took) = sweep_with(&one_config(&spec, &url), None);
    assert_eq!(out.status.code(), Some(2), "{}", dump(&out));
    assert!(took < Duration::from_secs(10), "took {took:?}");
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("sweep: error: "), "{err}");
    for w in ["--api-key", "set SWEEPKIT_API_KEY", "not touched"] {
        assert!(err.contains(w), "{w}: {err}");
    }
    assert!(!err.contains(KEY), "{err}");
    assert_eq!(spec.live_pid(), Some(pid), "the server was not restarted");
    assert_eq!(spec.exec_start(), exec, "the spec was not edited");
    assert!(records(&spec.results()).is_empty(), "no result recorded");
    // A key as loadgen's argument counts as one given: the sweep runs.
    let args = SweepArgs::new()
        .args(&["--spec", spec.s(), "--url", &url, "--server", "llm-sim"])
        .results(&spec.dir.join("by-arg.jsonl"))
        .param(STEPS, "2")
        .quick("2", "8")
        .load(&["--api-key", KEY]);
    let (out, _) = sweep_with(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    assert_eq!(records(&spec.dir.join("by-arg.jsonl")).len(), 1);
}

#[test]
fn a_key_the_server_refuses_stops_the_sweep_at_once_naming_the_variable() {
    let (spec, url, _) = keyed("key-wrong");
    let exec = spec.exec_start();
    let (out, took) = sweep_with(&one_config(&spec, &url), Some("sk-wrong"));
    assert_eq!(out.status.code(), Some(2), "{}", dump(&out));
    assert!(
        took < Duration::from_secs(10),
        "took {took:?}: {}",
        dump(&out)
    );
    let err = stderr(&out);
    assert!(
        err.contains("loadgen: error: GET /v1/models: HTTP 401 (unauthorized): the server refused the API key given; set the server's key in SWEEPKIT_API_KEY"),
        "{err}"
    );
    assert!(
        err.contains("sweep: error: the server answered HTTP 401/403"),
        "{err}"
    );
    assert!(!err.contains("retry"), "no transport retries: {err}");
    assert!(!err.contains("sk-wrong") && !err.contains(KEY), "{err}");
    // One failure, of the command's (not the config's): no second config.
    let recs = records(&spec.results());
    assert_eq!(recs.len(), 1, "{}", dump(&out));
    assert_eq!(
        (&recs[0]["kind"], &recs[0]["class"], &recs[0]["exit_code"]),
        (&"unauthorized".into(), &"usage".into(), &15.into())
    );
    assert_eq!(spec.exec_start(), exec, "the original config is back");
    assert!(all_records(&spec.results())[0]["type"] == "origin");
}

#[test]
fn wait_ready_and_loadgen_alone_end_at_the_first_401_with_exit_15() {
    let (_spec, url, _) = keyed("key-tools");
    // wait-ready --server openai probes /v1/models, which wants the key.
    let mut c = cmd(
        "wait-ready",
        &[&url, "--server", "openai", "--timeout", "60s"],
    );
    c.env_remove("SWEEPKIT_API_KEY")
        .env_remove("OPENAI_API_KEY");
    let t0 = Instant::now();
    let r = run(c, "");
    r.expect_code(15);
    assert!(t0.elapsed() < Duration::from_secs(5), "at once");
    let err = r.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("HTTP 401 (unauthorized): the server wants an API key; set SWEEPKIT_API_KEY (or OPENAI_API_KEY) in the environment"),
        "{err}"
    );
    let rec: serde_json::Value = serde_json::from_str(r.stdout().trim()).unwrap();
    assert_eq!(
        (&rec["kind"], &rec["class"]),
        (&"unauthorized".into(), &"usage".into())
    );
    // loadgen with --model skips /v1/models: every request meets the 401.
    for extra in [&[][..], &["--model", "m"][..]] {
        let mut words = vec![
            "--url",
            &url,
            "-n",
            "2",
            "--max-tokens",
            "4",
            "--no-upstream",
        ];
        words.extend_from_slice(extra);
        let mut c = cmd("loadgen", &words);
        c.env_remove("SWEEPKIT_API_KEY")
            .env_remove("OPENAI_API_KEY");
        let r = run(c, "");
        r.expect_code(15);
        let err = r.stderr();
        assert!(err.contains("HTTP 401 (unauthorized)"), "{extra:?}: {err}");
        assert!(err.contains("set SWEEPKIT_API_KEY"), "{extra:?}: {err}");
        assert!(r.stdout().contains(r#""kind":"unauthorized""#), "{extra:?}");
    }
}

/// Issue 46: the sweep kept a key given as an argument out of records and
/// output, while `--dry-run` printed both commands with `--api-key K` in
/// clear. The plan shows `--api-key <redacted>` and says once that the
/// environment is the better way.
#[test]
fn dry_run_redacts_a_key_given_as_an_argument_and_says_so_once() {
    // A real spec: the dry run reads its launch line as the run would.
    let (spec, url) = SimExec::free().eagle(1).spec("dry-redact");
    let results = spec.results();
    let args = SweepArgs::new()
        .args(&["--spec", spec.s(), "--url", &url])
        .args(&["--results", results.to_str().unwrap(), "--dry-run"])
        .args(&["--ready-arg", "--api-key", "--ready-arg", KEY])
        .args(&["--load-arg", &format!("--api-key={KEY}")])
        .param(STEPS, "1,2");
    let (out, _) = sweep_with(&args, None);
    assert_eq!(out.status.code(), Some(0), "{}", dump(&out));
    let (plan, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(!plan.contains(KEY) && !err.contains(KEY), "{}", dump(&out));
    let ready = plan.lines().filter(|l| l.contains("| ")).count();
    assert_eq!(ready, 4, "two configs, two piped stages each: {plan}");
    assert_eq!(
        plan.matches("--api-key \\<redacted\\>").count(),
        2,
        "{plan}"
    );
    assert_eq!(
        plan.matches("--api-key=\\<redacted\\>").count(),
        2,
        "{plan}"
    );
    assert_eq!(err.lines().count(), 1, "said once: {err}");
    assert!(err.starts_with("sweep: warning: "), "{err}");
    assert!(err.contains("SWEEPKIT_API_KEY"), "{err}");
}
