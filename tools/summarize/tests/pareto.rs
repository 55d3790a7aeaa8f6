//! `--pareto` from hand-made results: dominated configs leave the
//! frontier, ties stay on it, a config failing everywhere is named, GPU
//! counts normalise throughput (and an unknown count turns every point per
//! server), and `--plot` draws the frontier labelled by config and level.

mod common;

use common::make::{bench, failure, lines, on_host};
use common::{summarize, summary, summary_of, temp_file};
use serde_json::Value;
use testkit::{assert_contains, assert_lacks};

fn cfg(v: &str, tp: &str) -> Vec<(&'static str, String)> {
    vec![("variant", v.to_string()), ("tp-size", tp.to_string())]
}

fn b(v: &str, tp: &str, c: u64, tput: f64, tpot: f64) -> Value {
    let c2 = cfg(v, tp);
    let kv: Vec<(&str, &str)> = c2.iter().map(|(k, v)| (*k, v.as_str())).collect();
    on_host(bench(&kv, c, tput, tpot, 100.0), 8)
}

/// a: the frontier at c=1 and c=8; b: dominated everywhere; c: the
/// frontier at c=64; d: ties a at c=1; e: OOM at load.
fn campaign() -> String {
    let e = failure(&[("variant", "e"), ("tp-size", "1")], "ready", "oom", None);
    lines(&[
        b("a", "1", 1, 100.0, 10.0),
        b("a", "1", 8, 600.0, 20.0),
        b("b", "1", 1, 90.0, 12.0),
        b("b", "1", 8, 500.0, 25.0),
        b("c", "1", 64, 1200.0, 50.0),
        b("d", "1", 1, 100.0, 10.0),
        e,
    ])
}

fn frontier(rec: &Value) -> Vec<String> {
    rec["details"]["pareto"]["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{} {}",
                p["label"].as_str().unwrap(),
                p["level"].as_str().unwrap()
            )
        })
        .collect()
}

fn per_config(rec: &Value, label: &str) -> String {
    rec["details"]["pareto"]["per_config"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["label"] == label)
        .unwrap_or_else(|| panic!("no {label}: {rec}"))["frontier"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn dominated_configs_ties_and_a_failed_config() {
    let input = campaign();
    let rec = summary_of(&testkit::words("-f json --objective max --pareto"), &input);
    // By rising interactivity: c (1000/50 = 20 tok/s/user), a at c=8 (50),
    // then the tie a and d at c=1 (100).
    assert_eq!(
        frontier(&rec),
        [
            "variant=c c=64",
            "variant=a c=8",
            "variant=a c=1",
            "variant=d c=1"
        ]
    );
    assert_eq!(per_config(&rec, "variant=a"), "on the frontier at c=1, c=8");
    assert_eq!(
        per_config(&rec, "variant=b"),
        "not on the frontier (dominated at every level)"
    );
    assert_eq!(
        per_config(&rec, "variant=e"),
        "not on the frontier: nothing measured (OOM at load)"
    );
    assert_eq!(rec["details"]["pareto"]["per_gpu"], true);
    // The text lists the same, in order, with both interactivities.
    let text = summarize(&testkit::words("-f text --objective max --pareto"), &input);
    text.expect_code(0);
    let out = text.stdout();
    let at = |s: &str| out.find(s).unwrap_or_else(|| panic!("no {s:?} in\n{out}"));
    assert!(
        at("  variant=c at c=64: 20 tok/s/user, 18.8 by output/concurrency; 1200 tok/s/GPU")
            < at("  variant=a at c=8: 50 tok/s/user, 75 by output/concurrency; 600 tok/s/GPU")
    );
    assert!(
        at("  variant=a at c=8")
            < at("  variant=a at c=1: 100 tok/s/user, 100 by output/concurrency; 100 tok/s/GPU")
    );
    assert_contains(
        &out,
        "variant=b: not on the frontier (dominated at every level)",
    );
    assert_contains(&out, "  variant=a: tp 1 from flags");
    // Without --pareto, no section.
    let plain = summarize(&testkit::words("-f text --objective max"), &input);
    assert_lacks(&plain.stdout(), "pareto frontier");
}

#[test]
fn mixed_gpu_counts_are_normalised_per_gpu() {
    // y at tp 2 serves 1000 tok/s on 2 GPUs: 500 per GPU, below x's 600 on
    // one at the same interactivity; per server it would have won.
    let input = lines(&[b("x", "1", 8, 600.0, 20.0), b("y", "2", 8, 1000.0, 20.0)]);
    let rec = summary(&summarize(&["-f", "json", "--pareto"], &input));
    assert_eq!(frontier(&rec), ["tp-size=1 c=8"]);
    let pts = rec["details"]["pareto"]["points"].as_array().unwrap();
    let y = pts.iter().find(|p| p["label"] == "tp-size=2").unwrap();
    assert_eq!(y["gpus"], 2);
    assert_eq!(y["output_tok_per_s_per_gpu"], 500.0);
}

#[test]
fn an_unknown_gpu_count_puts_every_point_per_server() {
    // z has no hardware record and no parallel flags: its GPUs are unknown.
    let z = bench(&[("variant", "z")], 8, 1000.0, 20.0, 100.0);
    let mut x = b("x", "2", 8, 600.0, 20.0);
    x["config"].as_object_mut().unwrap().remove("tp-size");
    x["server"]["args"] = serde_json::json!({"tp_size": 2});
    let rec = summary(&summarize(&["-f", "json", "--pareto"], &lines(&[x, z])));
    let p = &rec["details"]["pareto"];
    assert_eq!(p["per_gpu"], false, "{p}");
    assert!(
        p["notes"][0]
            .as_str()
            .unwrap()
            .contains("GPU count of variant=z is unknown"),
        "{p}"
    );
    // Per server: z's 1000 beats x's 600.
    assert_eq!(frontier(&rec), ["variant=z c=8"]);
}

#[test]
fn plot_adds_the_frontier_labelled_by_config_and_level() {
    let svg = temp_file("pareto.svg", "");
    summarize(
        &[
            "-f",
            "json",
            "--objective",
            "max",
            "--pareto",
            "--plot",
            &svg,
        ],
        &campaign(),
    )
    .expect_code(0);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    assert!(
        doc.descendants()
            .any(|n| n.attribute("id") == Some("pareto")),
        "no pareto panel"
    );
    let labels: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("frontier-label"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(
        labels,
        [
            "variant=c c=64",
            "variant=a c=8",
            "variant=a c=1",
            "variant=d c=1"
        ]
    );
    // Without --pareto the plot has no such panel.
    let svg2 = temp_file("plain.svg", "");
    summarize(
        &["-f", "json", "--objective", "max", "--plot", &svg2],
        &campaign(),
    )
    .expect_code(0);
    assert!(!std::fs::read_to_string(&svg2)
        .unwrap()
        .contains("id=\"pareto\""));
}
