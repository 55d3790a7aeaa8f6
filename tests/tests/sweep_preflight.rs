//! scripts/sweep.sh with svc-swap's SGLang pre-flight, against llm-sim (its
//! SGLang personality) under the process manager: a sweep of steps without
//! topk is refused config by config before any restart (the server's PID
//! never changes) and every config is recorded as a pre-flight failure;
//! coupled flags (`--param A,B --values 1:2,...`) move together and are
//! measured. Needs `cargo build --workspace` first.

mod sweep_support;

use sweep_support::sim::EAGLE;
use sweep_support::{dump, fields, records, stderr, stdout, SimExec, SpecFile, SweepArgs};

const STEPS: &str = "speculative-num-steps";
const DRAFT: &str = "speculative-num-draft-tokens";

/// llm-sim with `flags`, started once through svc-swap (no edits) so a
/// server runs before the sweep; returns the spec, its URL and the PID.
fn running_sim(tag: &str, flags: &str) -> (SpecFile, String, u32) {
    let sim = SimExec::free().load("100ms").warmup("50ms").flags(flags);
    let (spec, url) = sim.running(tag);
    let pid = spec.live_pid().expect("the first instance runs");
    (spec, url, pid)
}

fn common(spec: &SpecFile, url: &str) -> SweepArgs {
    SweepArgs::on_spec(spec, url, "llm-sim")
        .levels("1")
        .quick("2", "8")
}

#[test]
fn steps_without_topk_is_refused_by_preflight_before_any_restart() {
    let (spec, url, pid) = running_sim("sweep-preflight", "--speculative-algorithm EAGLE");
    let original = spec.exec_start();
    let results = spec.results();
    // Every config failed.
    let out = common(&spec, &url).param_new(STEPS, "1,2,3").expect(41);
    let recs = records(&results);
    let steps = format!("/config/{STEPS}");
    assert_eq!(
        fields(&recs, &["/type", "/kind", &steps]),
        [
            ["failure", "preflight_rejected", "1"],
            ["failure", "preflight_rejected", "2"],
            ["failure", "preflight_rejected", "3"],
        ],
        "{}",
        dump(&out)
    );
    for r in &recs {
        let reason = r["reason"].as_str().unwrap();
        assert!(
            reason.contains("without --speculative-eagle-topk"),
            "{reason}"
        );
        assert_eq!(r["exit_code"], 26);
    }
    assert_eq!(spec.live_pid(), Some(pid), "the server was never restarted");
    assert_eq!(spec.exec_start(), original, "the spec was never edited");
    let err = stderr(&out);
    assert!(!err.contains("restoring"), "nothing to restore: {err}");
    // Each refusal said once, by svc-swap, on a line of its own (issue 46:
    // three times, wait-ready's and loadgen's pass-through warnings
    // repeating it; and the tools' lines mixed mid-line).
    for v in ["1", "2", "3"] {
        let line = format!("pre-flight: --speculative-num-steps {v} without");
        assert_eq!(err.matches(&line).count(), 1, "{err}");
        let svc = err.lines().find(|l| l.contains(&line)).unwrap();
        assert!(svc.starts_with("svc-swap: error: "), "{svc}");
    }
    for tool in ["wait-ready", "loadgen"] {
        let warning =
            format!("{tool}: warning: upstream failed (swap: preflight_rejected), passed through");
        assert_eq!(
            err.lines().filter(|l| *l == warning).count(),
            3,
            "once per config: {err}"
        );
    }
}

#[test]
fn coupled_flags_move_together_and_are_measured() {
    let flags = format!("{EAGLE} --speculative-num-steps 1 --speculative-num-draft-tokens 2");
    let (spec, url, _) = running_sim("sweep-coupled", &flags);
    let original = spec.exec_start();
    let results = spec.results();
    let out = common(&spec, &url)
        .param(&format!("{STEPS},{DRAFT}"), "2:3,3:4")
        .arg("--expect-config")
        .expect(0);
    let recs = records(&results);
    let (steps, draft) = (format!("/config/{STEPS}"), format!("/config/{DRAFT}"));
    assert_eq!(
        fields(&recs, &["/type", &steps, &draft]),
        [["bench", "2", "3"], ["bench", "3", "4"]],
        "{}",
        dump(&out)
    );
    assert!(recs.iter().all(|r| r["counts"]["completed"] == 2));
    // --expect-config checked both flags live; pairs at steps + 1 at topk 1
    // are what SGLang keeps, so pre-flight had nothing to warn about.
    let err = stderr(&out);
    assert!(!err.contains("overridden"), "{err}");
    assert_eq!(spec.exec_start(), original, "both flags restored");
}

#[test]
fn coupled_values_must_match_their_flags() {
    let base = SweepArgs::new()
        .args(&["--spec", "x.spec", "--url", "http://127.0.0.1:1"])
        .args(&["--results", "r"]);
    let out = base.clone().param("a,b", "1:2,3").expect(2);
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("sweep: error: --param a,b --values ...3...: expected 2 values"),
        "{err}"
    );
    assert_eq!(
        base.clone().param("a,", "1:2").output().status.code(),
        Some(2)
    );
    // A dry run shows each pair as two --set edits in one swap.
    let ok = base
        .param("a,b", "1:2,3:4")
        .param("c", "x:y")
        .arg("--dry-run");
    let plan = stdout(&ok.expect(0));
    assert!(plan.contains("--set a=1 --set b=2 --set c=x:y"), "{plan}");
    assert!(plan.contains("--set a=3 --set b=4 --set c=x:y"), "{plan}");
    assert!(plan.contains("# [2/2] a=3 b=4 c=x:y"), "{plan}");
}
