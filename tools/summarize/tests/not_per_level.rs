//! A speculative-decoding figure whose record says it is not the level's
//! own (`spec.source` `lifetime_average`, older `server_info`, `gauge`) is
//! never shown or ranked as a per-level figure: the cell stays empty and
//! the figure is listed apart, in every format.

mod common;

use common::{fixture, fixture_lines, summarize, summary, temp_file};
use serde_json::{json, Value};
use testkit::{assert_contains, assert_lacks};

/// The reference campaign with acceptance from three sources: steps=4
/// per-level (`per_request`, from SGLang's /generate), steps=5 from the
/// /metrics `gauge`, steps=1..3 the lifetime average (as `server_info`,
/// the older name, and `lifetime_average` for steps=3).
fn mixed_sources() -> String {
    let mut out = String::new();
    for line in fixture_lines() {
        let mut v: Value = serde_json::from_str(&line).unwrap();
        let steps = v["config"]["speculative-num-steps"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let c = v["load"]["concurrency"].as_f64().unwrap_or(0.0);
        match steps.as_str() {
            "4" => {
                v["spec"] = json!({"source": "per_request",
                    "origin": "/generate meta_info.spec_verify_ct, completion_tokens",
                    "accept_length": 3.5 - c / 100.0, "drafts": 100});
            }
            "5" => v["spec"] = json!({"source": "gauge", "accept_length": 3.9}),
            "3" => v["spec"]["source"] = json!("lifetime_average"),
            _ => {}
        }
        out += &v.to_string();
        out.push('\n');
    }
    temp_file("mixed.jsonl", &out)
}

#[test]
fn a_lifetime_average_is_never_a_table_cell() {
    let run = summarize(
        &["--format", "text", "--metric", "accept_length", &fixture()],
        "",
    );
    // Nothing per-level to pick from: say so, exit 1.
    run.expect_code(1);
    let out = run.stdout();
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("speculative-num-steps "))
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(table.len(), 8, "{out}");
    for l in &table {
        for v in ["1.55", "2.10", "3.20", "3.75"] {
            assert!(!l.contains(v), "a lifetime average in the table: {l}");
        }
    }
    assert!(table[4].contains('#'), "{}", table[4]);
    assert!(out.contains(
        "speculative-num-steps=4: 3.20 at c=1, c=4, c=16, c=32, c=64 (server_info: SGLang's \
         lifetime average since server start, warm-up and earlier levels included)"
    ));
    assert!(out.contains("run loadgen --endpoint generate for per-level acceptance"));
    insta::assert_snapshot!("lifetime_text", out);
}

#[test]
fn per_level_figures_fill_the_table_and_the_others_are_listed_apart() {
    let input = mixed_sources();
    // The same campaign in each output format, best by acceptance.
    let as_format = |format: &str| {
        let args = testkit::words("--metric accept_length --objective max --format");
        summarize(&[&args[..], &[format, &input]].concat(), "")
    };
    let text = as_format("text");
    text.expect_code(0);
    let out = text.stdout();
    assert_contains(
        &out,
        "best overall (max): speculative-num-steps=4 at c=1: 3.49",
    );
    assert!(out.contains("speculative-num-steps=5: 3.90 at c=1, c=4, c=16, c=32, c=64 (gauge: "));
    assert!(out.contains(
        "speculative-num-steps=3: 2.65 at c=1, c=4, c=16, c=32, c=64 (lifetime_average: "
    ));
    insta::assert_snapshot!("mixed_text", out);

    let md = as_format("markdown");
    md.expect_code(0);
    assert!(md
        .stdout()
        .contains("**Not per-level** (left out of the table)"));
    insta::assert_snapshot!("mixed_markdown", md.stdout());

    let csv = as_format("csv");
    csv.expect_code(0);
    let csv_out = csv.stdout();
    let table = testkit::output::Csv::parse(&csv_out);
    let col = |n: &str| table.col(n);
    for r in &table.rows {
        let steps = &r[col("config.speculative-num-steps")];
        if steps == "5" {
            assert_eq!(&r[col("runs")], "0", "a gauge is no run");
            assert_eq!(&r[col("median")], "");
            assert_eq!(&r[col("not_per_level")], "3.9");
            assert_eq!(&r[col("not_per_level_source")], "gauge");
        }
        if steps == "4" {
            assert_eq!(&r[col("not_per_level")], "");
        }
    }
    insta::assert_snapshot!("mixed_csv", csv_out);

    let js = as_format("json");
    js.expect_code(0);
    let mut rec = summary(&js);
    assert_eq!(rec["best_config"]["speculative-num-steps"], "4");
    let asides = rec["details"]["not_per_level"].as_array().unwrap();
    assert!(asides.iter().all(|a| a["source"] != "per_request"));
    assert!(asides
        .iter()
        .any(|a| a["source"] == "gauge" && a["value"] == 3.9));
    // Stable snapshot: the provenance times change every run.
    rec["provenance"] = json!("<provenance>");
    insta::assert_snapshot!("mixed_json", serde_json::to_string_pretty(&rec).unwrap());
}

/// Regression: with the default weighted objective, configs whose figure
/// is only a gauge or lifetime average (no cell anywhere) emptied the
/// default weights, and the per-level config measured at every level was
/// reported "not measured at every weighted level" and nothing was picked.
#[test]
fn weighted_pick_ignores_configs_with_no_per_level_figure() {
    let input = mixed_sources();
    let js = summarize(
        &["--format", "json", "--metric", "accept_length", &input],
        "",
    );
    js.expect_code(0);
    let rec = summary(&js);
    assert_eq!(rec["objective"], "weighted", "{rec}");
    assert_eq!(rec["best_config"]["speculative-num-steps"], "4", "{rec}");
    let text = summarize(
        &["--format", "text", "--metric", "accept_length", &input],
        "",
    );
    text.expect_code(0);
    let out = text.stdout();
    assert_contains(&out, "best overall (weighted): speculative-num-steps=4");
    assert_lacks(
        &out,
        "speculative-num-steps=4: not measured at every weighted level",
    );
}
