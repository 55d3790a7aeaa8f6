//! `man/sweepkit-records.5` is generated from records (records.rs and
//! records/) and lines.rs; this
//! test fails when it is out of date (`make man` rewrites it).

use sweepkit_tests::{parse_items, paths, render_records_page, RECORDS};

fn read(rel: &str) -> String {
    let p = testkit::repo_root().join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn man_page_records_up_to_date() {
    // The line formats (lines.rs) are documented on the same page.
    let types = sweepkit_tests::records_source();
    let page = render_records_page(
        &types,
        &read("man/src/sweepkit-records.head.roff"),
        &read("man/src/sweepkit-records.tail.roff"),
    );
    let path = testkit::repo_root().join("man/sweepkit-records.5");
    if std::env::var_os("SWEEPKIT_UPDATE_MAN").is_some() {
        std::fs::write(&path, &page).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == page,
        "{} is out of date: run `make man`",
        path.display()
    );
}

#[test]
fn every_record_type_has_config_and_provenance() {
    let items = parse_items(&sweepkit_tests::records_source());
    for (tag, strukt) in RECORDS {
        let p = paths(&items, strukt);
        assert!(p.len() > 5, "{tag}: too few fields parsed: {p:?}");
        // A summary's config is its pick; a schedule picks one per level.
        let cfg = match tag {
            "summary" => "best_config",
            "schedule" => "per_level.config",
            _ => "config",
        };
        assert!(p.iter().any(|(f, _, _)| f == cfg), "{tag} lacks {cfg}");
        assert!(
            p.iter().any(|(f, _, _)| f == "provenance.tool"),
            "{tag} lacks provenance"
        );
    }
}

/// Every number a bench record carries can be ranked on: summarize's metric
/// catalog covers each documented numeric field (the load shape, the server
/// description, the schema number, `--until-stable`'s interval, which says
/// how precisely the level was measured, `--find-capacity`'s result,
/// which is about the search, not this level, `sweep --slurm`'s job
/// facts are labels, not results, and the histograms' precision describes
/// the distributions, not the level).
#[test]
fn every_numeric_bench_field_is_a_metric() {
    let items = parse_items(&sweepkit_tests::records_source());
    let catalog = summarize::metric::catalog();
    let mut numeric = 0;
    for (path, ty, _) in paths(&items, "BenchRecord") {
        // `slurm.`: the job a config ran in (ids, port), no result.
        let label = [
            "load.",
            "server.",
            "provenance.",
            "stability.",
            "capacity.",
            "slurm.",
            // The distributions' precision, not a result.
            "histograms.",
        ]
        .iter()
        .any(|p| path.starts_with(p))
            || path == "schema";
        if label || !(ty.starts_with("integer") || ty.starts_with("number")) {
            continue;
        }
        numeric += 1;
        assert!(
            catalog.contains(&path),
            "bench field {path} ({ty}) is not a summarize metric"
        );
        assert_eq!(summarize::metric::resolve(&path).unwrap(), path);
    }
    assert!(numeric > 80, "too few numeric fields parsed: {numeric}");
    let leaf_alias = summarize::metric::resolve("slo_attainment").unwrap();
    assert_eq!(leaf_alias, "throughput.slo_attainment");
}
