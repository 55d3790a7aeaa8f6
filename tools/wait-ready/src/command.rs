//! `-- CMD ARGS`: run a command once ready and pass its exit status
//! through (127 when it cannot be found, 126 when it cannot run, 128+N when
//! a signal killed it, as shells do).

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use sweepkit::exit::Exit;

/// Run `argv` with our stdio. Err carries its exit code (and, when it
/// could not start, the reason).
pub fn run(argv: &[String]) -> Result<(), Exit> {
    let (prog, args) = argv.split_first().expect("non-empty command");
    let code = match Command::new(prog).args(args).status() {
        Ok(st) => match (st.code(), st.signal()) {
            (Some(c), _) => c as u8,
            (None, Some(sig)) => 128u8.wrapping_add(sig as u8),
            _ => 1,
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Exit::new(127, anyhow::anyhow!("{prog}: command not found")))
        }
        Err(e) => return Err(Exit::new(126, anyhow::anyhow!("{prog}: {e}"))),
    };
    match code {
        0 => Ok(()),
        c => Err(Exit::silent(c)),
    }
}
