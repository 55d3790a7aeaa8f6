//! `sweep-plan options`: sweep(1)'s own argv parsed and handed to sweep.sh
//! as bash assignments (sweep/).

use sweepkit::exit::Exit;

use super::as_sweep;
use crate::out::Io;
use crate::sweep::checks::For;
use crate::sweep::shell::{self, Want};
use crate::sweep::{self, Read};

/// Parse sweep(1)'s own arguments (after --) with its one option
/// definition; print its settings as bash assignments, every value
/// single-quoted (sweep.sh evals them); a bad one: `sweep: error:`, 2
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only the pool's hosts: h_id and h_name, in --hosts order
    #[arg(long, conflicts_with = "host")]
    pool: bool,
    /// Only pool host ID's own settings: the stages' target, ready and
    /// load words, its origin_file and say_prefix
    #[arg(long, value_name = "ID")]
    host: Option<String>,
    /// A sweep starts (not a pool's job): also refuse a results file
    /// that holds another sweep, unless --resume or --append
    #[arg(long, conflicts_with_all = ["pool", "host"])]
    start: bool,
    #[arg(
        value_name = "SWEEP_ARG",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    argv: Vec<String>,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let want = match (a.pool, &a.host) {
        (true, _) => Want::Pool,
        (_, Some(id)) => Want::Host(id),
        _ => Want::All,
    };
    let text = match sweep::read(&a.argv, For::Options { start: a.start }) {
        Ok(Read::Help(text)) => Ok(shell::help(&text)),
        Ok(Read::Sweep(s)) => shell::assignments(&s, &a.argv, want),
        Err(e) => Err(e),
    };
    as_sweep(text, io)
}
