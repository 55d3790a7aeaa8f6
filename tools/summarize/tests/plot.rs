//! `--plot FILE.svg`: the file parses as SVG (XML in the SVG namespace) and
//! holds both panels with the expected series, each labelled at its end.

mod common;

use common::{fixture, summarize};
use testkit::assert_contains;

fn series_labels(doc: &roxmltree::Document, panel: &str) -> Vec<String> {
    let panel = doc
        .descendants()
        .find(|n| n.attribute("id") == Some(panel))
        .unwrap_or_else(|| panic!("no panel {panel}"));
    panel
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .map(|g| {
            // Each series has a line and a text label naming it.
            assert!(g.children().any(|c| c.has_tag_name("polyline")));
            let label = g
                .children()
                .find(|c| c.attribute("class") == Some("label"))
                .and_then(|t| t.text())
                .expect("series label");
            assert_eq!(Some(label), g.attribute("data-label"));
            label.to_string()
        })
        .collect()
}

#[test]
fn plot_is_valid_svg_with_both_panels_labelled() {
    let dir = testkit::temp_dir("summarize-plot");
    let path = dir.join("campaign.svg");
    let path_s = path.to_string_lossy().into_owned();
    summarize(&["-f", "text", "--plot", &path_s, &fixture()], "").expect_code(0);
    let text = std::fs::read_to_string(&path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(
        root.tag_name().namespace(),
        Some("http://www.w3.org/2000/svg")
    );
    let by_level = series_labels(&doc, "by-level");
    let want: Vec<String> = (0..=5)
        .map(|s| format!("speculative-num-steps={s}"))
        .collect();
    assert_eq!(by_level, want);
    let by_param = series_labels(&doc, "by-param");
    assert_eq!(by_param, ["c=1", "c=4", "c=16", "c=32", "c=64"]);
    // The OOM config is named, not silently left out.
    let note = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("note"))
        .and_then(|n| n.text())
        .unwrap();
    assert_eq!(note, "not plotted: speculative-num-steps=10 (OOM at load)");
    // Direct labels: no two end labels of a panel overlap vertically.
    for id in ["by-level", "by-param"] {
        let panel = doc
            .descendants()
            .find(|n| n.attribute("id") == Some(id))
            .unwrap();
        let mut ys: Vec<f64> = panel
            .descendants()
            .filter(|n| n.attribute("class") == Some("label"))
            .map(|n| n.attribute("y").unwrap().parse().unwrap())
            .collect();
        ys.sort_by(f64::total_cmp);
        assert!(ys.windows(2).all(|w| w[1] - w[0] >= 12.0), "{id}: {ys:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn unwritable_plot_path_fails_after_saying_why() {
    let run = summarize(
        &["-f", "json", "--plot", "/nonexistent/dir/p.svg", &fixture()],
        "",
    );
    run.expect_code(1);
    assert_contains(&run.stderr(), "--plot /nonexistent/dir/p.svg");
}
