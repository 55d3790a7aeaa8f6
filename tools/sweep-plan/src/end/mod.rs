//! `sweep-plan end`: how a sweep leaves its server, one swap at a time.
//! sweep(1) asks, runs the swap it names (`svc-swap | wait-ready`), and
//! asks again with that swap's exit statuses, until the answer is `done`:
//!
//! 0. With `--validate-on`: the pick (and the schedule) applied and a
//!    trace replayed against each first (validate_on.rs).
//! 1. With `--keep-winner`: the schedule when it was measured whole and
//!    summarize's summary has it winning by the objective (schedule.rs
//!    `keep`), else summarize's pick (`--apply-from` the summary, the
//!    schedule's own flags undone); when summarize picked nothing, or the
//!    winner's swap did not end with a ready server, a warning and 2.
//! 2. The original config (the origin record's words, the schedule's own
//!    flags undone), as it was even if pre-flight would balk. A transport
//!    failure (svc-swap's exit 21: SSH lost) says nothing about the
//!    config: it is tried again, up to `--retries` times, backing off.
//!
//! `done` carries the error and exit status 42 when the last swap did not
//! end with a ready server: the one the sweep documents.
//!
//! After an interrupt (`--interrupted`) the restore's wait is bounded by
//! the file's first measured time to ready plus a margin ([`swaps::bound_s`]),
//! not the full --ready-timeout the hopeless wait just used; a second
//! Ctrl-C (wait-ready's 130) ends it, saying the original config is back
//! and still loading.

pub mod swaps;
pub mod validate_on;

use crate::schedule::RecordError;
use swaps::{End, Inputs, Swap};

/// The next swap of the end after `after` (try `attempt`) ended with
/// `exits`: with --validate-on the pick (and the schedule) applied and
/// replayed first, then the winner or the original.
pub fn next(
    i: &Inputs<'_>,
    after: Option<Swap>,
    attempt: usize,
    exits: [u8; 2],
) -> Result<End, RecordError> {
    if let Some(v) = &i.validate {
        match after {
            None => return validate_on::start(i, v),
            Some(
                s @ (Swap::PickToValidate
                | Swap::ValidatedPick
                | Swap::ScheduleToValidate
                | Swap::ValidatedSchedule),
            ) => return validate_on::after(i, v, s, exits),
            _ => {}
        }
    }
    swaps::next(i, after, attempt, exits)
}
