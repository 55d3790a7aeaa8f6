//! A sweep run in the background: signalled as a terminal would (the
//! script alone, or its whole process group), waited for with a limit,
//! its output read back for the assertion messages.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `kill -SIG PID`: the script alone, as timeout(1) or `kill PID` do.
pub fn signal(child: &Child, sig: &str) {
    Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .unwrap();
}

/// `kill -SIG -- -PGID`: a child spawned with `process_group(0)` and every
/// tool of its pipeline, as Ctrl-C reaches a terminal's foreground job.
pub fn signal_group(child: &Child, sig: &str) {
    Command::new("kill")
        .args([&format!("-{sig}"), "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
}

/// Start `cmd` with its stdout and stderr piped (see [`wait_within`]).
pub fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Send stdout and stderr to `out` and `err` in `dir` (a long level's
/// lines would fill a pipe nobody reads yet); see [`wait_within`].
pub fn to_files(cmd: &mut Command, dir: &Path) {
    cmd.stdout(std::fs::File::create(dir.join("out")).unwrap())
        .stderr(std::fs::File::create(dir.join("err")).unwrap());
}

/// Wait for `child` at most `limit` (then SIGKILL its group and fail); its
/// piped output (read as it comes, so a full pipe never stalls it), or
/// what [`to_files`] sent to `logs`.
pub fn wait_within(mut child: Child, limit: Duration, logs: Option<&Path>) -> Output {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > limit {
            let g = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-KILL", "--", &g]).status();
            panic!("sweep did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    if let Some(dir) = logs {
        let read = |f: &str| std::fs::read(dir.join(f)).unwrap_or_default();
        out.stdout = read("out");
        out.stderr = read("err");
    }
    out
}
