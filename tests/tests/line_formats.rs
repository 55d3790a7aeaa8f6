//! The line formats that are not records, checked on real output against
//! sweepkit-records(5) LINE FORMATS: `loadgen --requests-out` lines (of
//! completed and failed requests, from llm-sim) and `summarize --format
//! csv` rows.
//! Needs `cargo build --workspace` first (the binaries beside the tests).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use sweepkit::lines::RequestLine;
use testkit::{cmd, run, temp_dir};

/// The types the page is generated from.
fn records_rs() -> String {
    sweepkit_tests::records_source()
}

struct Sim(Child);

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// llm-sim with no delays and half the requests failing with HTTP 500.
fn sim(port: u16) -> Sim {
    let child = Command::new(testkit::bin("llm-sim"))
        .args(["--host", "127.0.0.1", "--port", &port.to_string()])
        .args(["--load-time", "0s", "--warmup-time", "0s", "--zero-delay"])
        .args(["--error-rate", "0.5", "--seed", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("llm-sim");
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "llm-sim never listened"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Sim(child)
}

#[test]
fn requests_out_lines_and_csv_rows_are_documented() {
    let dir = temp_dir("line-formats");
    let port = testkit::free_port();
    let _sim = sim(port);
    let url = format!("http://127.0.0.1:{port}");
    let req_out = dir.join("req.jsonl");
    let load = run(
        cmd(
            "loadgen",
            &[
                "--url",
                &url,
                "--no-upstream",
                "-c",
                "2",
                "-n",
                "16",
                "--max-tokens",
                "4",
                "--requests-out",
                req_out.to_str().unwrap(),
            ],
        ),
        "",
    );
    let text = std::fs::read_to_string(&req_out).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 16, "{}", load.stderr());
    let (mut ok, mut failed) = (0, 0);
    for l in &lines {
        let missing = sweepkit_tests::undocumented_line(&records_rs(), "RequestLine", l);
        assert!(missing.is_empty(), "undocumented: {missing:?} in {l}");
        let typed: RequestLine = serde_json::from_value(l.clone()).expect("a RequestLine");
        assert_eq!(serde_json::to_value(&typed).unwrap(), *l, "round trip");
        if typed.ok {
            ok += 1;
            assert!(typed.completed.is_some() && typed.failed.is_none(), "{l}");
        } else {
            failed += 1;
            assert!(typed.failed.is_some(), "{l}");
        }
    }
    assert!(
        ok > 0 && failed > 0,
        "both kinds of line: {ok} ok, {failed} failed"
    );

    // summarize's CSV: every column is a documented SummaryRow path (the
    // config's keys are data).
    let bench = load.stdout();
    let csv = run(cmd("summarize", &["--format", "csv", "-"]), &bench);
    csv.expect_code(0);
    let out = csv.stdout();
    let header = out.lines().next().unwrap_or("");
    let mut row = serde_json::Map::new();
    for col in header.split(',') {
        let col = col.split('.').next().unwrap();
        row.insert(col.to_string(), Value::Null);
    }
    let row = Value::Object(row);
    let missing = sweepkit_tests::undocumented_line(&records_rs(), "SummaryRow", &row);
    assert!(
        missing.is_empty(),
        "undocumented CSV columns: {missing:?}\n{out}"
    );
    for want in [
        "label",
        "level",
        "metric",
        "runs",
        "median",
        "failure",
        "simulated",
    ] {
        assert!(header.split(',').any(|c| c == want), "{want} in {header}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
