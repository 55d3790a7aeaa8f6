//! `sweep-plan slot-bench`: one config's bench in a GPU slot, the bench
//! stage of the slot's pipe (slots/bench.rs).

use sweepkit::exit::Exit;

use crate::out::Io;
use crate::slots::activity::Log;
use crate::slots::bench::{self, Bench};

/// Run loadgen (LOADGEN ARGS...) on the ready record on stdin once no
/// other slot of the machine is benchmarking (--lock), marking the slot's
/// activity in the machine's log and adding the slot to each bench record;
/// exits with loadgen's status (130: interrupted while waiting)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The machine's activity log (one line per change of a slot)
    #[arg(long, value_name = "FILE")]
    activity: String,
    /// The machine's bench lock; absent: benches run together
    /// (sweep --bench-together)
    #[arg(long, value_name = "FILE")]
    lock: Option<String>,
    /// The machine's name, for the records
    #[arg(long, value_name = "NAME")]
    machine: String,
    /// This slot
    #[arg(long, value_name = "K")]
    slot: String,
    /// This slot's GPUs
    #[arg(long, value_name = "LIST")]
    gpus: Option<String>,
    #[arg(
        value_name = "LOADGEN",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true
    )]
    loadgen: Vec<String>,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let b = Bench {
        log: Log {
            path: a.activity,
            slot: a.slot,
            gpus: a.gpus,
        },
        machine: a.machine,
        lock: a.lock,
        loadgen: a.loadgen,
    };
    match bench::run(&b, &mut *io.stdin, io.out.writer())? {
        0 => Ok(()),
        code => Err(Exit::silent(code)),
    }
}
