//! Results from several hosts: the fixture's bench records given a host
//! and hardware (`server.host`, as wait-ready writes and loadgen keeps it).
//! Mixed hardware is refused for one pick (exit 55) unless `--pool-hosts`,
//! split per host in tables, and identical hosts pool as repeats.

mod common;

use common::{fixture_lines, summarize, temp_file};
use serde_json::{json, Value};
use testkit::assert_contains;

const H200: &str = "8x NVIDIA H200 (143771 MiB); 192x AMD EPYC 9654";
const A100: &str = "8x NVIDIA A100-SXM4-80GB (81920 MiB); 128x AMD EPYC 7763";

/// Runs per (label, level) cell of a summary record.
fn runs(rec: &Value) -> Vec<(String, String, u64)> {
    let cells = rec["details"]["cells"].as_array().unwrap();
    cells
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap().to_string();
            (s("label"), s("level"), c["runs"].as_u64().unwrap())
        })
        .collect()
}

/// Runs per cell of the fixture summarized alone (one host).
fn single_runs() -> Vec<(String, String, u64)> {
    let a = temp_file("one.jsonl", &on_host("root@gpu1", None, H200, 1.0));
    let run = summarize(&["-f", "json", &a], "");
    run.expect_code(0);
    runs(&run.json_lines()[0])
}

/// The fixture's records, each record placed on `host` with
/// `fingerprint` (throughput scaled by `scale`, so hosts differ).
fn on_host(host: &str, prefix: Option<&str>, fingerprint: &str, scale: f64) -> String {
    let mut out = String::new();
    for line in fixture_lines() {
        let mut v: Value = serde_json::from_str(&line).unwrap();
        let mut h = json!({"name": host, "fingerprint": fingerprint, "cpu_count": 192});
        if let Some(p) = prefix {
            h["exec_prefix"] = json!(p);
        }
        if v["type"] == "bench" {
            v["server"]["host"] = h;
            let t = &mut v["throughput"]["output_tok_per_s"];
            *t = json!(t.as_f64().unwrap() * scale);
        } else if v["type"] == "failure" {
            // wait-ready's failure records name the host themselves.
            v["host"] = h;
        }
        out.push_str(&format!("{v}\n"));
    }
    out
}

fn mixed() -> String {
    let a = temp_file("a.jsonl", &on_host("root@gpu1", None, H200, 1.0));
    let b = temp_file("b.jsonl", &on_host("root@gpu2", None, A100, 0.5));
    format!("{a}\n{b}")
}

/// summarize with the flags `line`, over the files `both` names.
fn on_files(line: &str, both: &str) -> testkit::Run {
    let mut args = testkit::words(line);
    args.extend(both.lines());
    summarize(&args, "")
}

#[test]
fn mixed_hardware_is_refused_for_one_pick() {
    let both = mixed();
    let run = on_files("-f json", &both);
    run.expect_code(55);
    assert_eq!(run.stdout(), "", "no half a summary on stdout");
    let stderr = run.stderr();
    let err: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("summarize: error:"))
        .collect();
    assert_eq!(err.len(), 1, "{}", run.stderr());
    assert!(err[0].contains("different hardware"), "{}", err[0]);
    assert!(
        err[0].contains(&format!("root@gpu1: {H200}; sglang")),
        "{}",
        err[0]
    );
    assert!(err[0].contains("--pool-hosts"), "{}", err[0]);
    // CSV is one ranking too.
    on_files("-f csv", &both).expect_code(55);
}

#[test]
fn pool_hosts_ranks_them_together_with_a_warning() {
    let both = mixed();
    let run = on_files("-f json --pool-hosts", &both);
    run.expect_code(0);
    let lines = run.json_lines();
    assert_eq!(lines.len(), 1);
    assert!(lines[0].get("host").is_none(), "{}", lines[0]);
    assert!(
        run.stderr()
            .contains("ranking hosts of different hardware together"),
        "{}",
        run.stderr()
    );
    // Each cell holds both hosts' runs.
    let doubled: Vec<_> = single_runs()
        .into_iter()
        .map(|(l, c, n)| (l, c, 2 * n))
        .collect();
    assert_eq!(runs(&lines[0]), doubled);
}

#[test]
fn per_host_gives_one_summary_per_host_and_text_splits_by_default() {
    let both = mixed();
    let run = on_files("-f json --per-host", &both);
    run.expect_code(0);
    let recs = run.json_lines();
    assert_eq!(recs.len(), 2, "{}", run.stdout());
    assert_eq!(recs[0]["host"], format!("root@gpu1 ({H200}; sglang)"));
    assert_eq!(recs[1]["host"], format!("root@gpu2 ({A100}; sglang)"));
    for r in &recs {
        assert_eq!(runs(r), single_runs(), "one host's runs each");
    }
    // A person's table needs no flag: one per host, said on stderr.
    let run = on_files("-f text", &both);
    run.expect_code(0);
    let out = run.stdout();
    assert_eq!(out.matches("== host ").count(), 2, "{out}");
    assert!(out.contains(&format!("== host root@gpu2 ({A100}; sglang) ==")));
    assert_contains(&run.stderr(), "one table per host");
    // The CSV names the host of every row.
    let run = on_files("-f csv --per-host", &both);
    run.expect_code(0);
    let csv = run.stdout();
    assert!(csv.lines().next().unwrap().contains("host"), "{csv}");
    assert_contains(&csv, "root@gpu2");
}

#[test]
fn identical_hosts_pool_as_repeats() {
    let a = temp_file("a.jsonl", &on_host("root@gpu1", None, H200, 1.0));
    let b = temp_file("b.jsonl", &on_host("root@gpu2", None, H200, 1.02));
    let run = summarize(&["-f", "json", &a, &b], "");
    run.expect_code(0);
    let rec = &run.json_lines()[0];
    assert!(rec.get("host").is_none());
    let doubled: Vec<_> = single_runs()
        .into_iter()
        .map(|(l, c, n)| (l, c, 2 * n))
        .collect();
    assert_eq!(runs(rec), doubled, "repeats on two hosts are repeats");
    assert_contains(&run.stderr(), "2 hosts with identical hardware");
    // --per-host still splits them when asked.
    let run = summarize(&["-f", "json", "--per-host", &a, &b], "");
    run.expect_code(0);
    assert_eq!(run.json_lines().len(), 2);
}

#[test]
fn host_names_are_redacted_in_every_format() {
    let secret = "hf_TopSecretValue42";
    let prefix = format!("env HF_TOKEN={secret} pct exec 7 --");
    let a = temp_file("a.jsonl", &on_host("localhost", Some(&prefix), H200, 1.0));
    let b = temp_file("b.jsonl", &on_host("root@gpu2", None, A100, 0.5));
    for f in ["text", "markdown", "json", "csv"] {
        let run = summarize(&["-f", f, "--per-host", &a, &b], "");
        run.expect_code(0);
        let all = format!("{}{}", run.stdout(), run.stderr());
        assert!(!all.contains(secret), "{f}: {all}");
        assert!(all.contains("localhost via"), "{f}: {all}");
    }
    let run = summarize(&["-f", "json", &a, &b], "");
    run.expect_code(55);
    assert!(!run.stderr().contains(secret), "{}", run.stderr());
}
