//! `sweep-plan fleet-step`: one try of a config on one pool host, and the
//! job's exit status for GNU parallel (fleet.rs decides).

use sweepkit::exit::Exit;

use crate::fleet;
use crate::grid::GridArgs;
use crate::out::Io;
use crate::results;

/// One try of config N on one pool host: the try's record (it names
/// the host, for fleet-watch) with the job's next step and its exit
/// status for GNU parallel (0: the result stands, 1: another host
/// tries it through --retries, 130: interrupted)
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    grid: GridArgs,
    #[arg(long, value_name = "N")]
    index: usize,
    /// The host's id (its sshlogin)
    #[arg(long, value_name = "ID")]
    host: String,
    /// The try's verdict (`verdict --field state`)
    #[arg(long, value_enum, required_unless_present = "origin_failed")]
    state: Option<results::State>,
    /// The host's config could not be read (nothing ran): blame it
    #[arg(long)]
    origin_failed: bool,
    /// The config already failed on another host in this run
    #[arg(long)]
    suspect: bool,
    /// svc-swap's exit status in the try
    #[arg(long, value_name = "N", default_value_t = 0)]
    swap_exit: u8,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let g = a.grid.grid()?;
    let p = g.point(a.index)?;
    let (state, (step, exit)) = match a.state {
        Some(st) if !a.origin_failed => (
            serde_json::to_value(st).map_err(anyhow::Error::from)?,
            fleet::step(st, a.suspect, a.swap_exit),
        ),
        _ => ("origin_failed".into(), ("blame-host", 1)),
    };
    io.out.answer(&fleet::Try {
        tag: "try".into(),
        index: a.index,
        label: p.label(),
        host: a.host,
        state: state.as_str().unwrap_or_default().into(),
        step: step.into(),
        exit,
    })
}
