//! `sweep-plan hosts`: the pool of `sweep --hosts`, one answer a host (a
//! GPU slot with its slot, GPUs and target).

use sweepkit::exit::Exit;

use crate::hosts::{self, Templates};
use crate::out::Io;
use crate::slots::layout::Split;

/// The pool of `sweep --hosts`, one answer per host: its place (n),
/// dest, exec prefix, URL (from the --url template), id and name, and a
/// GPU slot's slot, GPUs and target; a bad line or two clashing slots: a
/// usage error naming them
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A pool file, or a comma list of hosts
    #[arg(long, value_name = "FILE|LIST")]
    hosts: String,
    /// sweep's --url template ({host}, {n}, {NAME} of the line)
    #[arg(long, value_name = "URL")]
    url: String,
    /// sweep's --unit, --spec or --container name: a GPU slot's own,
    /// templated alike ({slot}, {gpus}, {port})
    #[arg(long, value_name = "NAME")]
    target: Option<String>,
    /// sweep's --gpus: split each host into GPU slots
    #[arg(long, value_name = "LIST")]
    gpus: Option<String>,
    /// sweep's --gpus-per-config
    #[arg(long, value_name = "N", default_value = "1", requires = "gpus")]
    gpus_per_config: usize,
}

pub fn run(a: Args, io: &mut Io<'_>) -> Result<(), Exit> {
    let t = Templates {
        url: &a.url,
        target: a.target.as_deref(),
    };
    let split = a.gpus.as_deref().map(|gpus| Split {
        gpus,
        per: a.gpus_per_config,
    });
    let here = hosts::here(None, None);
    for h in &hosts::pool(Some(&a.hosts), &here, &t, split.as_ref())? {
        io.out.answer(h)?;
    }
    Ok(())
}
