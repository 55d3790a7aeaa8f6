//! `sweep-plan origin`: sweep's look at the target before its first stop
//! (preflight/look.rs: svc-swap --dry-run reads the launch line, the
//! pre-flight refuses what would fail every config), then the origin
//! record a results file's first start keeps (origin.rs).

use std::time::SystemTime;

use sweepkit::exit::Exit;

use super::{as_sweep, SweepRun};
use crate::origin::{self, Keep};
use crate::out::Io;
use crate::preflight::look::{self, Stop};
use crate::sweep::checks::For;
use crate::sweep::stage_words::Target;
use crate::sweep::{self, Read};

/// Before sweep's first stop: read the target's launch line as the run
/// would (svc-swap --dry-run with config 1's words, changing nothing),
/// refuse what would fail every config alike (`sweep: error:`, exit 2),
/// then keep the original once per results file (and pool host): the
/// origin record every restore puts back
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    sweep: SweepRun,
    /// Pool host ID's target (sweep --hosts); its original is kept in
    /// RESULTS.fleet/origin-ID.jsonl too
    #[arg(long, value_name = "ID")]
    host: Option<String>,
    /// Refuse only: a launch line that cannot be read is no error here
    /// (exit 0, nothing said: the host's first job reads it again)
    #[arg(long)]
    only_refusals: bool,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let kept = look_and_keep(&a, io.started);
    as_sweep(kept.map(|()| String::new()), io)
}

fn look_and_keep(a: &Args, started: SystemTime) -> Result<(), Exit> {
    let s = sweep::read(&a.sweep.argv, For::Origin).and_then(Read::to_plan)?;
    let (target, copy, prefix) = match &a.host {
        Some(id) => {
            let h = s.host(id)?;
            let name = format!("[{}] ", h.name);
            (Target::of_host(&h), Some(s.origin_file(id)), name)
        }
        None => (s.target(), None, String::new()),
    };
    let seen = match look::look(&a.sweep.tools[0], &s.ask(&target, true)) {
        Ok(seen) => seen,
        Err(Stop::Unread { .. }) if a.only_refusals => return Ok(()),
        Err(stop) => return Err(stop.into_exit()),
    };
    let say = (!s.args.quiet).then(|| format!("sweep: {prefix}"));
    let k = Keep {
        results: &s.args.results,
        copy: copy.as_deref(),
        say: say.as_deref(),
    };
    origin::keep(&seen.swap, &seen.raw, &k, &s.grid.keys, started)
}
