//! The adaptive search (`sweep --adaptive`): along one numeric --param,
//! measure the next value, re-measure the close calls, or stop at the
//! plateau or a clear peak. Its one decision over a results file lives
//! here: the grid's one parameter ordered ([`space`]), summarize's scores
//! read ([`scores`]), the pure rule asked ([`decide`]) and answered
//! ([`answer`], with its [`cost`]). `step --adaptive` (sweep's own loop),
//! `next` and `sweep --slurm --adaptive`'s driver all decide here, so a
//! search on Slurm takes the same steps as one on a single node.

pub mod answer;
pub mod cost;
pub mod decide;
pub mod knobs;
pub mod scores;
pub mod space;

use std::io::BufRead;

use anyhow::{anyhow, Context};
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};

use crate::grid::{self, GridArgs};
use crate::results;
use answer::Answer;
use decide::{Decision, RowData};
use knobs::SearchArgs;
use space::Space;

/// The adaptive search over one numeric --param: its decision from
/// RESULTS and summarize's scores of it.
pub struct Search<'a> {
    pub grid: grid::Grid,
    pub space: Space,
    pub all: &'a str,
    pub decision: Decision,
    pub rows: Vec<RowData>,
}

impl Search<'_> {
    /// `next`'s answer, with the value's place in the grid.
    pub fn answer(&self) -> Answer {
        let mut a = answer::answer(&self.space, &self.decision, self.all, &self.rows);
        a.index = self.index_of(a.value.as_deref());
        a
    }

    /// The grid's index of the parameter's value `v`.
    pub fn index_of(&self, v: Option<&str>) -> Option<usize> {
        self.grid
            .points
            .iter()
            .find(|p| Some(p.words[0].1.as_str()) == v)
            .map(|p| p.index)
    }

    /// Every value the decision asks to measure now, as grid indexes (a
    /// round of repeats asks for several).
    pub fn to_measure(&self) -> Vec<usize> {
        match &self.decision {
            Decision::Measure { rows, .. } => rows
                .iter()
                .filter_map(|&i| self.index_of(Some(&self.space.values[i])))
                .collect(),
            Decision::Done { .. } => Vec::new(),
        }
    }
}

/// The search's space: one --param, its values in numeric order.
pub fn space(grid: &GridArgs) -> Result<(grid::Grid, Space), Exit> {
    if grid.params.len() != 1 || grid.params[0].contains(',') {
        return Err(Exit::new(
            exit::USAGE,
            anyhow!("next walks one parameter: give one --param NAME (no grid, no A,B)"),
        ));
    }
    let g = grid.grid()?;
    let values: Vec<String> = g.points.iter().map(|p| p.words[0].1.clone()).collect();
    let space = Space::ordered(&grid.params[0], &values)?;
    Ok((g, space))
}

/// Decide from RESULTS (`all`, its text; `lines`, its records; `results`,
/// its name) and summarize's scores of it (`scores`, its JSON text). A
/// file holding another sweep's records is refused (exit 51); an empty
/// one only when `need_records` (sweep writes an origin record first;
/// `sweep --slurm` writes none).
pub fn search<'a>(
    grid: &GridArgs,
    knobs: &SearchArgs,
    scores: &str,
    (results, all, lines): (&str, &'a str, &[results::Line]),
    need_records: bool,
) -> Result<Search<'a>, Exit> {
    let (g, space) = space(grid)?;
    if need_records || !lines.is_empty() {
        space::check_input(&space, results, lines)?;
    }
    let scores = scores::read_scores(scores)?;
    let (decision, rows) = scores::decide(&space, lines, &scores, knobs);
    Ok(Search {
        grid: g,
        space,
        all,
        decision,
        rows,
    })
}

/// summarize's scores for the search: the file `summary`, or stdin (-).
pub fn scores_text(summary: &str, stdin: &mut dyn BufRead) -> Result<String, Exit> {
    if summary != "-" {
        return crate::read::read_text(summary, false);
    }
    let mut s = String::new();
    stdin
        .read_to_string(&mut s)
        .context("<stdin>: not UTF-8 text")
        .code(exit::BAD_INPUT)?;
    Ok(s)
}
