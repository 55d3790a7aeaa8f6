//! What a record says about the Slurm job its config ran in (`sweep
//! --slurm`): the job, its node and GPUs, the port it served on and how
//! Slurm ended it.

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// One Slurm job (one array task) of a sweep, as its batch script saw its
/// allocation and as slurmctld ended it.
#[skip_serializing_none]
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct SlurmJob {
    /// The task's own job id (`JobId`, `SLURM_JOB_ID`).
    pub job_id: String,
    /// The array job it is a task of (`ArrayJobId`).
    pub array_job_id: Option<String>,
    /// Its index in the array (`SLURM_ARRAY_TASK_ID`): the config's place
    /// in the grid, from 1.
    pub array_index: Option<u32>,
    /// The node the batch script ran on (`SLURMD_NODENAME`).
    pub node: Option<String>,
    /// The GPUs the allocation gave, as the batch step's
    /// `CUDA_VISIBLE_DEVICES` numbers them (the node's own indices; from 0
    /// where cgroups constrain the devices); absent without a gres.
    pub gpus: Option<String>,
    /// The server's port in the job (svc-swap set it; it is not in
    /// `config`).
    pub port: Option<u16>,
    /// Where the port came from: `job_id` (derived from SLURM_JOB_ID, so
    /// two jobs on one node differ) or `probed` (that port was taken; the
    /// next free one up).
    pub port_from: Option<String>,
    /// Times Slurm requeued the job (`SLURM_RESTART_COUNT`, `Restarts`).
    pub restart_count: Option<u32>,
    /// The job's end as Slurm says it (`JobState`): COMPLETED, FAILED,
    /// TIMEOUT, CANCELLED, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, ...; or
    /// sweep's own EXPIRED: slurmctld purged the job (`MinJobAge`) before
    /// sweep read its end and sacct had none (its records decide).
    pub state: String,
    /// The batch script's exit status (`ExitCode=STATUS:SIGNAL`).
    pub exit_code: Option<i32>,
    /// The signal that ended the batch script, 0 for none.
    pub signal: Option<i32>,
    /// Slurm's `Reason` when it gives one (`NodeDown`, `TimeLimit`).
    pub reason: Option<String>,
    /// Where the state was read: `scontrol` (while slurmctld keeps the
    /// job), `sacct` (after, where accounting keeps it) or `sweep` (EXPIRED).
    pub state_from: String,
}
