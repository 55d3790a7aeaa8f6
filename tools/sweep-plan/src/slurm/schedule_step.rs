//! `sweep --slurm --schedule SERVER`: after the configs, the schedule is
//! derived as sweep's own loop derives it (`summarize --schedule SERVER`
//! over the results file, its record appended there, so a resumed sweep
//! applies that one again) and run as one more job, array task
//! [`super::plan::SCHEDULE_TASK`], whose server gets it from
//! `svc-swap --apply-from` the record [`step::schedule_step`] wrote to the
//! sweep's shared folder: the same words sweep's loop runs.

use sweepkit::exit::Exit;

use super::plan::Plan;
use crate::results::Line;
use crate::step::{self, Step};

/// The schedule step's answer for the results file's `lines`: derive,
/// run (its words in the step), done, or fail; `derived`: the exit
/// status of the derivation just run.
pub fn step(p: &Plan, server: &str, lines: &[Line], derived: Option<u8>) -> Result<Step, Exit> {
    let mut st = Step::new();
    step::schedule_step(
        &mut st, lines, server, p.resume, derived, &p.results, &p.dir,
    )?;
    Ok(st)
}

/// Run `summarize --schedule SERVER` over the results file: its exit
/// status and the records it printed (summarize's reasons go to stderr,
/// as in sweep's loop).
pub fn derive(p: &Plan, server: &str) -> Result<(u8, String), Exit> {
    let prog = p.summarize.as_deref().unwrap_or("summarize");
    crate::summarize::derive(prog, server, &p.schedule_args, &p.sum_args, &p.results)
}
