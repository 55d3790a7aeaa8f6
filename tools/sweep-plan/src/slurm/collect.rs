//! One ended job's records into the results file. The job wrote its
//! records to its own file in the shared folder; once Slurm says the job
//! ended, nothing writes that file any more, so this side reads it whole,
//! drops a torn last line (a job killed mid-write), adds the job's facts
//! (`slurm`: job id, array index, node, GPUs, port, Slurm's state) to
//! each record; the driver appends them in one write to the results
//! file, which only this side writes. Where Slurm ended the job (TIMEOUT,
//! CANCELLED, NODE_FAIL, ...) a failure record of that kind follows.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::Value;
use sweepkit::records::{self, FailureKind, FailureRecord, Record, SlurmJob, Stage};

use super::job::{self, End, JobLine};
use super::plan::Plan;

/// What one job left in the results file.
#[derive(Debug, Clone, PartialEq)]
pub struct Collected {
    /// Records of the tools appended.
    pub records: usize,
    /// The failure record sweep added for Slurm's end, if any.
    pub failure: Option<FailureKind>,
    /// The node it ran on.
    pub node: Option<String>,
}

/// `KEY=VALUE` lines the batch script wrote to `job-ID/env`.
fn env_of(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The job's facts from its `scontrol` (or `sacct`) line and its env file.
pub fn slurm_job(l: &JobLine, index: usize, env_text: &str) -> SlurmJob {
    let env = env_of(env_text);
    let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
    SlurmJob {
        job_id: l.job_id.clone(),
        array_job_id: l.array_job_id.clone(),
        array_index: u32::try_from(index).ok(),
        node: get("node").or(l.node.clone()),
        gpus: get("gpus"),
        port: get("port").and_then(|p| p.parse().ok()),
        port_from: get("port_from"),
        restart_count: get("restart_count")
            .and_then(|r| r.parse().ok())
            .or(l.restarts),
        state: l.state.clone(),
        exit_code: l.exit_code,
        signal: l.signal,
        reason: l.reason.clone(),
        state_from: l.source.into(),
    }
}

/// The whole lines of a job's records file that are records, each with
/// `slurm` added; the job's own port leaves the config (svc-swap set it,
/// but it is the job's, not the grid's) unless the grid sweeps `port`.
pub fn tagged(text: &str, job: &SlurmJob, keys: &[String]) -> Vec<Value> {
    let whole = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    let slurm = serde_json::to_value(job).unwrap_or(Value::Null);
    whole
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("type").is_some_and(Value::is_string))
        .map(|mut v| {
            if !keys.iter().any(|k| k == "port") {
                if let Some(c) = v.get_mut("config").and_then(Value::as_object_mut) {
                    c.remove("port");
                }
            }
            v["slurm"] = slurm.clone();
            v
        })
        .collect()
}

/// How far the job got, for the failure record's reason.
fn progress(recs: &[Value]) -> String {
    let bench = |partial: bool| {
        recs.iter()
            .filter(|r| r["type"] == "bench" && r["partial"].as_bool().unwrap_or(false) == partial)
            .count()
    };
    match (bench(false), bench(true)) {
        (0, 0) => "before any level was measured".into(),
        (w, p) => format!("after {w} whole level(s) and {p} cut short"),
    }
}

/// The failure record for a job Slurm ended as `kind`.
fn failure(
    p: &Plan,
    index: usize,
    kind: FailureKind,
    job: &SlurmJob,
    recs: &[Value],
    log: &str,
) -> FailureRecord {
    let config = p.config(index);
    let why = match kind {
        FailureKind::Interrupted => "cancelled by sweep (interrupted)".to_string(),
        FailureKind::QueueTimeout => "still pending at --queue-timeout; cancelled".to_string(),
        _ => format!(
            "ended {}{}",
            job.state,
            job.reason
                .as_ref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ),
    };
    let node = job
        .node
        .as_deref()
        .map(|n| format!(" on {n}"))
        .unwrap_or_default();
    let reason = format!("Slurm job {}{node} {why} {}", job.job_id, progress(recs));
    let stage = match recs.iter().any(|r| r["type"] == "bench") {
        true => Stage::Bench,
        false => Stage::Swap,
    };
    let mut f = records::failure(
        "sweep-plan",
        SystemTime::now(),
        config,
        stage,
        kind,
        reason,
        None,
    );
    f.exit_code = job.exit_code;
    let lines: Vec<&str> = log.lines().collect();
    f.log_tail = lines[lines.len().saturating_sub(5)..]
        .iter()
        .map(|l| l.to_string())
        .collect();
    f.slurm = Some(job.clone());
    f
}

/// Where Slurm ended the job itself (cancel, node failure, preemption,
/// time limit, sweep's own cancel), it ends the server's step and the
/// tools one by one: loadgen may see the server go before its own signal
/// comes and record a crash of the config, and a tool the signal reaches
/// first records that it was interrupted. Either record is the job's end
/// seen from inside: it leaves `recs`, its reason goes into Slurm's
/// failure record (returned), so the config has one failure record, and
/// the level it cut stays.
fn drop_seen_ends(recs: &mut Vec<Value>, kind: FailureKind) -> Vec<String> {
    if matches!(kind, FailureKind::Oom | FailureKind::JobFailed) {
        return Vec::new(); // the server's own crash may be the cause
    }
    let mut seen = Vec::new();
    recs.retain(|r| {
        let inside = r["type"] == "failure"
            && matches!(r["kind"].as_str(), Some("crashed_mid_run" | "interrupted"));
        if inside {
            let tool = r["provenance"]["tool"].as_str().unwrap_or("loadgen");
            let why = r["reason"].as_str().unwrap_or_default();
            seen.push(format!("{tool}: {why}"));
        }
        !inside
    });
    seen
}

/// A failure record as the results file's JSON.
pub fn value_of(f: FailureRecord) -> Value {
    serde_json::to_value(Record::Failure(f)).unwrap_or(Value::Null)
}

/// Job `l`'s records (task `index`), each with its facts, and a failure
/// record where Slurm (or sweep, `ours`) ended it: what to append to the
/// results file.
pub fn collect(
    p: &Plan,
    l: &JobLine,
    index: usize,
    ours: Option<FailureKind>,
) -> (Collected, Vec<Value>) {
    let jd = format!("{}/job-{}", p.dir, l.job_id);
    let read = |f: &str| std::fs::read_to_string(format!("{jd}/{f}")).unwrap_or_default();
    let job = slurm_job(l, index, &read("env"));
    let mut recs = tagged(&read("records.jsonl"), &job, &p.grid.keys);
    let records = recs.len();
    let has_result = recs
        .iter()
        .any(|r| r["type"] == "bench" || r["type"] == "failure");
    let end = match ours {
        Some(k) => End::Failed(k),
        None => job::end_of(&l.state, has_result),
    };
    let mut failure_kind = None;
    if let End::Failed(kind) = end {
        let log =
            std::fs::read_to_string(format!("{}/job-{}.out", p.dir, l.job_id)).unwrap_or_default();
        let seen = drop_seen_ends(&mut recs, kind);
        let mut f = failure(p, index, kind, &job, &recs, &log);
        f.log_tail.extend(seen);
        recs.push(value_of(f));
        failure_kind = Some(kind);
    }
    let c = Collected {
        records,
        failure: failure_kind,
        node: job.node,
    };
    (c, recs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_records_get_its_facts_and_lose_a_torn_line() {
        let l = JobLine {
            job_id: "12".into(),
            array_job_id: Some("10".into()),
            tasks: vec![2],
            state: "COMPLETED".into(),
            exit_code: Some(0),
            signal: Some(0),
            ..JobLine::default()
        };
        let env = "node=n2\ngpus=0,1\nport=20012\nport_from=job_id\nrestart_count=0\nexits=0 0 0\n";
        let job = slurm_job(&l, 2, env);
        assert_eq!(job.node.as_deref(), Some("n2"));
        assert_eq!(job.gpus.as_deref(), Some("0,1"));
        assert_eq!((job.port, job.array_index), (Some(20012), Some(2)));
        let text = "{\"type\":\"bench\",\"config\":{\"k\":\"1\",\"port\":\"20012\"}}\nnot json\n{\"type\":\"bench\",\"con";
        let recs = tagged(text, &job, &["k".into()]);
        assert_eq!(recs.len(), 1, "the torn and non-record lines dropped");
        assert_eq!(recs[0]["config"], serde_json::json!({"k": "1"}));
        assert_eq!(recs[0]["slurm"]["job_id"], "12");
        assert_eq!(recs[0]["slurm"]["state"], "COMPLETED");
        let kept = tagged(text, &job, &["port".into()]);
        assert_eq!(kept[0]["config"]["port"], "20012", "a swept port stays");
        assert_eq!(progress(&recs), "after 1 whole level(s) and 0 cut short");
        assert_eq!(progress(&[]), "before any level was measured");
    }

    #[test]
    fn a_crash_loadgen_saw_as_slurm_ended_the_job_is_slurms_end() {
        let recs = || {
            vec![
                serde_json::json!({"type": "bench", "partial": true}),
                serde_json::json!({"type": "failure", "kind": "crashed_mid_run", "reason": "c=1: gone"}),
            ]
        };
        let mut r = recs();
        let seen = drop_seen_ends(&mut r, FailureKind::Cancelled);
        assert_eq!((r.len(), seen), (1, vec!["loadgen: c=1: gone".to_string()]));
        assert_eq!(r[0]["type"], "bench", "the cut level stays");
        let mut r = recs();
        assert!(drop_seen_ends(&mut r, FailureKind::Oom).is_empty());
        assert_eq!(r.len(), 2, "out of memory: the crash may be the cause");
    }

    #[test]
    fn a_tool_interrupted_by_slurms_cancel_leaves_one_failure_record() {
        let mut r = vec![serde_json::json!({
            "type": "failure", "kind": "interrupted", "reason": "interrupted after 0.1s",
            "provenance": {"tool": "wait-ready"}
        })];
        let seen = drop_seen_ends(&mut r, FailureKind::Interrupted);
        assert!(r.is_empty(), "{r:?}");
        assert_eq!(seen, ["wait-ready: interrupted after 0.1s"]);
    }
}
