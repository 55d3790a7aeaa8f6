//! A container that is not what a swap can start from: gone from its name
//! (an earlier job renamed it away and could not put it back, say through
//! an engine outage) or stopped by its user. The first is put back from
//! the copy the job kept; the second is refused, since a swap would start
//! a server its user had stopped.

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::transport::Transport;

use super::{inspect::Inspected, target_err, Engine};
use crate::far_side;

/// The name each swap job keeps the old container under
/// (`job/container.sh`): `NAME.sweepkit-old-JOBID`.
fn kept_prefix(name: &str) -> String {
    format!("{name}.sweepkit-old-")
}

/// Of the engine's container names, the newest kept copy of `name` (job
/// IDs sort by time) and whether `NAME.sweepkit-prev` is there.
pub fn kept_of(names: &str, name: &str) -> (Option<String>, bool) {
    let prefix = kept_prefix(name);
    let prev = format!("{name}.sweepkit-prev");
    let kept = names
        .lines()
        .map(str::trim)
        .filter(|n| n.starts_with(&prefix))
        .max()
        .map(String::from);
    (kept, names.lines().any(|n| n.trim() == prev))
}

/// NAME is gone: rename the newest `NAME.sweepkit-old-ID` (the container
/// that ran before the job that lost it) back and start it; the warning
/// says so. Without one, exit 20 naming what is left and the command that
/// puts it back by hand.
pub fn put_back(t: &dyn Transport, engine: Engine, name: &str) -> Result<String, Exit> {
    let e = engine.cli();
    let names = far_side::check(
        t,
        &[e, "ps", "-a", "--format", "{{.Names}}"],
        far_side::SHORT,
        exit::ENGINE_UNAVAILABLE,
    )?;
    let (kept, prev) = kept_of(&names, name);
    let Some(kept) = kept else {
        let mut m = format!(
            "container {name}: no such container ({e} on {})",
            t.describe()
        );
        if prev {
            m.push_str(&format!(
                "; {name}.sweepkit-prev (stopped, the container the swaps started from) is left: \
                 '{e} rename {name}.sweepkit-prev {name} && {e} start {name}' puts it back"
            ));
        }
        return Err(target_err(m));
    };
    far_side::check(
        t,
        &[e, "rename", &kept, name],
        far_side::SHORT,
        exit::ENGINE_UNAVAILABLE,
    )?;
    let started = far_side::run(t, &[e, "start", "--", name], far_side::SHORT)?.success();
    Ok(format!(
        "container {name} was missing: an earlier swap job had kept it as {kept} and could \
         not put it back; renamed back{}",
        if started {
            " and started"
        } else {
            ", but it did not start"
        }
    ))
}

/// IDs of the containers svc-swap's jobs made under this name (`made` in
/// its state dir, one a line).
fn made_here(t: &dyn Transport, state_dir: &str) -> Result<String, Exit> {
    Ok(far_side::read_file(t, &format!("{state_dir}/made"))?.unwrap_or_default())
}

/// A stopped container is a swap target only when a swap made it (a
/// config that crashed at load, a sweep going on past it); one its user
/// stopped is refused, exit 20.
pub fn refuse_stopped(t: &dyn Transport, c: &Inspected, state_dir: &str) -> Result<(), Exit> {
    if c.running || c.restarting {
        return Ok(());
    }
    if made_here(t, state_dir)?.lines().any(|l| l.trim() == c.id) {
        return Ok(());
    }
    let status = if c.status.is_empty() {
        "stopped"
    } else {
        &c.status
    };
    Err(target_err(format!(
        "container {} is not running ({status}): a stopped server is not a swap target \
         (a swap would start it); start it first if it should serve",
        c.name
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_kept_copy_of_this_name_only() {
        let names = "s\ns.sweepkit-prev\ns.sweepkit-old-20261204T100000Z-9\n\
                     s.sweepkit-old-20261204T110000Z-3\nst.sweepkit-old-20261205T000000Z-1\n";
        let (kept, prev) = kept_of(names, "s");
        assert_eq!(kept.as_deref(), Some("s.sweepkit-old-20261204T110000Z-3"));
        assert!(prev);
        assert_eq!(kept_of("s\nother\n", "s"), (None, false));
    }
}
