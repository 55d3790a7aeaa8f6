//! `sweep --slurm`: each config of the grid one Slurm job (a task of one
//! array), the server, wait-ready and loadgen inside its allocation
//! ([`script`]); this side submits, watches `scontrol`, appends each
//! ended job's records to the results file with the job's facts
//! ([`collect`]), classifies Slurm's ends ([`job`]) and submits again
//! what a node failure or a cancel took ([`driver`]). Slurm is the job
//! engine here as GNU parallel is for `--hosts`: the throttle is the
//! array's `%N`, the queue is Slurm's. `--adaptive` submits each config
//! the search decides on ([`search`]); `--schedule` derives the
//! schedule after the configs and runs it as one more job
//! ([`schedule_step`]).

pub mod client;
pub mod collect;
pub mod driver;
pub mod job;
pub mod plan;
pub mod schedule_step;
pub mod script;
pub mod search;
