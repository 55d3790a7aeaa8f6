//! `sweep-plan validation`: loadgen's records of sweep --validate-on's
//! replay, marked as such on their way to the results file (validate.rs).

use sweepkit::report::Exit;

use crate::out::Io;
use crate::validate;

/// Mark loadgen's records on stdin as sweep --validate-on's replay
/// (a `validation` object), for the results file: never one of the
/// sweep's results
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What was validated
    #[arg(long, value_parser = ["pick", "schedule"])]
    of: String,
    /// The trace replayed
    #[arg(long, value_name = "FILE")]
    trace: String,
    /// The objectives loadgen judged goodput by
    #[arg(long, value_name = "TERMS")]
    slo: Option<String>,
    /// The config replayed against (a JSON object), for records
    /// whose own `config` is empty (loadgen ran with no upstream)
    #[arg(long, value_name = "JSON")]
    config: Option<String>,
}

/// Records streamed through, each flushed: not one answer.
pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let config = validate::config_arg(a.config.as_deref())?;
    let to = validate::Mark {
        of: &a.of,
        file: &a.trace,
        slo: a.slo.as_deref(),
        config,
    };
    validate::mark(&mut *io.stdin, io.out.writer(), &to)?;
    Ok(())
}
