//! A Slurm job as `scontrol show job -o` prints it (one line per job, one
//! per array task once it has started; the tasks still pending share one
//! line whose `ArrayTaskId` is a range), and what its end means for the
//! sweep. Slurm 22.05's states: src/common/slurm_protocol_defs.c,
//! `job_state_string`; `scontrol show job` prints `JobState=`, `Reason=`,
//! `ExitCode=STATUS:SIGNAL`, `Restarts=`, `BatchHost=` (src/api/job_info.c,
//! `slurm_sprint_job_info`).

use std::collections::BTreeMap;

use sweepkit::records::FailureKind;

/// One line of `scontrol show job -o`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobLine {
    pub job_id: String,
    pub array_job_id: Option<String>,
    /// The array tasks this line stands for (one, or a pending range).
    pub tasks: Vec<u32>,
    pub state: String,
    pub reason: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub node: Option<String>,
    pub restarts: Option<u32>,
    /// Where the state was read: `scontrol`, `sacct`, or `sweep` (purged
    /// unread: [`EXPIRED`]).
    pub source: &'static str,
}

impl JobLine {
    /// This line is task `index` of array `array`: the task's own line,
    /// or the job's own line when it holds no tasks.
    pub fn is_task(&self, array: &str, index: usize) -> bool {
        self.tasks.contains(&(index as u32)) || (self.tasks.is_empty() && self.job_id == array)
    }
}

/// `Key=Value` words of one line; a value runs to the next space (the
/// fields read here never hold one).
fn fields(line: &str) -> BTreeMap<&str, &str> {
    line.split_whitespace()
        .filter_map(|w| w.split_once('='))
        .collect()
}

/// `3`, `2-4%2`, `1,3,5-6`: the task ids (the `%N` throttle dropped).
pub fn task_ids(spec: &str) -> Vec<u32> {
    let spec = spec.trim_matches(['[', ']']);
    let spec = spec.split('%').next().unwrap_or("");
    let mut out = Vec::new();
    for part in spec.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
                    out.extend(a..=b);
                }
            }
            None => out.extend(part.parse::<u32>().ok()),
        }
    }
    out
}

/// Slurm's `ExitCode` (`STATUS:SIGNAL`, as scontrol and sacct print it).
fn exit_pair(code: &str) -> (Option<i32>, Option<i32>) {
    code.split_once(':')
        .map_or((None, None), |(c, s)| (c.parse().ok(), s.parse().ok()))
}

/// Every job line of `scontrol show job -o` output.
pub fn parse(text: &str) -> Vec<JobLine> {
    text.lines()
        .filter_map(|l| {
            let f = fields(l);
            let job_id = f.get("JobId")?.to_string();
            let given = |v: &&str| !v.is_empty() && *v != "None" && *v != "(null)";
            let (code, sig) = f.get("ExitCode").map_or((None, None), |e| exit_pair(e));
            Some(JobLine {
                array_job_id: f.get("ArrayJobId").map(|s| s.to_string()),
                tasks: f
                    .get("ArrayTaskId")
                    .map(|t| task_ids(t))
                    .unwrap_or_default(),
                state: f.get("JobState").unwrap_or(&"UNKNOWN").to_string(),
                reason: f.get("Reason").copied().filter(given).map(String::from),
                exit_code: code,
                signal: sig,
                node: f
                    .get("BatchHost")
                    .or(f.get("NodeList"))
                    .copied()
                    .filter(given)
                    .map(String::from),
                restarts: f.get("Restarts").and_then(|r| r.parse().ok()),
                source: "scontrol",
                job_id,
            })
        })
        .collect()
}

/// sweep's own word (no Slurm state) for a job whose record slurmctld
/// purged (`MinJobAge`) before sweep read its end, when sacct has none
/// either (accounting off): its records say what happened, if any.
pub const EXPIRED: &str = "EXPIRED";

/// The fields [`parse_sacct`] reads, in order, for `sacct --format`.
pub const SACCT_FORMAT: &str = "JobIDRaw,JobID,State,ExitCode,NodeList";

/// `sacct -n -P -X --format SACCT_FORMAT` lines as job lines: `JobID` is
/// `ARRAY_TASK` for an array task (`6_1`, JobIDRaw `7`), `State` may say
/// who cancelled (`CANCELLED by 0`), `ExitCode` is `STATUS:SIGNAL`.
pub fn parse_sacct(text: &str) -> Vec<JobLine> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('|').collect();
            let [raw, id, state, code, nodes] = f[..] else {
                return None;
            };
            let (array, task) = id
                .split_once('_')
                .map_or((None, None), |(a, t)| (Some(a), Some(t)));
            let (exit_code, signal) = exit_pair(code);
            Some(JobLine {
                job_id: raw.to_string(),
                array_job_id: array.map(String::from),
                tasks: task.map(task_ids).unwrap_or_default(),
                state: state.split_whitespace().next()?.to_string(),
                reason: Some("read from sacct: slurmctld had purged the job's record".into()),
                exit_code,
                signal,
                node: Some(nodes)
                    .filter(|n| !n.is_empty() && *n != "None assigned")
                    .map(String::from),
                restarts: None,
                source: "sacct",
            })
        })
        .collect()
}

/// How a job's end bears on its config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// Not ended yet (PENDING, RUNNING, COMPLETING, REQUEUED, ...).
    Active,
    /// Its records say what happened (COMPLETED, FAILED with records).
    Records,
    /// Slurm ended it: a failure record of this kind joins its records.
    Failed(FailureKind),
}

/// What Slurm's state `state` makes of a job that wrote `has_result`
/// (a bench or failure record of the tools).
pub fn end_of(state: &str, has_result: bool) -> End {
    match state {
        "COMPLETED" if has_result => End::Records,
        "FAILED" if has_result => End::Records,
        "COMPLETED" | "FAILED" => End::Failed(FailureKind::JobFailed),
        "TIMEOUT" | "DEADLINE" => End::Failed(FailureKind::TimeLimit),
        "CANCELLED" => End::Failed(FailureKind::Cancelled),
        "OUT_OF_MEMORY" => End::Failed(FailureKind::Oom),
        "NODE_FAIL" | "BOOT_FAIL" => End::Failed(FailureKind::NodeFail),
        "PREEMPTED" => End::Failed(FailureKind::Preempted),
        EXPIRED if has_result => End::Records,
        // Nothing written and nothing known: run it again.
        EXPIRED => End::Failed(FailureKind::Cancelled),
        _ => End::Active,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as Slurm 22.05.8's `scontrol show job -o` printed them on
    /// the test cluster (trimmed of fields not read).
    const SHOWN: &str = "\
JobId=7 ArrayJobId=6 ArrayTaskId=1 JobName=sweep UserId=root(0) JobState=TIMEOUT Reason=TimeLimit Dependency=(null) Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 NodeList=n1 BatchHost=n1
JobId=6 ArrayJobId=6 ArrayTaskId=3-4%2 JobName=sweep JobState=PENDING Reason=JobArrayTaskLimit Restarts=0 ExitCode=0:0 NodeList=(null)
JobId=9 JobName=wrap JobState=NODE_FAIL Reason=NodeDown Restarts=0 ExitCode=0:0 NodeList=n2 BatchHost=n2
";

    #[test]
    fn scontrol_lines_read_as_jobs_and_task_ranges() {
        let j = parse(SHOWN);
        assert_eq!(j.len(), 3);
        assert_eq!(j[0].job_id, "7");
        assert_eq!(j[0].array_job_id.as_deref(), Some("6"));
        assert_eq!(j[0].tasks, [1]);
        assert_eq!(j[0].state, "TIMEOUT");
        assert_eq!(j[0].reason.as_deref(), Some("TimeLimit"));
        assert_eq!((j[0].exit_code, j[0].signal), (Some(0), Some(15)));
        assert_eq!(j[0].node.as_deref(), Some("n1"));
        assert_eq!(j[1].tasks, [3, 4]);
        assert_eq!(j[1].node, None);
        assert_eq!(j[2].array_job_id, None);
        assert!(j[2].tasks.is_empty());
        assert_eq!(task_ids("1,3,5-6%1"), [1, 3, 5, 6]);
        assert_eq!(task_ids("[2-3]"), [2, 3]);
    }

    #[test]
    fn every_end_is_classified() {
        use FailureKind as K;
        assert_eq!(end_of("RUNNING", false), End::Active);
        assert_eq!(end_of("COMPLETING", true), End::Active);
        assert_eq!(end_of("COMPLETED", true), End::Records);
        assert_eq!(end_of("FAILED", true), End::Records);
        assert_eq!(end_of("FAILED", false), End::Failed(K::JobFailed));
        assert_eq!(end_of("TIMEOUT", true), End::Failed(K::TimeLimit));
        assert_eq!(end_of("CANCELLED", true), End::Failed(K::Cancelled));
        assert_eq!(end_of("OUT_OF_MEMORY", false), End::Failed(K::Oom));
        assert_eq!(end_of("NODE_FAIL", false), End::Failed(K::NodeFail));
        assert_eq!(end_of("PREEMPTED", true), End::Failed(K::Preempted));
        assert_eq!(end_of(EXPIRED, true), End::Records);
        assert_eq!(end_of(EXPIRED, false), End::Failed(K::Cancelled));
        assert_eq!(end_of("UNKNOWN", false), End::Active);
    }

    /// `sacct -n -P -X -j 6 --format JobIDRaw,JobID,State,ExitCode,NodeList`
    /// as Slurm 22.05 prints an array's tasks (sacct(1): `-P` separates
    /// fields by `|`; a cancelled job's State names the uid).
    #[test]
    fn sacct_lines_read_as_jobs() {
        let j = parse_sacct("7|6_1|COMPLETED|0:0|n1\n8|6_2|CANCELLED by 0|0:15|n2\n6|6_[3-4%2]|PENDING|0:0|None assigned\n9|9|NODE_FAIL|0:0|n2\nbad line\n");
        assert_eq!(j.len(), 4);
        assert_eq!(
            (j[0].job_id.as_str(), j[0].array_job_id.as_deref()),
            ("7", Some("6"))
        );
        assert_eq!(
            (j[0].tasks.as_slice(), j[0].state.as_str()),
            (&[1][..], "COMPLETED")
        );
        assert_eq!(j[1].state, "CANCELLED");
        assert_eq!((j[1].exit_code, j[1].signal), (Some(0), Some(15)));
        assert_eq!(j[1].node.as_deref(), Some("n2"));
        assert_eq!(j[2].tasks, [3, 4]);
        assert_eq!(j[2].node, None);
        assert_eq!((j[3].array_job_id.as_deref(), j[3].tasks.len()), (None, 0));
    }
}
