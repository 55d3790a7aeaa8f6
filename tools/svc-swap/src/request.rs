//! What the caller asked of a swap and what a failed one reports: the
//! words the swap (`swap.rs`) and its planning (`draft.rs`) share.

use sweepkit::exit::Exit;
use sweepkit::records::Config;

use crate::flags::Op;
use crate::target::Opts;

/// What the caller asked for.
pub struct Request {
    pub ops: Vec<Op>,
    pub restore: bool,
    pub in_place: bool,
    pub dry_run: bool,
    pub opts: Opts,
    pub ready_cmd: Option<String>,
    pub ready_timeout: std::time::Duration,
    pub rollback_on_fail: bool,
    /// Restart even when the live config already is the requested one.
    pub force_restart: bool,
    /// Backups of the edited file to keep (0: all).
    pub keep_backups: u32,
    /// How the far side is reached: recorded in `target` (and so in the
    /// record the ready command reads) and given to it as SWEEPKIT_*.
    pub transport: sweepkit::transport_args::TransportArgs,
}

/// A failed swap: the exit, plus what the failure record needs.
pub struct Failed {
    pub exit: Exit,
    pub config: Config,
    pub log_tail: Vec<String>,
    /// Which config serves after the failure: `old`, `new` or `none`
    /// (unknown when the far side could not be asked).
    pub running: Option<&'static str>,
    /// The far-side job, when one ran.
    pub swap_id: Option<String>,
}

pub fn fail(exit: Exit, config: &Config) -> Failed {
    Failed {
        exit,
        config: config.clone(),
        log_tail: Vec::new(),
        running: None,
        swap_id: None,
    }
}
