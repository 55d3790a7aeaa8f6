//! `sweep-plan verdict`: what one run of a config (or of the schedule
//! step) left in the results file, and with `--exits` what sweep makes of
//! it (verdict.rs judges).

use sweepkit::exit::Exit;

use crate::grid::GridArgs;
use crate::out::Io;
use crate::read::read_text;
use crate::{results, schedule, verdict};

/// What one run of a config (or of --schedule's step) left in RESULTS:
/// its state and how many bench records it wrote (other configs'
/// records are not counted); with --exits, what sweep makes of it
/// (tally, usage_exit, interrupted, refused, warning, note)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    #[arg(long, value_name = "N", required_unless_present = "schedule")]
    index: Option<usize>,
    /// The schedule step's run for SERVER instead of a config: counted
    /// only when it failed (it adds no config to the measured count)
    #[arg(long, value_name = "SERVER", conflicts_with = "index")]
    schedule: Option<String>,
    /// Append the verdict of a finished run (one not to be retried) to
    /// FILE, for `tally --from FILE`
    #[arg(long, value_name = "FILE", requires = "exits")]
    tally: Option<String>,
    /// Only the records after this many lines (the file's length
    /// before the run)
    #[arg(long, value_name = "LINES", default_value_t = 0)]
    since: usize,
    /// The run's exit statuses: svc-swap's, wait-ready's, loadgen's
    #[arg(long, value_name = "STATUS", num_args = 3)]
    exits: Option<Vec<u8>>,
    /// sweep's --retries (a transport failure runs again this often)
    #[arg(long, value_name = "N", default_value_t = 0)]
    retries: usize,
    /// Which try this was, from 0 (with --exits: retry_in_s and
    /// retry_note say whether and when to run it again)
    #[arg(long, value_name = "N", default_value_t = 0)]
    attempt: usize,
    /// Say on stderr after PREFIX each pre-flight note of the run's
    /// swap record that no verdict in the --tally FILE said yet
    #[arg(
        long,
        value_name = "PREFIX",
        allow_hyphen_values = true,
        requires = "tally"
    )]
    say: Option<String>,
    #[arg(value_name = "RESULTS")]
    results: String,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let text = read_text(&a.results, false)?;
    let lines: Vec<_> = results::read(&text)
        .into_iter()
        .filter(|l| l.line > a.since)
        .collect();
    let mut v = verdict::Verdict {
        tag: "verdict",
        ..verdict::Verdict::default()
    };
    if a.schedule.is_some() {
        let (state, bench) = schedule::since(&lines, a.since);
        (v.label, v.state, v.bench_records) = ("schedule".into(), Some(state), bench);
    } else {
        let g = a.grid.grid()?;
        let i = a.index.unwrap_or_default();
        let p = g.point(i)?;
        v.index = i;
        v.label = p.label();
        v.state = Some(results::state_of(&lines, |c| p.matches(c)));
        v.bench_records = results::count(&lines, "bench", |c| p.matches(c));
    }
    if let Some(&[swap, ready, load]) = a.exits.as_deref() {
        verdict::judge(&mut v, [swap, ready, load], a.retries, a.attempt);
        if a.schedule.is_some() {
            verdict::judge_schedule(&mut v);
        }
        if let (Some(f), None) = (&a.tally, v.retry_in_s) {
            let said = read_text(f, true)?;
            v.preflight = verdict::new_notes(&lines, &said);
            if let Some(prefix) = &a.say {
                for n in &v.preflight {
                    sweepkit::diag::line(format!("{prefix}warning: pre-flight: {n}"));
                }
            }
            results::append_records(f, &[&v])?;
        }
    }
    io.out.answer(&v)
}
