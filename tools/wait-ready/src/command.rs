//! `-- CMD ARGS`: run a command once ready and pass its exit status
//! through (127 when it cannot be found, 126 when it cannot run, 128+N when
//! a signal killed it, as shells do).

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

/// Run `argv` with our stdio; its exit code.
pub fn run(argv: &[String]) -> (u8, Option<String>) {
    let (prog, args) = argv.split_first().expect("non-empty command");
    match Command::new(prog).args(args).status() {
        Ok(st) => match (st.code(), st.signal()) {
            (Some(c), _) => (c as u8, None),
            (None, Some(sig)) => (128u8.wrapping_add(sig as u8), None),
            _ => (1, None),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (127, Some(format!("{prog}: command not found")))
        }
        Err(e) => (126, Some(format!("{prog}: {e}"))),
    }
}
