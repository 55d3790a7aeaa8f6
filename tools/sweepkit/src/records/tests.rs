//! Round trips and the field lists checked against the structs.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::*;

#[test]
fn failure_round_trips_with_type_tag() {
    let mut cfg = Config::new();
    cfg.insert("speculative-num-steps".into(), "5".into());
    let f = failure(
        "wait-ready",
        std::time::SystemTime::now(),
        cfg,
        Stage::Ready,
        FailureKind::Oom,
        "CUDA out of memory",
        None,
    );
    let line = serde_json::to_string(&Record::Failure(f.clone())).unwrap();
    assert!(line.starts_with(r#"{"type":"failure""#), "{line}");
    let back: Record = serde_json::from_str(&line).unwrap();
    assert_eq!(back, Record::Failure(f));
}

/// serde names every tag of `Record` when it meets an unknown one:
/// RECORD_TYPES must list exactly those, in order.
#[test]
fn record_types_are_the_tags_serde_derives() {
    let e = serde_json::from_str::<Record>(r#"{"type":"no_such_type"}"#).unwrap_err();
    let msg = e.to_string();
    let list = msg
        .split("expected one of ")
        .nth(1)
        .expect("serde lists the tags");
    let tags: Vec<&str> = list
        .split(", ")
        .map(|t| t.trim_matches(|c: char| c == '`' || !c.is_ascii_graphic()))
        .map(|t| t.split('`').next().unwrap_or(t))
        .collect();
    let ours: Vec<&str> = RECORD_TYPES.iter().map(|(t, _)| *t).collect();
    assert_eq!(tags, ours, "{msg}");
    assert!(is_record_type("origin") && !is_record_type("nope"));
    let b = Record::Bench(BenchRecord::default());
    let line = serde_json::to_string(&b).unwrap();
    assert!(line.starts_with(&format!(r#"{{"type":"{}""#, b.kind())));
}

/// The top-level keys of `v` (a serialized struct).
fn keys(v: impl Serialize) -> Vec<String> {
    let v = serde_json::to_value(v).unwrap();
    let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn sorted(xs: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    v.sort();
    v
}

/// The field lists summarize's metrics come from match the structs.
/// The literals name every field (no `..`), so a new field does not
/// compile here until it is listed.
#[test]
fn field_lists_match_the_structs() {
    let st = Stats {
        count: 1,
        mean: 1.0,
        p50: 1.0,
        p90: 1.0,
        p95: 1.0,
        p99: 1.0,
        max: 1.0,
    };
    assert_eq!(keys(&st), sorted(&Stats::FIELDS));
    let t = Throughput {
        elapsed_s: 1.0,
        requests_per_s: 1.0,
        output_tok_per_s: 1.0,
        total_tok_per_s: 1.0,
        goodput_req_per_s: Some(1.0),
        achieved_concurrency: 1.0,
        slo_attainment: Some(1.0),
    };
    assert_eq!(keys(&t), sorted(&Throughput::FIELDS));
    let c = Counts {
        completed: 1,
        failed: 1,
        early_stops: 1,
        usage_missing: 1,
        input_tokens: 1,
        output_tokens: 1,
        cancelled: 1,
    };
    assert_eq!(keys(&c), sorted(&Counts::FIELDS));
    let sp = SpecStats {
        source: SpecSource::Metrics,
        origin: Some("x".into()),
        draft_tokens: Some(1),
        accepted_tokens: Some(1),
        acceptance_rate: Some(1.0),
        accept_length: Some(1.0),
        drafts: Some(1),
    };
    let mut n = sorted(&SpecStats::NUMBERS);
    n.extend(["origin".to_string(), "source".to_string()]);
    n.sort();
    assert_eq!(keys(&sp), n);
    bench_lists_match(st, t, sp);
}

fn bench_lists_match(st: Stats, t: Throughput, sp: SpecStats) {
    let b = BenchRecord {
        schema: 1,
        label: None,
        config: Config::new(),
        provenance: Provenance::default(),
        server: ServerInfo::default(),
        load: Load::default(),
        counts: Counts::default(),
        errors: BTreeMap::new(),
        throughput: t.clone(),
        latency: Latency {
            ttft_ms: st.clone(),
            tpot_ms: st.clone(),
            itl_ms: st.clone(),
            chunk_gap_ms: st.clone(),
            e2e_ms: st.clone(),
            queue_ms: st.clone(),
            start_lag_ms: st.clone(),
            e2e_incl_queue_ms: Some(st),
        },
        // Not a metric: how the level ended (`loadgen --until-stable`).
        stability: None,
        // Not a metric: a capacity search's result.
        capacity: None,
        // Not metrics: the distributions the latency blocks summarize.
        histograms: None,
        // Not a metric: the Slurm job the config ran in.
        slurm: None,
        // Not a metric: the GPU slot the level ran in.
        slot: None,
        itl_method: Some("x".into()),
        tokens_per_chunk: Some(1.0),
        client_cpu_s: Some(1.0),
        steady: Some(t),
        spec: Some(sp),
        // Lists of their own, checked in server_metrics.rs.
        server_metrics: None,
        gpu: None,
        warnings: vec!["w".into()],
        partial: true,
        upstream: Some(Value::Null),
    };
    let v = serde_json::to_value(&b).unwrap();
    let obj = v.as_object().unwrap();
    // The top-level keys whose value is an object of exactly `fields`.
    let blocks_of = |fields: &[&str]| -> Vec<&str> {
        obj.keys()
            .map(String::as_str)
            .filter(|k| {
                obj[*k].as_object().is_some_and(|o| o.len() == fields.len())
                    && fields.iter().all(|f| obj[*k].get(f).is_some())
            })
            .collect()
    };
    assert_eq!(
        sorted(&blocks_of(&Stats::FIELDS)),
        sorted(&BenchRecord::STATS_BLOCKS)
    );
    assert_eq!(
        sorted(&blocks_of(&Throughput::FIELDS)),
        sorted(&BenchRecord::THROUGHPUT_BLOCKS)
    );
    let top: Vec<&str> = obj
        .iter()
        .filter(|(k, x)| x.is_f64() && *k != "schema")
        .map(|(k, _)| k.as_str())
        .collect();
    assert_eq!(sorted(&top), sorted(&BenchRecord::NUMBERS));
}

#[test]
fn bench_latency_blocks_stay_top_level_fields_in_order() {
    let mut b = BenchRecord::default();
    b.latency.ttft_ms.p50 = 12.5;
    b.latency.e2e_incl_queue_ms = Some(Stats::default());
    let line = serde_json::to_string(&Record::Bench(b.clone())).unwrap();
    let keys = [
        "\"throughput\"",
        "\"ttft_ms\"",
        "\"tpot_ms\"",
        "\"itl_ms\"",
        "\"chunk_gap_ms\"",
        "\"e2e_ms\"",
        "\"queue_ms\"",
        "\"start_lag_ms\"",
        "\"e2e_incl_queue_ms\"",
        "\"partial\"",
    ];
    let at: Vec<usize> = keys.iter().map(|k| line.find(k).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "{line}");
    assert!(!line.contains("latency"), "{line}");
    let back: Record = serde_json::from_str(&line).unwrap();
    assert_eq!(back, Record::Bench(b));
}

/// Slot keys are JSON strings that read back as numbers, in numeric
/// order, through the tagged `Record` (serde's own integer keys do not).
#[test]
fn schedule_round_trips_with_batch_size_keys() {
    let slot = |k: u32| AdaptiveSlot {
        candidate_steps: vec![k],
    };
    let rec = ScheduleRecord {
        schema: SCHEMA_VERSION,
        metric: "throughput.output_tok_per_s".into(),
        per_level: Vec::new(),
        max_batch: 48,
        max_batch_source: "--max-batch".into(),
        replaces: vec!["speculative-num-steps".into()],
        warnings: Vec::new(),
        simulated: false,
        server: ScheduleServer::Sglang,
        flags: vec!["--speculative-adaptive".into()],
        speculative_config: None,
        adaptive_config: Some([(BatchSize(16), slot(1)), (BatchSize(4), slot(3))].into()),
        adaptive_config_file: Some("a.json".into()),
        provenance: Provenance::default(),
    };
    let line = serde_json::to_string(&Record::Schedule(rec.clone())).unwrap();
    assert!(line.starts_with(r#"{"type":"schedule""#), "{line}");
    assert!(
        line.contains(r#""adaptive_config":{"4":{"candidate_steps":[3]},"16":"#),
        "{line}"
    );
    assert!(!line.contains("speculative_config"), "{line}");
    assert_eq!(
        crate::io::parse_record(&line),
        Ok(Record::Schedule(rec.clone()))
    );
    assert_eq!(Record::Schedule(rec).kind(), "schedule");
}

#[test]
fn outcome_exit_codes_are_distinct() {
    use ReadyOutcome::*;
    let all = [
        Timeout,
        Crashed,
        RestartLoop,
        Unreachable,
        ConfigMismatch,
        Interrupted,
        NotFound,
        Unauthorized,
    ];
    let mut codes: Vec<u8> = all.iter().map(|o| o.exit_code()).collect();
    codes.sort();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
    assert_eq!(Ready.exit_code(), 0);
}

/// Regression (issue 47): an `interrupted` record (Ctrl-C, sweep's own
/// cancel of a Slurm job) carried `class: config`, as if the config had
/// failed; the interruption is no fault of the config's.
#[test]
fn an_interruption_is_not_the_config_s_fault() {
    assert_eq!(
        FailureKind::Interrupted.default_class(),
        FailureClass::Transport
    );
    let old = serde_json::json!({"type": "failure", "kind": "interrupted"});
    assert_eq!(failure_class(&old), FailureClass::Transport);
    assert_eq!(FailureKind::Oom.default_class(), FailureClass::Config);
}
