//! The results in parts, one table each: split first by workload (never
//! pooled), then by host (input/hosts.rs), each part analysed with its
//! validated schedules' rows and its decision views. Every output reads
//! the same parts, so a part's workload, host, analysis and views travel
//! together.

use std::io::Write;

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;

use crate::analysis::{self, Analysis};
use crate::cli::{Args, Format};
use crate::input::host_id::HostId;
use crate::input::{hosts, print_notes, workload, Obs};
use crate::schedule;
use crate::views::{self, Views};

/// One table of the results.
pub(crate) struct Part {
    /// Its workload, when the input has several (`None` with one).
    pub workload: Option<String>,
    /// Its host, when results are split per host (`None`: every host's).
    pub host: Option<HostId>,
    pub analysis: Analysis,
    /// The views beyond its table (`views::of`).
    pub views: Views,
}

/// Each part of `obs`, analysed. Several workloads are one table each,
/// with `--by workload` or for a person's formats; json and csv refuse
/// them otherwise (exit 57), and csv always (it has no workload column).
/// `texts` are the raw inputs (the views read swap and ready records).
pub(crate) fn analyse(
    args: &Args,
    obs: Vec<Obs>,
    opts: &analysis::Options,
    mut notes: Vec<String>,
    texts: &[&str],
    stderr: &mut impl Write,
) -> Result<Vec<Part>, Exit> {
    let format = args.format.unwrap_or(Format::Text);
    let machine = matches!(format, Format::Csv | Format::Json);
    let by_workload = workload::partition(obs);
    if by_workload.len() > 1 {
        let list: Vec<&str> = by_workload
            .iter()
            .filter_map(|(w, _)| w.as_deref())
            .collect();
        let list = list.join("; ");
        let by = args.by.is_some();
        if format == Format::Csv || (machine && !by) {
            print_notes(stderr, &notes);
            let fix = if by {
                "csv has no workload column: give one workload's records, or --format json"
            } else {
                "give --by workload (one pick per workload) or one workload's records"
            };
            return Err(Exit::new(
                exit::MIXED_WORKLOADS,
                anyhow!(
                    "the records come from {} workloads ({list}); one pick would pool \
                     them: {fix}",
                    by_workload.len()
                ),
            ));
        }
        if !by {
            notes.push(format!(
                "the records come from {} workloads ({list}): one table each \
                 (--by workload also shows the best config per workload and level)",
                by_workload.len()
            ));
        }
    }
    let want_pareto = args.pareto || args.report.is_some();
    let mut parts = Vec::new();
    for (workload, obs) in by_workload {
        let mut n = std::mem::take(&mut notes);
        let groups = match hosts::plan(obs, args.pool_hosts, args.per_host, machine, &mut n) {
            Ok(g) => g,
            Err(e) => {
                print_notes(stderr, &n);
                return Err(Exit::new(e.exit_code(), anyhow!(e)));
            }
        };
        for (host, analysis) in analyse_groups(groups, opts, n, stderr)? {
            let views = views::of(&analysis, want_pareto, texts);
            parts.push(Part {
                workload: workload.clone(),
                host,
                analysis,
                views,
            });
        }
    }
    Ok(parts)
}

/// Build and analyse each group's table; the notes (input, grouping) are
/// printed once every table is built, before any decision.
fn analyse_groups(
    groups: Vec<hosts::Group>,
    opts: &analysis::Options,
    mut notes: Vec<String>,
    stderr: &mut impl Write,
) -> Result<Vec<(Option<HostId>, Analysis)>, Exit> {
    let mut models = Vec::new();
    for (host, obs) in groups {
        // A validated schedule is its own row, never a static value.
        let (obs, sched) = schedule::row::split(obs);
        let model = analysis::group::build(&obs, &opts.metric, &mut notes);
        if model.levels.iter().any(|l| l.is_open()) && model.levels.iter().any(|l| !l.is_open()) {
            notes.push(
                "input mixes closed-loop (c=N) and open-loop (rate=R) levels; \
                 they are separate columns"
                    .into(),
            );
        }
        models.push((host, model, obs, sched));
    }
    notes.dedup();
    print_notes(stderr, &notes);
    let mut analyses = Vec::new();
    for (host, model, obs, sched) in models {
        let mut a = analysis::analyse(model, &obs, opts.clone())
            .map_err(|e| Exit::new(e.exit_code(), anyhow!(e)))?;
        a.schedule = schedule::row::rows(&a, &obs, &sched);
        analyses.push((host, a));
    }
    Ok(analyses)
}
