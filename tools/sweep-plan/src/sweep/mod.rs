//! sweep(1)'s own command line, read in one direction: the definition
//! (definition.rs, with slurm_args.rs: `sweep --help`, its man page and
//! completions come from it) parses the argv, checks.rs says what clap
//! cannot, settings.rs turns the checked options into each tool's words,
//! stage_words.rs builds a target's. [`read`] is the one way in; what
//! reads it hands the settings on: shell.rs to sweep.sh as bash
//! assignments (`options`), dry_run.rs as `--dry-run`'s plan, and
//! slurm/plan.rs as `sweep --slurm`'s.

pub mod checks;
pub mod definition;
pub mod dry_run;
pub mod settings;
pub mod shell;
pub mod slurm_args;
pub mod stage_words;

use sweepkit::exit::Exit;

use checks::For;
use definition::{usage, Parsed};
use settings::Settings;

/// sweep's argv, read: the text of --help or --version, or the settings.
pub enum Read {
    Help(String),
    Sweep(Box<Settings>),
}

/// Read sweep's `argv` (without the program name) for `why`: parsed by
/// its definition, checked, turned into settings. A bad one is a one-line
/// usage error (exit 2).
pub fn read(argv: &[String], why: For) -> Result<Read, Exit> {
    let given = match definition::parse(argv)? {
        Parsed::Given(given) => given,
        Parsed::Help(text) => return Ok(Read::Help(text)),
    };
    let checked = checks::check(*given, why)?;
    let s = Settings::new(checked);
    Ok(Read::Sweep(Box::new(s)))
}

impl Read {
    /// The settings of a sweep to plan: --help has nothing to plan (a
    /// usage error).
    pub fn to_plan(self) -> Result<Settings, Exit> {
        match self {
            Read::Sweep(s) => Ok(*s),
            Read::Help(_) => Err(usage("--help: nothing to plan".into())),
        }
    }
}
