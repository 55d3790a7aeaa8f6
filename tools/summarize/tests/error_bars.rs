//! Error bars: cells with repeats show `median ± half-width` of the 95%
//! Student t interval, one `--until-stable` run its batch-means interval,
//! picks within noise say so, percentiles of too few requests are
//! flagged, and `--plot` draws the bars.

mod common;

use common::make::{bench, lines};
use common::{summarize, summary, temp_file};
use serde_json::json;
use testkit::{assert_contains, assert_lacks};

/// The reference half-width, computed here from the definition with the
/// t table's t(0.975, n - 1) (scipy.stats.t.ppf), not by summarize's code.
fn reference_half_width(xs: &[f64]) -> f64 {
    let t975 = [
        f64::NAN,
        12.706204736174707,
        4.302652729911275,
        3.182446305284263,
    ];
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    t975[xs.len() - 1] * var.sqrt() / n.sqrt()
}

fn repeats() -> String {
    let a = [3150.0, 2950.0, 3200.0];
    let b = [3100.0, 3120.0, 3080.0];
    let mut recs = Vec::new();
    for (steps, xs) in [("1", a), ("2", b)] {
        for (i, x) in xs.iter().enumerate() {
            let mut r = bench(&[("speculative-num-steps", steps)], 4, *x, 10.0, 100.0);
            r["load"]["repeat"] = json!(i + 1);
            recs.push(r);
        }
        recs.push(bench(
            &[("speculative-num-steps", steps)],
            1,
            300.0,
            8.0,
            50.0,
        ));
    }
    lines(&recs)
}

#[test]
fn repeats_show_median_plus_minus_the_t_half_width() {
    let input = repeats();
    let ha = reference_half_width(&[3150.0, 2950.0, 3200.0]);
    let hb = reference_half_width(&[3100.0, 3120.0, 3080.0]);
    assert!((ha - 328.62).abs() < 0.01, "{ha}");
    let run = summarize(&["-f", "text"], &input);
    run.expect_code(0);
    let out = run.stdout();
    assert_contains(&out, &format!("3150 ± {:.0}", ha));
    assert_contains(&out, &format!("3100 ± {:.1}", hb));
    assert_contains(
        &out,
        "half-width of the 95% interval of the mean (Student t",
    );
    // 3150 ± 329 and 3100 ± 50 overlap: the pick at c=4 says so.
    assert_contains(&out, "within noise of speculative-num-steps=2");
    let md = summarize(&["-f", "markdown"], &input);
    md.expect_code(0);
    assert_contains(&md.stdout(), &format!("3150 ± {:.0}", ha));
    // The summary record carries the interval.
    let rec = summary(&summarize(&["-f", "json"], &input));
    let cells = rec["details"]["noise"]["cells"].as_array().unwrap();
    let c = cells
        .iter()
        .find(|c| c["label"] == "speculative-num-steps=1" && c["level"] == "c=4")
        .unwrap();
    assert!((c["half_width"].as_f64().unwrap() - ha).abs() < 1e-6, "{c}");
    assert_eq!(c["method"], "t_repeats");
    assert_eq!(c["n"], 3);
}

#[test]
fn separated_intervals_are_not_within_noise() {
    let mut recs = Vec::new();
    for (steps, xs) in [
        ("1", [1000.0, 1010.0, 990.0]),
        ("2", [2000.0, 2010.0, 1990.0]),
    ] {
        for x in xs {
            recs.push(bench(
                &[("speculative-num-steps", steps)],
                4,
                x,
                10.0,
                100.0,
            ));
        }
    }
    let run = summarize(&["-f", "text"], &lines(&recs));
    run.expect_code(0);
    assert!(!run.stdout().contains("within noise"), "{}", run.stdout());
    assert!(run.stdout().contains("2000 ± 24.8"), "{}", run.stdout());
}

#[test]
fn one_until_stable_run_shows_its_batch_means_interval() {
    let mut r = bench(&[("speculative-num-steps", "1")], 4, 500.0, 10.0, 100.0);
    r["stability"] = json!({"pct_target": 2.0, "half_width_pct": 2.0, "mean_output_tok_per_s": 500.0,
                            "batches": 10, "batch_size": 20, "stopped": "stable"});
    let other = bench(&[("speculative-num-steps", "2")], 4, 400.0, 10.0, 100.0);
    let run = summarize(&["-f", "text"], &lines(&[r, other]));
    run.expect_code(0);
    assert!(run.stdout().contains("500 ± 10b"), "{}", run.stdout());
    assert_contains(&run.stdout(), "batch-means interval");
}

#[test]
fn a_p99_of_40_requests_is_flagged() {
    let mut few = bench(&[("speculative-num-steps", "1")], 4, 500.0, 10.0, 100.0);
    few["ttft_ms"]["count"] = json!(40);
    let enough = bench(&[("speculative-num-steps", "2")], 4, 400.0, 10.0, 120.0);
    let input = lines(&[few, enough]);
    let run = summarize(&testkit::words("-f text -m p99_ttft_ms"), &input);
    run.expect_code(0);
    let out = run.stdout();
    assert_contains(&out, "ttft_ms.p99 is a p99 of 40 requests (fewer than 100)");
    let row = out.lines().find(|l| l.starts_with('1')).unwrap();
    assert!(row.contains('^'), "{row}");
    let row2 = out.lines().find(|l| l.starts_with('2')).unwrap();
    assert!(!row2.contains('^'), "{row2}");
    let md = summarize(&testkit::words("-f markdown -m p99_ttft_ms"), &input);
    assert_contains(&md.stdout(), "p99 of 40 requests");
    // p50 of the same 40 requests is fine.
    let p50 = summarize(&testkit::words("-f text -m p50_ttft_ms"), &input);
    assert_lacks(&p50.stdout(), "requests (fewer");
}

#[test]
fn plot_draws_interval_bars() {
    let svg = temp_file("bars.svg", "");
    summarize(&["-f", "json", "--plot", &svg], &repeats()).expect_code(0);
    let text = std::fs::read_to_string(&svg).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let bars: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("errbar"))
        .collect();
    // Two configs with repeats at c=4, in both panels (by level, by steps).
    assert_eq!(bars.len(), 4, "{text}");
}
