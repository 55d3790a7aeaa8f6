//! wait-ready's command line: bad input and its exit codes, `-- CMD`
//! passthrough, the API key never printed, the pipeline's stdin record,
//! and the man page.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;

use common::{run_timed, wr};
use testkit::Sim;

#[test]
fn verify_cli() {
    use clap::CommandFactory;
    wait_ready::Args::command().debug_assert();
}

#[test]
fn man_page_up_to_date() {
    use clap::CommandFactory;
    testkit::check_man_page(wait_ready::Args::command());
}

#[test]
fn bad_input_is_named_with_its_exit_code() {
    let cases: &[(&[&str], &str, i32, &str)] = &[
        (&["htp:/x"], "", 2, "target 'htp:/x'"),
        (&["localhost:8000"], "", 2, "target 'localhost:8000'"),
        (&["tcp://h:port"], "", 2, "port 'port' is not a number"),
        (
            &["--expect-json", ".a[x]=1", "http://127.0.0.1:1/"],
            "",
            2,
            "JSON path '.a[x]'",
        ),
        (
            &[
                "--exec-prefix",
                "sh -c 'x",
                "--unit",
                "u",
                "http://127.0.0.1:1/",
            ],
            "",
            2,
            "--exec-prefix",
        ),
        (
            &["--timeout", "soon", "http://127.0.0.1:1/"],
            "",
            2,
            "invalid duration",
        ),
        (&[], "", 2, "no target"),
        (
            &["http://127.0.0.1:1/"],
            "this is not json\n",
            3,
            "<stdin>: line 1: not JSON",
        ),
        (
            &["http://127.0.0.1:1/"],
            "{\"type\":\"pizza\"}\n",
            3,
            "unknown record type",
        ),
    ];
    for (args, stdin, code, msg) in cases {
        let (r, _) = run_timed(wr(args), stdin);
        r.expect_code(*code);
        let err = r.stderr();
        assert!(err.contains(msg), "{args:?}: want '{msg}' in: {err}");
        assert!(
            err.starts_with("wait-ready: error:") || err.starts_with("error:"),
            "{err}"
        );
        assert!(r.stdout().is_empty(), "{args:?}: stdout: {}", r.stdout());
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn command_runs_once_ready_and_its_status_passes_through() {
    let sim = Sim::start_ready(&["--warmup-time", "0s"]);
    let url = format!("{}/health", sim.base_url());
    let (r, _) = run_timed(
        wr(&["--quiet", &url, "--", "sh", "-c", "echo ran; exit 7"]),
        "",
    );
    r.expect_code(7);
    assert_eq!(
        r.stdout(),
        "ran\n",
        "--quiet: no record, the command's output only"
    );
    let (r, _) = run_timed(wr(&[&url, "--", "true"]), "");
    r.expect_code(0);
    assert_eq!(r.json_lines().len(), 1);
    let (r, _) = run_timed(wr(&[&url, "--", "/no/such/cmd"]), "");
    r.expect_code(127);
    // Not ready: the command does not run.
    let dead = format!("http://127.0.0.1:{}/", testkit::free_port());
    let (r, _) = run_timed(
        wr(&["--unreachable-after", "200ms", &dead, "--", "echo", "NO"]),
        "",
    );
    r.expect_code(12);
    assert!(!r.stdout().contains("NO"));
}

/// Answers every request with 200 and hands back what it received.
fn capture_server() -> (u16, std::sync::mpsc::Receiver<String>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming().take(8) {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"status\":\"ok\"}");
        }
    });
    (port, rx)
}

#[test]
fn api_key_is_sent_but_never_printed() {
    let key = "sk-test-secret-4242";
    let (port, rx) = capture_server();
    let url = format!("http://127.0.0.1:{port}/v1/models");
    let mut c = wr(&[
        "--verbose",
        "--expect-json",
        ".status=ok",
        "--method",
        "post",
        "--body",
        "{}",
        &url,
    ]);
    c.env("SWEEPKIT_API_KEY", key);
    let (r, _) = run_timed(c, "");
    r.expect_code(0);
    let seen = rx.recv().unwrap();
    assert!(seen.starts_with("POST /v1/models"), "{seen}");
    assert!(
        seen.contains(&format!("Authorization: Bearer {key}")),
        "{seen}"
    );
    assert!(!r.stdout().contains(key) && !r.stderr().contains(key));
    // Failing, with the key as a flag: still never printed.
    let dead = format!("http://127.0.0.1:{}/", testkit::free_port());
    let (r, _) = run_timed(
        wr(&[
            "--api-key",
            key,
            "--unreachable-after",
            "200ms",
            "-v",
            &dead,
        ]),
        "",
    );
    r.expect_code(12);
    assert!(!r.stdout().contains(key) && !r.stderr().contains(key));
}

fn swap_record(port: u16, pid: u32, config_steps: &str) -> String {
    serde_json::json!({
        "type": "swap", "schema": 1,
        "config": {"speculative-num-steps": config_steps},
        "provenance": {"tool": "svc-swap", "version": "0.1.0",
                       "started_at": "2026-11-30T05:00:00Z", "finished_at": "2026-11-30T05:00:01Z"},
        "target": {"manager": "process", "unit": "sim.spec", "port": port},
        "changes": [], "exec_start": ["llm-sim"],
        "stop": {"result": "clean", "duration_s": 0.1},
        "start": {"started_at": "2026-11-30T05:00:01Z", "main_pid": pid},
        "method": "spec"
    })
    .to_string()
}

/// A listener on 127.0.0.1 that answers nothing, and its URL.
fn listener() -> (TcpListener, String) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/health", l.local_addr().unwrap());
    (l, url)
}

/// True when nobody connected to `l` (its backlog is empty).
fn untouched(l: &TcpListener) -> bool {
    l.set_nonblocking(true).unwrap();
    matches!(l.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

#[test]
fn swap_record_on_stdin_needs_no_flags() {
    let sim = Sim::start(&testkit::words("--load-time 200ms --warmup-time 200ms"));
    let line = swap_record(sim.port, sim.pid(), "4") + "\n";
    let (r, _) = run_timed(wr(&[]), &line);
    let rec = r.expect_one(0);
    assert_eq!(rec["type"], "ready");
    assert_eq!(rec["config"]["speculative-num-steps"], "4");
    assert_eq!(rec["upstream"]["type"], "swap");
    assert_eq!(
        rec["targets"][0]["target"],
        format!("{}/health", sim.base_url())
    );
}

#[test]
fn swap_record_pid_crash_is_seen_without_flags() {
    let sim = common::LoggedSim::start("swap-crash", &["--crash-on-load", "--load-time", "100ms"]);
    let line = swap_record(sim.port, sim.child.id(), "9") + "\n";
    // Seen by the event, the PID's exit (exit 10, kind crashed), not by a
    // clock: a wait that missed it would run to the 10 m default timeout.
    let (r, _) = run_timed(wr(&[]), &line);
    r.expect_code(10);
    let rec = r.one();
    assert_eq!(rec["kind"], "crashed_at_load", "{rec}");
    assert!(rec["reason"].as_str().unwrap().contains("exited"), "{rec}");
    assert_eq!(rec["config"]["speculative-num-steps"], "9");
    assert_eq!(rec["upstream"]["type"], "swap");
}

#[test]
fn failure_record_on_stdin_is_passed_through() {
    let failure = r#"{"type":"failure","schema":1,"config":{"k":"v"},"provenance":{"tool":"svc-swap","version":"0.1.0","started_at":"a","finished_at":"b"},"stage":"swap","kind":"swap_failed","reason":"unit not found"}"#;
    // Passed through without a probe: the URL's listener saw no connection
    // (an event, where a 1 s limit was a clock on a shared machine).
    let (quiet, url) = listener();
    let (r, _) = run_timed(wr(&[&url]), &format!("{failure}\n"));
    r.expect_code(4);
    assert!(untouched(&quiet), "wait-ready probed {url}");
    assert_eq!(r.stdout().trim(), failure);
    // --no-stdin ignores it.
    let (r, _) = run_timed(
        wr(&testkit::words(
            "--no-stdin --unreachable-after 100ms http://127.0.0.1:1/",
        )),
        &format!("{failure}\n"),
    );
    r.expect_code(12);
    // Issue 21: --quiet writes no record, a passed-through one neither (a
    // failed restore printed svc-swap's failure on sweep's stdout).
    let (r, _) = run_timed(
        wr(&["--quiet", "http://127.0.0.1:1/"]),
        &format!("{failure}\n"),
    );
    r.expect_code(4);
    assert_eq!(r.stdout(), "", "--quiet printed a record");
    // Issue 46: the stage that failed said why; the pass-through names
    // its stage and kind only, so a refusal is not printed three times.
    assert!(r.stderr().contains("swap: swap_failed"), "{}", r.stderr());
    assert!(!r.stderr().contains("unit not found"), "{}", r.stderr());
}

/// Issue 21: killed mid-swap, svc-swap wrote nothing; wait-ready probed
/// the old server anyway and loadgen benched it as `config: {}`. Run for a
/// config, a stage with no upstream record probes nothing and records the
/// config's failure.
#[test]
fn a_stage_run_for_a_config_with_no_upstream_record_measures_nothing() {
    let sim = Sim::start(&testkit::words("--load-time 0s --warmup-time 0s"));
    let health = format!("{}/health", sim.base_url());
    let (quiet, url) = listener();
    let args = [
        "--pipeline-config",
        "speculative-num-steps=3",
        "--expect-config",
        "speculative-num-steps=3",
        "--timeout",
        "20s",
        &url,
    ];
    let (r, _) = run_timed(wr(&args), "");
    r.expect_code(4);
    assert!(untouched(&quiet), "wait-ready probed {url}");
    let rec = r.one();
    assert_eq!(rec["type"], "failure");
    assert_eq!(rec["kind"], "upstream_missing");
    assert_eq!(rec["stage"], "swap");
    assert_eq!(rec["config"]["speculative-num-steps"], "3");
    assert!(
        r.stderr().contains("no record from the svc-swap stage"),
        "{}",
        r.stderr()
    );
    // Standalone (no --pipeline-config) it still waits for the server.
    let (r, _) = run_timed(wr(&["--timeout", "20s", &health]), "");
    r.expect_code(0);
}

#[test]
fn tcp_targets_and_several_targets_must_all_pass() {
    let sim = Sim::start_ready(&["--warmup-time", "0s"]);
    let tcp = format!("tcp://127.0.0.1:{}", sim.port);
    let health = format!("{}/health", sim.base_url());
    let (r, _) = run_timed(wr(&[&tcp, &health]), "");
    r.expect_code(0);
    assert_eq!(r.one()["targets"].as_array().unwrap().len(), 2);
    let dead = format!("tcp://127.0.0.1:{}", testkit::free_port());
    let (r, _) = run_timed(wr(&[&health, &dead, "--unreachable-after", "300ms"]), "");
    let rec = r.expect_one(12);
    assert!(rec["reason"].as_str().unwrap().contains(&dead), "{rec}");
    // --expect-json and --expect-body compare values.
    let (r, _) = run_timed(
        wr(&[
            "--expect-json",
            ".status=busy",
            "--timeout",
            "300ms",
            "--pid",
            &sim.pid().to_string(),
            &health,
        ]),
        "",
    );
    r.expect_code(124);
    assert!(r.one()["reason"]
        .as_str()
        .unwrap()
        .contains(".status is \"ok\", want busy"));
    let (r, _) = run_timed(wr(&["--expect-body", "\"status\": ?\"ok\"", &health]), "");
    r.expect_code(0);
}

#[test]
fn a_transport_error_while_watching_still_writes_a_failure_with_the_config() {
    // The unit is watched behind a prefix that cannot run (as an SSH
    // session lost mid-wait): exit 21, and a transport-class failure that
    // keeps the swap record's config (it used to write nothing).
    let swap = r#"{"type":"swap","schema":1,"config":{"speculative-num-steps":"4"},"provenance":{"tool":"svc-swap","version":"0","started_at":"x","finished_at":"y"},"target":{"manager":"systemd","unit":"sim.service"},"changes":[],"exec_start":[],"stop":{"result":"clean","duration_s":1.0},"start":{"started_at":"z"},"method":"drop-in"}"#;
    let c = wr(&testkit::words(
        "--exec-prefix /nonexistent/sweepkit-prefix --timeout 5s http://127.0.0.1:1/health",
    ));
    let (r, _) = run_timed(c, &format!("{swap}\n"));
    let rec = r.expect_one(21);
    assert_eq!(rec["type"], "failure", "{rec}");
    assert_eq!(rec["class"], "transport", "{rec}");
    assert_eq!(rec["config"]["speculative-num-steps"], "4", "{rec}");
    assert_eq!(rec["upstream"]["type"], "swap", "{rec}");
}

/// An OpenAI API base (`.../v1`) with no --server: SGLang lists its models
/// while it still warms up, when completions get 503, so the model list
/// alone called a warming server ready (issue 46's flaky sweep). Ready now
/// means a completion is served: the root's /health must not say 503.
#[test]
fn an_api_base_is_not_ready_while_the_server_warms_up() {
    let sim = Sim::start(&testkit::words("--load-time 1s --warmup-time 1500ms"));
    let base = format!("{}/v1", sim.base_url());
    let (r, _) = run_timed(wr(&["--no-stdin", "--timeout", "20s", &base]), "");
    let rec = r.expect_one(0);
    assert_eq!(rec["outcome"], "ready", "{rec}");
    let body = r#"{"model":"x","prompt":"hi","max_tokens":2}"#;
    let (status, _, text) =
        testkit::realpeer::http(sim.port, "POST", "/v1/completions", &[], Some(body)).unwrap();
    assert_eq!(status, 200, "served once ready: {text}");
}
