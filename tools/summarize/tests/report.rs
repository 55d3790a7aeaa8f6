//! `--report FILE.html` opened in a real headless Chromium (Debian's
//! `chromium`, installed by scripts/deps.sh): it renders with no console
//! message (so no script error and, under the page's own CSP, no network
//! request: a control page shows that a blocked request does log one),
//! its DOM holds the table, the frontier and the failure list, a 1280 px
//! wide screenshot is kept under target/artefacts/, and an API key in a
//! server's args never reaches the page.

mod common;

use std::path::{Path, PathBuf};

use common::make::{failure, lines, ready, swap};
use common::{fixture_lines, summarize};
use serde_json::{json, Value};
use testkit::assert_contains;
use testkit::chromium::{artefacts, run as run_chromium};

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
    let Some(bin) = testkit::chromium::gate() else {
        return;
    };
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

    // What a person sees at 1280 px: no text over text, none clipped,
    // charts at least 60% of the content width (issue 33).
    testkit::chromium::measure(&bin, &page, 1280).assert_readable(0.6);
    let shot = artefacts().join("summarize-report-1280.png");
    let png = testkit::chromium::screenshot(&bin, &page, (1280, 3200), &shot);
    // The PNG header's width (bytes 16..20 of IHDR) is 1280.
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    assert_eq!(width, 1280);
    std::fs::copy(&page, artefacts().join("summarize-report.html")).unwrap();
    std::fs::remove_dir_all(dir).ok();
}
