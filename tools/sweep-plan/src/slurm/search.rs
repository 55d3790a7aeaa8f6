//! `sweep --slurm --adaptive`: the search's next configs, decided as
//! sweep's own loop decides them (summarize's weighted scores of the
//! whole results file, then [`crate::search`]), asked only when no job
//! of the sweep is in flight. Exploration asks for one value at a time;
//! a round of repeats (successive halving's close calls) asks for
//! several, which run at once, up to --max-jobs.

use std::collections::BTreeMap;

use sweepkit::exit;
use sweepkit::exit::Exit;

use super::plan::Plan;
use crate::results::{self, Line};
use crate::search::answer;
use crate::step;

/// What the search asks of the driver.
#[derive(Debug)]
pub enum Next {
    /// Submit these configs (grid indexes).
    Run(Vec<usize>),
    /// The search is over: these records (skipped values) to append,
    /// how many values it never tried.
    Done(Vec<serde_json::Value>, usize),
    /// Stop the sweep: exit status and why.
    Fail(u8, String),
}

/// A config this sweep already ran that still has no result: the search
/// would ask for it again and again; stop instead (`fail`).
fn no_result(p: &Plan, lines: &[Line], i: usize) -> Option<Next> {
    let mut st = step::Step::default();
    step::transport_stop(&mut st, &p.grid, lines, i, p.retries);
    if st.action == "fail" {
        return Some(Next::Fail(st.exit, st.error));
    }
    let pt = &p.grid.points[i - 1];
    let state = results::state_of(lines, |c| pt.matches(c));
    (!state.is_done()).then(|| {
        Next::Fail(
            exit::FAILURE,
            format!(
                "{}: its job left no result ({}); stopping the search (the file resumes)",
                pt.label(),
                state.word()
            ),
        )
    })
}

/// The search's next step for `p` from the results file as it stands
/// (`all`, its text; `lines`, its records);
/// `tries`: how often this sweep submitted each config. Says the lines
/// sweep's loop says (`next: ...`, the search's end and cost) to `say`.
pub fn next(
    p: &Plan,
    tries: &BTreeMap<usize, usize>,
    (all, lines): (&str, &[Line]),
    started: std::time::SystemTime,
    say: &mut dyn FnMut(&str),
) -> Result<Next, Exit> {
    let Some((grid, knobs)) = &p.search else {
        return Ok(Next::Run(Vec::new()));
    };
    let prog = p.summarize.as_deref().unwrap_or("summarize");
    let scores = crate::summarize::scores(prog, &p.sum_args, &p.results)?;
    let s = crate::search::search(grid, knobs, &scores, (&p.results, all, lines), false)?;
    let run = s.to_measure();
    for &i in &run {
        if tries.get(&i).copied().unwrap_or(0) > 0 {
            if let Some(stop) = no_result(p, lines, i) {
                return Ok(stop);
            }
        }
    }
    let a = s.answer();
    for n in &step::of_search(&a).notes {
        say(n);
    }
    if !run.is_empty() {
        return Ok(Next::Run(run));
    }
    let skipped = answer::skipped_records(&s.space, &s.decision, s.all, started)
        .iter()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect();
    Ok(Next::Done(skipped, a.skipped.unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_run_here_that_still_has_no_result_stops_the_search() {
        let p = crate::slurm::plan::tests::plan(&["--adaptive", "--retries", "1"]).unwrap();
        let lines = |rec: &str| results::read(&format!("{rec}\n"));
        let key = "speculative-num-steps";
        let lost = lines(&format!(
            r#"{{"type":"failure","config":{{"{key}":"2"}},"kind":"node_fail","class":"transport"}}"#
        ));
        let Some(Next::Fail(code, why)) = no_result(&p, &lost, 2) else {
            panic!("a transport end past --retries goes on");
        };
        assert_eq!(code, exit::FAILURE);
        assert!(why.contains("transport failures after 1 retries"), "{why}");
        let cut = lines(&format!(
            r#"{{"type":"failure","config":{{"{key}":"2"}},"kind":"interrupted"}}"#
        ));
        let Some(Next::Fail(_, why)) = no_result(&p, &cut, 2) else {
            panic!("an incomplete end goes on");
        };
        assert!(why.contains("its job left no result (incomplete)"), "{why}");
        let done = lines(&format!(r#"{{"type":"bench","config":{{"{key}":"2"}}}}"#));
        assert!(
            no_result(&p, &done, 2).is_none(),
            "a repeat of a measured value"
        );
    }
}
