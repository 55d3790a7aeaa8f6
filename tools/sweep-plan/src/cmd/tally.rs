//! `sweep-plan tally`: a single-host sweep's end, from its tally file.

use sweepkit::exit::Exit;

use crate::out::Io;
use crate::read::read_text;
use crate::verdict;

/// A single-host sweep's end from the tally file `verdict --tally FILE`
/// and `step --tally FILE` appended to: the `done` line sweep says and
/// its exit status (41 every config failed, 40 some, else 0)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The tally file (missing: nothing counted)
    #[arg(long, value_name = "FILE")]
    from: Option<String>,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let (m, f, s) = verdict::count(&match &a.from {
        Some(p) => read_text(p, true)?,
        None => String::new(),
    });
    io.out.answer(&verdict::tally(m, f, s))
}
