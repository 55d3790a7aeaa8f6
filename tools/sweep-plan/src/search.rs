//! The adaptive search's one decision over a results file: the grid's one
//! numeric parameter ordered, summarize's scores read, [`next::decide`]
//! asked. `step --adaptive` (sweep's own loop), `next` and `sweep
//! --slurm --adaptive`'s driver all decide here, so a search on Slurm
//! takes the same steps as one on a single node.

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::report::Exit;

use crate::cli::{GridArgs, NextArgs};
use crate::{adapt, grid, next, results};

/// The adaptive search over one numeric --param: its decision from
/// RESULTS and summarize's scores of it.
pub struct Search<'a> {
    pub grid: grid::Grid,
    pub space: next::Space,
    pub all: &'a str,
    pub decision: adapt::Decision,
    pub rows: Vec<adapt::RowData>,
}

impl Search<'_> {
    /// `next`'s answer, with the value's place in the grid.
    pub fn answer(&self) -> next::Answer {
        let mut a = next::answer(&self.space, &self.decision, self.all, &self.rows);
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
            adapt::Decision::Measure { rows, .. } => rows
                .iter()
                .filter_map(|&i| self.index_of(Some(&self.space.values[i])))
                .collect(),
            adapt::Decision::Done { .. } => Vec::new(),
        }
    }
}

/// The search's space: one --param, its values in numeric order.
pub fn space(grid: &GridArgs) -> Result<(grid::Grid, next::Space), Exit> {
    if grid.params.len() != 1 || grid.params[0].contains(',') {
        return Err(Exit::new(
            exit::USAGE,
            anyhow!("next walks one parameter: give one --param NAME (no grid, no A,B)"),
        ));
    }
    let g = crate::grid_of(grid)?;
    let values: Vec<String> = g.points.iter().map(|p| p.words[0].1.clone()).collect();
    let space = next::Space::ordered(&grid.params[0], &values)?;
    Ok((g, space))
}

/// Decide from RESULTS (`all`, its text; `lines`, its records; `results`,
/// its name) and summarize's scores of it (`scores`, its JSON text). A
/// file holding another sweep's records is refused (exit 51); an empty
/// one only when `need_records` (sweep writes an origin record first;
/// `sweep --slurm` writes none).
pub fn search<'a>(
    grid: &GridArgs,
    knobs: &NextArgs,
    scores: &str,
    (results, all, lines): (&str, &'a str, &[results::Line]),
    need_records: bool,
) -> Result<Search<'a>, Exit> {
    let (g, space) = space(grid)?;
    if need_records || !lines.is_empty() {
        next::check_input(&space, results, lines)?;
    }
    let scores = next::read_scores(scores)?;
    let (decision, rows) = next::decide(&space, lines, &scores, knobs);
    Ok(Search {
        grid: g,
        space,
        all,
        decision,
        rows,
    })
}
