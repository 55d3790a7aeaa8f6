//! `sweep --slurm`: each config of the grid one Slurm job (a task of one
//! array), the server, wait-ready and loadgen inside its allocation
//! ([`script`]); this side submits, watches `scontrol`, appends each
//! ended job's records to the results file with the job's facts
//! ([`collect`]), classifies Slurm's ends ([`job`]) and submits again
//! what a node failure or a cancel took ([`driver`]). Slurm is the job
//! engine here as GNU parallel is for `--hosts`: the throttle is the
//! array's `%N`, the queue is Slurm's. Before it submits, the sweep takes
//! the look at the spec every path takes (preflight/look.rs) and keeps the
//! origin record; `--resume` takes over what an earlier sweep left in the
//! queue ([`adopt`]); the API key reaches the jobs in a file of the
//! user's own ([`secrets`]). `--adaptive` submits each config the search
//! decides on ([`search`]); `--schedule` derives the schedule after the
//! configs and runs it as one more job ([`schedule_step`]).

pub mod adopt;
pub mod client;
pub mod collect;
pub mod driver;
pub mod job;
pub mod plan;
pub mod schedule_step;
pub mod script;
pub mod search;
pub mod secrets;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::anyhow;
use sweepkit::diag;
use sweepkit::exit::Exit;

use crate::origin::{self, Keep};
use crate::preflight::look::Seen;
use driver::{say, Driver};
use plan::Plan;

/// `sweep --slurm`: run plan `p` to its end, the look at its spec `seen`
/// taken; the exit status. Nothing is written before the controller
/// answers; the table is printed at the end unless sbatch refused the
/// first submission (nothing of this run to show).
pub fn sweep(p: &Plan, seen: &Seen, started: SystemTime) -> Result<u8, Exit> {
    client::reachable()?;
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    // SIGINT, SIGTERM and SIGHUP (a lost SSH session): cancel, collect.
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::SeqCst));
    let k = Keep {
        results: &p.results,
        copy: None,
        say: None,
    };
    origin::keep(&seen.swap, &seen.raw, &k, &p.grid.keys, started)?;
    let mut d = Driver::new(p, stop)?;
    if p.resume || p.search.is_some() {
        d.adopt()?;
    }
    secrets::stage(&p.dir)?;
    // The search decides its own configs, one batch at a time.
    let first = match p.search {
        Some(_) => Vec::new(),
        None => d.pending(),
    };
    let what = match p.search {
        Some(_) => "the adaptive search picks them".to_string(),
        None => format!("{} to run", first.len()),
    };
    say(
        p,
        &format!(
            "{} config(s) as Slurm jobs ({what}); results: {}",
            p.grid.points.len(),
            p.results
        ),
    );
    let ran = d.run(&first);
    secrets::remove(&p.dir);
    ran?;
    let (done, code) = d.outcome();
    say(p, &done);
    if let Some((_, why)) = d.stopped() {
        diag::error("sweep", &anyhow!("{why}"));
    }
    if !d.refused_at_once() {
        let prog = p.summarize.as_deref().unwrap_or("summarize");
        crate::summarize::table(prog, &p.sum_args, p.report.as_deref(), &p.results, p.quiet);
    }
    Ok(code)
}
