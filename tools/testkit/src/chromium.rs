//! Headless Chromium for the report tests (Debian's `chromium`, installed
//! by scripts/deps.sh): run it on a page with a fresh profile and the
//! flags that keep it off the closed network, and measure what a person
//! sees at a window width: every text box the browser laid out (so two
//! that overprint are caught), each chart's width against the page's
//! content width, text that runs out of its chart, and the axis names.
//! The measuring script goes into a copy of the page (the report's own
//! Content-Security-Policy forbids scripts) and writes its findings as
//! JSON into the DOM, which `--dump-dom` returns.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Chromium on PATH, or a skipped prerequisite (fatal in CI).
pub fn gate() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join("chromium"))
            .find(|c| c.is_file())
    });
    match found {
        Some(b) => {
            crate::ran("chromium");
            Some(b)
        }
        None => {
            crate::skip("chromium (scripts/deps.sh installs it)");
            None
        }
    }
}

/// `target/artefacts`, where screenshots are kept for people to look at.
pub fn artefacts() -> PathBuf {
    // target/<profile>/deps/TEST-HASH -> target/artefacts
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe
        .ancestors()
        .nth(3)
        .expect("target dir")
        .join("artefacts");
    std::fs::create_dir_all(&dir).expect("create target/artefacts");
    dir
}

/// Run headless Chromium on `page` with `extra` flags; (stdout, stderr).
/// A hung browser is killed after 120 s rather than hang the test run.
pub fn run(bin: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let dir = crate::temp_dir("chromium");
    let profile = dir.join("profile");
    std::fs::create_dir_all(&profile).expect("profile dir");
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
        .stdout(std::fs::File::create(&out_p).expect("stdout file"))
        .stderr(std::fs::File::create(&err_p).expect("stderr file"))
        .spawn()
        .expect("start chromium");
    let t0 = Instant::now();
    while child.try_wait().expect("wait for chromium").is_none() {
        if t0.elapsed() > Duration::from_secs(120) {
            child.kill().ok();
            child.wait().ok();
            panic!("chromium ran past 120 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read =
        |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    let out = (read(&out_p), read(&err_p));
    std::fs::remove_dir_all(dir).ok();
    out
}

/// A screenshot of `page` at `width` x `height` into `png`; its bytes.
pub fn screenshot(bin: &Path, page: &Path, (width, height): (u32, u32), png: &Path) -> Vec<u8> {
    std::fs::remove_file(png).ok();
    let (_, err) = run(
        bin,
        page,
        &[
            format!("--screenshot={}", png.display()),
            format!("--window-size={width},{height}"),
            "--hide-scrollbars".into(),
        ],
    );
    let bytes = std::fs::read(png).unwrap_or_else(|e| panic!("no screenshot ({e}):\n{err}"));
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    bytes
}

/// What [`measure`] found on the page.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The page's content width (the body's box), px.
    pub content_width: f64,
    /// Each `svg.chart`: its id and rendered width, px.
    pub charts: Vec<(String, f64)>,
    /// Each pair of text boxes that overlap by more than a pixel each way.
    pub overlaps: Vec<String>,
    /// Each SVG text whose box runs outside its chart (clipped).
    pub clipped: Vec<String>,
    /// The text of every `.axis-name`.
    pub axis_names: Vec<String>,
    /// How many text boxes were measured (a blind check measures none).
    pub boxes: usize,
}

impl Layout {
    /// What a person needs of any report: text boxes measured (the check
    /// is not blind), none over another, none clipped by its chart, and
    /// every chart at least `share` of the content width.
    #[track_caller]
    pub fn assert_readable(&self, share: f64) {
        assert!(self.boxes > 100, "the check measured {} boxes", self.boxes);
        assert!(
            self.overlaps.is_empty(),
            "text over text:\n{}",
            self.overlaps.join("\n")
        );
        assert!(
            self.clipped.is_empty(),
            "clipped:\n{}",
            self.clipped.join("\n")
        );
        for (id, w) in &self.charts {
            assert!(
                *w >= share * self.content_width,
                "#{id} is {w} px of {} px",
                self.content_width
            );
        }
    }
}

/// Lay `page` out at `width` px in Chromium and measure it (module doc).
pub fn measure(bin: &Path, page: &Path, width: u32) -> Layout {
    let html = std::fs::read_to_string(page).expect("read the page");
    let dir = crate::temp_dir("chromium-measure");
    let copy = dir.join("measured.html");
    // The copy may run its one script; nothing else changes.
    let html = html.replace(
        "default-src 'none';",
        "default-src 'none'; script-src 'unsafe-inline';",
    );
    let html = html.replacen("</body>", &format!("<script>{MEASURE}</script></body>"), 1);
    std::fs::write(&copy, html).expect("write the copy");
    let (dom, err) = run(
        bin,
        &copy,
        &["--dump-dom".into(), format!("--window-size={width},2000")],
    );
    std::fs::remove_dir_all(dir).ok();
    let json = dom
        .split("<pre id=\"sweepkit-measured\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| panic!("the measuring script wrote nothing:\n{err}"));
    let json = json
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    let strings = |k: &str| -> Vec<String> {
        v[k].as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    Layout {
        content_width: v["content_width"].as_f64().unwrap_or(0.0),
        charts: v["charts"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|c| {
                        (
                            c[0].as_str().unwrap_or("").to_string(),
                            c[1].as_f64().unwrap_or(0.0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default(),
        overlaps: strings("overlaps"),
        clipped: strings("clipped"),
        axis_names: strings("axis_names"),
        boxes: v["boxes"].as_u64().unwrap_or(0) as usize,
    }
}

/// The measuring script: every non-blank text node's line boxes (Range
/// client rects) with the text they belong to, compared pairwise.
const MEASURE: &str = r#"
(function () {
  var boxes = [];
  var walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  var n;
  while ((n = walk.nextNode())) {
    var t = n.nodeValue.trim();
    var p = n.parentElement;
    if (!t || !p || p.closest('title, style, script')) continue;
    var r = document.createRange();
    r.selectNodeContents(n);
    var rects = r.getClientRects();
    for (var i = 0; i < rects.length; i++) {
      var b = rects[i];
      if (b.width < 0.5 || b.height < 0.5) continue;
      boxes.push({t: t.slice(0, 60), node: n, b: b, svg: p.closest('svg')});
    }
  }
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) {
    for (var j = i + 1; j < boxes.length; j++) {
      var a = boxes[i].b, c = boxes[j].b;
      if (boxes[i].node === boxes[j].node) continue;
      var w = Math.min(a.right, c.right) - Math.max(a.left, c.left);
      var h = Math.min(a.bottom, c.bottom) - Math.max(a.top, c.top);
      if (w > 1 && h > 1) overlaps.push(JSON.stringify(boxes[i].t) + ' over ' + JSON.stringify(boxes[j].t));
    }
  }
  var clipped = [];
  boxes.forEach(function (x) {
    if (!x.svg) return;
    var s = x.svg.getBoundingClientRect(), b = x.b;
    if (b.left < s.left - 0.5 || b.right > s.right + 0.5 || b.top < s.top - 0.5 || b.bottom > s.bottom + 0.5)
      clipped.push(JSON.stringify(x.t) + ' in #' + x.svg.id);
  });
  var charts = [].map.call(document.querySelectorAll('svg.chart'), function (s) {
    return [s.id, s.getBoundingClientRect().width];
  });
  var cs = getComputedStyle(document.body);
  var cw = document.body.getBoundingClientRect().width - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  var names = [].map.call(document.querySelectorAll('.axis-name'), function (e) { return e.textContent; });
  var pre = document.createElement('pre');
  pre.id = 'sweepkit-measured';
  pre.textContent = JSON.stringify({content_width: cw, charts: charts, overlaps: overlaps,
    clipped: clipped, axis_names: names, boxes: boxes.length});
  document.body.appendChild(pre);
})();
"#;
