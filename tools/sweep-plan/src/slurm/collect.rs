//! One ended job's records into the results file. The job wrote its
//! records to its own file in the shared folder; once Slurm says the job
//! ended, nothing writes that file any more, so this side reads it whole,
//! drops a torn last line (a job killed mid-write), adds the job's facts
//! (`slurm`: job id, array index, node, GPUs, port, Slurm's state) to
//! each record; the driver appends them in one write to the results
//! file, which only this side writes. Where Slurm ended the job (TIMEOUT,
//! CANCELLED, NODE_FAIL, ...) before its pipe was done, a failure record
//! of that kind follows; a config run again leaves its bench records out
//! ([`set_aside`]), so each config has one measurement.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::Value;
use sweepkit::records::{self, Config, FailureKind, FailureRecord, Record, SlurmJob, Stage};

use super::job::{self, End, JobLine};
use super::plan::Plan;

/// A task of an array, as the job knows it: its array task id and the
/// config it runs (a grid's, or the schedule step's).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRef {
    pub task: usize,
    pub config: Config,
}

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

/// `KEY=VALUE` lines the batch script wrote to `job-ID/env` (a key
/// written twice: its last value).
pub fn env_of(text: &str) -> BTreeMap<String, String> {
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

/// Whether the job's pipe ran to its end on its own: loadgen exited 0
/// (it does only once it measured every level; a signal makes it exit
/// 130) and no flush ahead of the time limit cut it. What ended the job
/// after that (a node failure as the server stopped, a cancel) takes
/// nothing from the measurement.
pub fn pipe_whole(env: &BTreeMap<String, String>) -> bool {
    let loadgen = env
        .get("exits")
        .and_then(|e| e.split_whitespace().last())
        .map(str::to_string);
    loadgen.as_deref() == Some("0") && !env.contains_key("flushed")
}

/// A server that could not bind its port (another process took it on
/// the node between the job's probe and the bind) failed for the node's
/// sake, not the config's: its failure record becomes the transport's,
/// so the config runs again.
fn port_clash_is_transport(recs: &mut [Value], job: &SlurmJob) {
    for r in recs.iter_mut().filter(|r| r["type"] == "failure") {
        let said = format!("{} {}", r["reason"], r["log_tail"]).to_ascii_lowercase();
        if !["address already in use", "eaddrinuse", "errno 98"]
            .iter()
            .any(|w| said.contains(w))
        {
            continue;
        }
        let port = job.port.map(|p| format!(" {p}")).unwrap_or_default();
        let node = job.node.as_deref().unwrap_or("its node");
        r["class"] = "transport".into();
        r["reason"] = format!(
            "port{port} was taken on {node} as the server started (not the config's fault): {}",
            r["reason"].as_str().unwrap_or_default()
        )
        .into();
    }
}

/// Records of a job whose config runs again: its bench records leave
/// (they stay in the job's own records file, `kept_in`), so the config
/// is measured once; its failure records, of no result, stay, the last
/// (sweep's, for Slurm's end) saying how many left.
pub fn set_aside(recs: Vec<Value>, kept_in: &str) -> Vec<Value> {
    let n = recs.iter().filter(|r| r["type"] == "bench").count();
    let mut kept: Vec<Value> = recs.into_iter().filter(|r| r["type"] != "bench").collect();
    if let (true, Some(last)) = (n > 0, kept.last_mut()) {
        let why = last["reason"].as_str().unwrap_or_default().to_string();
        last["reason"] = format!(
            "{why}; its {n} bench record(s) left out, as the config runs again (they stay in {kept_in})"
        )
        .into();
    }
    kept
}

/// The failure record for a job Slurm ended as `kind`.
fn failure(
    config: Config,
    kind: FailureKind,
    job: &SlurmJob,
    recs: &[Value],
    log: &str,
) -> FailureRecord {
    let why = match kind {
        FailureKind::Interrupted => "cancelled by sweep (interrupted)".to_string(),
        FailureKind::QueueTimeout => {
            "still pending at --queue-timeout; cancelled by sweep".to_string()
        }
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

/// Job `l`'s records (task `t`), each with its facts, and a failure
/// record where Slurm (or sweep, `ours`) ended it before its pipe was
/// done: what to append to the results file.
pub fn collect(
    p: &Plan,
    l: &JobLine,
    t: &TaskRef,
    ours: Option<FailureKind>,
) -> (Collected, Vec<Value>) {
    let jd = format!("{}/job-{}", p.dir, l.job_id);
    let read = |f: &str| std::fs::read_to_string(format!("{jd}/{f}")).unwrap_or_default();
    let env = read("env");
    let job = slurm_job(l, t.task, &env);
    let mut recs = tagged(&read("records.jsonl"), &job, &p.grid.keys);
    port_clash_is_transport(&mut recs, &job);
    let records = recs.len();
    let has_result = recs
        .iter()
        .any(|r| r["type"] == "bench" || r["type"] == "failure");
    let end = match ours {
        _ if has_result && pipe_whole(&env_of(&env)) => End::Records,
        Some(k) => End::Failed(k),
        None => job::end_of(&l.state, has_result),
    };
    let mut failure_kind = None;
    if let End::Failed(kind) = end {
        let log =
            std::fs::read_to_string(format!("{}/job-{}.out", p.dir, l.job_id)).unwrap_or_default();
        let seen = drop_seen_ends(&mut recs, kind);
        let mut f = failure(t.config.clone(), kind, &job, &recs, &log);
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

    /// Regression (issue 47): a node failed as a job's server stopped,
    /// after loadgen had measured every level: its records stood and the
    /// config was submitted again, measured twice. A pipe that ran to its
    /// end decides; one a signal cut does not.
    #[test]
    fn a_pipe_that_ran_to_its_end_decides_whatever_ended_the_job() {
        let env = |t: &str| env_of(t);
        assert!(pipe_whole(&env("node=n1\nexits=0 0 0\n")));
        assert!(!pipe_whole(&env("node=n1\n")), "the pipe never ended");
        assert!(!pipe_whole(&env("exits=0 0 130\n")), "loadgen interrupted");
        assert!(
            !pipe_whole(&env("flushed=1\nexits=0 0 0\n")),
            "cut at the limit"
        );
        assert!(
            !pipe_whole(&env("exits=25 4 4\n")),
            "a failed config: its record decides"
        );
    }

    /// Regression (issue 47): a server that lost its port to another job
    /// of the node was the config's own crashed_at_load, never retried.
    #[test]
    fn a_port_taken_as_the_server_started_is_the_transport_s() {
        let job = SlurmJob {
            port: Some(20017),
            node: Some("n1".into()),
            ..SlurmJob::default()
        };
        let mut recs = vec![
            serde_json::json!({"type": "failure", "kind": "crashed_at_load", "class": "config",
                "reason": "exited 1 while loading",
                "log_tail": ["OSError: [Errno 98] Address already in use"]}),
            serde_json::json!({"type": "failure", "kind": "crashed_at_load", "class": "config",
                "reason": "CUDA out of memory"}),
        ];
        port_clash_is_transport(&mut recs, &job);
        assert_eq!(recs[0]["class"], "transport");
        let why = recs[0]["reason"].as_str().unwrap();
        assert!(
            why.starts_with("port 20017 was taken on n1 as the server started"),
            "{why}"
        );
        assert_eq!(recs[1]["class"], "config", "the config's own crash");
    }

    #[test]
    fn a_config_run_again_leaves_its_bench_records_out() {
        let recs = vec![
            serde_json::json!({"type": "bench", "partial": false}),
            serde_json::json!({"type": "bench", "partial": true}),
            serde_json::json!({"type": "failure", "kind": "node_fail", "reason": "Slurm job 7 on n1 ended NODE_FAIL"}),
        ];
        let kept = set_aside(recs, "/r.slurm/job-7/records.jsonl");
        assert_eq!(kept.len(), 1);
        assert!(kept[0]["reason"]
            .as_str()
            .unwrap()
            .ends_with("; its 2 bench record(s) left out, as the config runs again (they stay in /r.slurm/job-7/records.jsonl)"));
        let none = set_aside(
            vec![serde_json::json!({"type": "failure", "reason": "r"})],
            "x",
        );
        assert_eq!(none[0]["reason"], "r");
    }
}
