//! `--report FILE.html` opened in a real headless Chromium (Debian's
//! `chromium`, installed by scripts/deps.sh): it renders with no console
//! message (so no script error and, under the page's own CSP, no network
//! request: a control page shows that a blocked request does log one),
//! its DOM holds the table, the frontier and the failure list, a 1280 px
//! wide screenshot is kept under target/artefacts/, and an API key in a
//! server's args never reaches the page.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::make::{failure, lines, ready, swap};
use common::{fixture_lines, summarize};
use serde_json::{json, Value};
use testkit::assert_contains;

const SECRET: &str = "sk-live-9f8e7d6c5b4a";

/// The reference campaign, its server run with an API key, plus a
/// failure whose log tail repeats the key (SGLang logs its ServerArgs).
fn input() -> String {
    let mut out = String::new();
    for l in fixture_lines() {
        let mut v: Value = serde_json::from_str(&l).unwrap();
        if v["type"] == "bench" {
            v["server"]["args"] = json!({"api_key": SECRET, "tp_size": 1});
            v["server"]["argv"] =
                json!(["python3", "-m", "sglang.launch_server", "--api-key", SECRET]);
        }
        out += &v.to_string();
        out.push('\n');
    }
    let spec = |steps| {
        [
            ("model-path", "/models/Qwen3-8B"),
            ("speculative-algorithm", "EAGLE3"),
            ("speculative-num-steps", steps),
            ("tp-size", "1"),
        ]
    };
    let mut f = failure(&spec("7"), "ready", "crashed_at_load", None);
    f["log_tail"] = json!([
        format!("server_args=ServerArgs(model_path='/models/Qwen3-8B', api_key='{SECRET}')"),
        "RuntimeError: boom"
    ]);
    let cfg = spec("4");
    out + &lines(&[f, swap(&cfg, 2.5), ready(&cfg, 61.0)])
}

fn artefacts() -> PathBuf {
    // target/<profile>/deps/report-HASH -> target/artefacts
    let exe = std::env::current_exe().unwrap();
    let target = exe.ancestors().nth(3).unwrap().to_path_buf();
    let dir = target.join("artefacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn chromium() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("chromium"))
            .find(|c| c.is_file())
    })
}

/// Run headless Chromium on `page` with `extra` flags; (stdout, stderr).
/// A hung browser is killed after 120 s rather than hang the test run.
fn run_chromium(bin: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let dir = testkit::temp_dir("chromium");
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let (out_p, err_p) = (dir.join("stdout"), dir.join("stderr"));
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_p).unwrap())
        .stderr(std::fs::File::create(&err_p).unwrap())
        .spawn()
        .expect("start chromium");
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium ran past 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap()).into_owned();
    let out = (read(&out_p), read(&err_p));
    std::fs::remove_dir_all(dir).ok();
    out
}

fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

fn write_report(dir: &Path, extra: &[&str]) -> PathBuf {
    let page = dir.join("report.html");
    let p = page.to_string_lossy().into_owned();
    let mut args = vec!["-f", "json", "--report", &p];
    args.extend(extra);
    summarize(&args, &input()).expect_code(0);
    page
}

#[test]
fn report_holds_no_secret_and_loads_nothing() {
    let dir = testkit::temp_dir("report-static");
    let page = write_report(&dir, &["--slo", "p99_ttft_ms<=500"]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains(SECRET), "the API key leaked into the report");
    assert!(
        html.contains("--api-key &lt;redacted&gt;"),
        "the launch command is shown, redacted"
    );
    // Redacted in the log tail too, and the marker escaped: a raw
    // `<redacted>` is an element to a browser, which shows `api_key=''`.
    assert!(html.contains("api_key='&lt;redacted&gt;'"), "log tail");
    assert!(!html.contains("<redacted>"), "an unescaped marker");
    for bad in ["<script", "<link", " src=", "url(", "@import"] {
        assert!(!html.contains(bad), "report has {bad:?}");
    }
    // The only URL is the SVG namespace, which is a name, not a fetch.
    let urls = html.matches("http://").count() + html.matches("https://").count();
    let ns = html.matches("http://www.w3.org/2000/svg").count();
    assert_eq!(urls, ns, "a URL other than the SVG namespace");
    assert!(html.contains("Content-Security-Policy"));
    // steps=4's start-up cost, from its swap and ready records.
    assert!(
        html.contains("ready in 61 s, stop 2.50 s"),
        "no start-up cost"
    );
    for id in [
        "verdict",
        "results",
        "frontier-list",
        "frontier-chart",
        "capacity-table",
        "timeline-chart",
        "failure-list",
        "provenance",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "no #{id}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(bin) = chromium() else {
        testkit::skip("chromium (scripts/deps.sh installs it)");
        return;
    };
    testkit::ran("chromium");
    let dir = testkit::temp_dir("report-chromium");
    let page = write_report(&dir, &["--slo", "p99_ttft_ms<=500", "--pareto"]);

    // Control: a page under the same policy that tries one request does
    // log a console message, so silence below means nothing was loaded.
    let control = dir.join("control.html");
    let port = testkit::free_port();
    std::fs::write(
        &control,
        format!(
            "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><meta http-equiv=\"Content-Security-Policy\" \
             content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"></head><body>\
             <img src=\"http://127.0.0.1:{port}/x.png\"></body></html>"
        ),
    )
    .unwrap();
    let (_, err) = run_chromium(&bin, &control, &["--dump-dom".into()]);
    assert!(
        console_lines(&err)
            .iter()
            .any(|l| l.contains("Content Security Policy")),
        "the control page's blocked request logged nothing; the check would be blind:\n{err}"
    );

    let (dom, err) = run_chromium(&bin, &page, &["--dump-dom".into()]);
    assert!(
        console_lines(&err).is_empty(),
        "console messages:\n{}",
        console_lines(&err).join("\n")
    );
    for want in [
        "<table id=\"results\"",
        "<ol id=\"frontier-list\"",
        "<svg id=\"frontier-chart\"",
        "<ul id=\"failure-list\"",
        "OOM at load",
        "RuntimeError: boom",
        "speculative-num-steps=10",
    ] {
        assert!(dom.contains(want), "rendered DOM lacks {want:?}");
    }
    assert!(!dom.contains(SECRET));
    assert!(
        dom.contains("api_key='&lt;redacted&gt;'"),
        "the log tail's key shows as redacted"
    );
    // The frontier lists at least one cell.
    let list = dom.split("<ol id=\"frontier-list\">").nth(1).unwrap();
    let list = list.split("</ol>").next().unwrap();
    assert_contains(list, "<li>");
    // Five failure-free configs and one OOM: the failure list names it.
    let fails = dom.split("<ul id=\"failure-list\">").nth(1).unwrap();
    assert_contains(fails, "stage ready, class config");

    let shot = artefacts().join("summarize-report-1280.png");
    std::fs::remove_file(&shot).ok();
    let (_, err) = run_chromium(
        &bin,
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,3200".into(),
            "--hide-scrollbars".into(),
        ],
    );
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{err}"));
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // The PNG header's width (bytes 16..20 of IHDR) is 1280.
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    assert_eq!(width, 1280);
    std::fs::copy(&page, artefacts().join("summarize-report.html")).unwrap();
    std::fs::remove_dir_all(dir).ok();
}
