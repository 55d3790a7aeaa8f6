//! `sweep --validate-on FILE [--slo TERMS]`: at the end, the pick (and the
//! `--schedule` beside it, when it was measured whole) is applied, waited
//! for, and the trace FILE replayed against it once more (`loadgen --trace
//! FILE --slo TERMS`). Its records go into the results file marked with a
//! `validation` object (`sweep-plan validation`), which keeps them out of
//! every cell (summarize) and every config's state (results.rs): they
//! never change the pick. summarize reports them as "validated on FILE".
//!
//! The file is checked as loadgen will read it (`sweepkit::trace`) before
//! the first stop (sweep/checks.rs), so a bad trace costs no sweep.

use serde_json::{json, Value};

use super::swaps::{self, Applied, End, Inputs, Swap, Validate};
use crate::results::State;
use crate::schedule::{self, RecordError};

/// The first answer of an end with `--validate-on`: the pick's swap, else
/// the schedule's, else the rest of the end.
pub fn start(i: &Inputs<'_>, v: &Validate) -> Result<End, RecordError> {
    match i.winner.as_ref() {
        Some((path, _)) if i.summarize_exit == sweepkit::exit::OK => Ok(swap(
            format!("validating on {}: applying summarize's pick", v.file),
            swaps::pick_words(i, path),
            Vec::new(),
            Swap::PickToValidate,
        )),
        _ => {
            let mut e = schedule_or_rest(i, v, Applied::Nothing)?;
            e.warning = join(
                format!(
                    "--validate-on: summarize picked nothing (exit {}); no pick to validate",
                    i.summarize_exit
                ),
                &e.warning,
            );
            Ok(e)
        }
    }
}

/// The answer after a validation step `after` ended with `exits`.
pub fn after(
    i: &Inputs<'_>,
    v: &Validate,
    after: Swap,
    exits: [u8; 2],
) -> Result<End, RecordError> {
    let ok = exits == [sweepkit::exit::OK; 2];
    let (of, next_step) = match after {
        Swap::PickToValidate | Swap::ValidatedPick => ("pick", Swap::ValidatedPick),
        _ => ("schedule", Swap::ValidatedSchedule),
    };
    match after {
        Swap::PickToValidate | Swap::ScheduleToValidate if ok => Ok(End {
            tag: "end",
            action: "validate",
            line: format!("validating on {}: replaying it against the {of}", v.file),
            to_load: v.load.clone(),
            mark: mark_words(of, v, &replayed_config(i, of)),
            again: again(next_step),
            ..End::default()
        }),
        Swap::PickToValidate | Swap::ScheduleToValidate => {
            let applied = Applied::Nothing;
            let mut e = match after {
                Swap::PickToValidate => schedule_or_rest(i, v, applied)?,
                _ => rest(i, applied)?,
            };
            let why = format!(
                "--validate-on: the {of} was not validated: its swap failed (svc-swap exit {}, wait-ready exit {})",
                exits[0], exits[1]
            );
            e.warning = join(why, &e.warning);
            Ok(e)
        }
        _ => {
            let mut e = match after {
                Swap::ValidatedPick => schedule_or_rest(i, v, Applied::Pick)?,
                _ => rest(i, Applied::Schedule)?,
            };
            if !ok {
                let why = format!(
                    "--validate-on: the {of}'s replay of {} failed (loadgen exit {}, sweep-plan validation exit {}); see its records",
                    v.file, exits[0], exits[1]
                );
                e.warning = join(why, &e.warning);
            }
            Ok(e)
        }
    }
}

/// The config the replay of `of` runs against, as `--config`'s JSON.
fn replayed_config(i: &Inputs<'_>, of: &str) -> Value {
    match (of, i.schedule) {
        ("schedule", Some(server)) => json!({ crate::results::SCHEDULE_KEY: server }),
        _ => i
            .winner
            .as_ref()
            .map(|(_, sum)| sum["best_config"].clone())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({})),
    }
}

fn mark_words(of: &str, v: &Validate, config: &Value) -> Vec<String> {
    let mut w = vec![
        "--of".to_string(),
        of.to_string(),
        "--trace".into(),
        v.file.clone(),
        "--config".into(),
        config.to_string(),
    ];
    if let Some(s) = &v.slo {
        w.extend(["--slo".to_string(), s.clone()]);
    }
    w
}

fn join(first: String, then: &str) -> String {
    match then.is_empty() {
        true => first,
        false => format!("{first}; {then}"),
    }
}

fn again(s: Swap) -> Vec<String> {
    use clap::ValueEnum;
    let name = s.to_possible_value().expect("named").get_name().to_string();
    vec!["--after".into(), name]
}

fn swap(line: String, to_swap: Vec<String>, to_ready: Vec<String>, after: Swap) -> End {
    End {
        tag: "end",
        action: "swap",
        line,
        to_swap,
        to_ready,
        again: again(after),
        ..End::default()
    }
}

/// The schedule's swap when the sweep measured it whole, else the rest.
fn schedule_or_rest(i: &Inputs<'_>, v: &Validate, applied: Applied) -> Result<End, RecordError> {
    let Some(server) = i.schedule else {
        return rest(i, applied);
    };
    if schedule::step(i.lines, server, true).state != State::Complete {
        return rest(i, applied);
    }
    let (to_swap, to_ready) = swaps::schedule_words(i, server)?;
    Ok(swap(
        format!("validating on {}: applying the {server} schedule", v.file),
        to_swap,
        to_ready,
        Swap::ScheduleToValidate,
    ))
}

/// After the validations: --keep-winner's winner (no swap when it stands
/// applied already), else the original config.
fn rest(i: &Inputs<'_>, applied: Applied) -> Result<End, RecordError> {
    if !i.keep_winner {
        return Ok(swaps::original(i, 0));
    }
    let winner = swaps::winning(i);
    if winner != Applied::Nothing && winner == applied {
        return Ok(swaps::done(String::new(), sweepkit::exit::OK));
    }
    swaps::winner(i)
}

#[cfg(test)]
#[path = "validate_on_tests.rs"]
mod tests;
