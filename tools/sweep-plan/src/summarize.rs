//! summarize, run where sweep-plan needs its reading of a results file:
//! the adaptive search's scores, the schedule's derivation and the end's
//! summary (summarize summarizes, sweep-plan decides). Which of its exit
//! statuses still carry an answer is said here, once.

use std::process::Stdio;

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;

/// Run summarize (`prog`) with `args` (the results file among them): its
/// exit status (killed by a signal: [`exit::FAILURE`]) and what it printed
/// on stdout; its reasons on stderr go to `stderr`.
pub fn run<S: AsRef<std::ffi::OsStr>>(
    prog: &str,
    args: &[S],
    stderr: Stdio,
) -> std::io::Result<(u8, Vec<u8>)> {
    let o = std::process::Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stderr(stderr)
        .output()?;
    let rc = o.status.code().and_then(|c| u8::try_from(c).ok());
    Ok((rc.unwrap_or(exit::FAILURE), o.stdout))
}

/// summarize's scores of `results` for the adaptive search (`--format
/// json`, `sum_args`, `--objective weighted --pool-hosts`): exit 1
/// (nothing picked yet) and 3 (nothing measured yet) still print them;
/// another exit stops the sweep with that status.
pub fn scores(prog: &str, sum_args: &[String], results: &str) -> Result<String, Exit> {
    let mut args: Vec<&str> = vec!["--format", "json"];
    args.extend(sum_args.iter().map(String::as_str));
    args.extend(["--objective", "weighted", "--pool-hosts", results]);
    let (rc, out) = run(prog, &args, Stdio::null())
        .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{prog}: {e}")))?;
    if ![exit::OK, exit::FAILURE, exit::BAD_INPUT].contains(&rc) {
        return Err(Exit::new(
            rc,
            anyhow!("summarize failed on {results} (exit {rc})"),
        ));
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// `summarize --schedule SERVER` (with `schedule_args` and `sum_args`)
/// over `results`: its exit status and the records it printed, as it
/// printed them (its reasons go to stderr, as in sweep's loop).
pub fn derive(
    prog: &str,
    server: &str,
    schedule_args: &[String],
    sum_args: &[String],
    results: &str,
) -> Result<(u8, String), Exit> {
    let mut args: Vec<&str> = vec!["--schedule", server];
    args.extend(schedule_args.iter().map(String::as_str));
    args.extend(sum_args.iter().map(String::as_str));
    args.push(results);
    let (rc, out) = run(prog, &args, Stdio::inherit())
        .map_err(|e| Exit::new(exit::FAILURE, anyhow!("{prog}: {e}")))?;
    Ok((rc, String::from_utf8_lossy(&out).into_owned()))
}

/// summarize's summary of `results` for the end, run once per end (the
/// validation's records are no results, but the pick is the sweep's): its
/// path and summarize's exit status, kept in `work`.
pub fn summary(
    prog: &str,
    args: &[String],
    results: &str,
    work: &str,
) -> Result<(String, u8), Exit> {
    let failed = |what: &str, e: std::io::Error| Exit::new(exit::FAILURE, anyhow!("{what}: {e}"));
    let (file, rc_file) = (format!("{work}/summary"), format!("{work}/summary.exit"));
    if let Ok(rc) = std::fs::read_to_string(&rc_file) {
        return Ok((file, rc.trim().parse().unwrap_or(exit::FAILURE)));
    }
    let mut words: Vec<&str> = vec!["--format", "json"];
    words.extend(args.iter().map(String::as_str));
    words.push(results);
    let (rc, out) = run(prog, &words, Stdio::null()).map_err(|e| failed(prog, e))?;
    std::fs::write(&file, out).map_err(|e| failed(&file, e))?;
    std::fs::write(&rc_file, rc.to_string()).map_err(|e| failed(&rc_file, e))?;
    Ok((file, rc))
}

/// The table at a sweep's end (`sweep --slurm`'s; sweep.sh prints the
/// others alike): `summarize --format text SUM_ARGS [--report FILE]
/// RESULTS` on this stdout, a warning if it fails, then where the report
/// is (unless `quiet`). A results file not there or empty has no table.
pub fn table(prog: &str, sum_args: &[String], report: Option<&str>, results: &str, quiet: bool) {
    if std::fs::metadata(results).map_or(true, |m| m.len() == 0) {
        return;
    }
    let mut c = std::process::Command::new(prog);
    c.args(["--format", "text"]).args(sum_args);
    if let Some(r) = report {
        c.args(["--report", r]);
    }
    let ok = c.arg(results).stdin(Stdio::null()).status();
    if !ok.is_ok_and(|s| s.success()) {
        sweepkit::diag::warning("sweep", format!("summarize failed on {results}"));
    }
    let written = report.filter(|r| std::fs::metadata(r).is_ok_and(|m| m.len() > 0));
    if let (Some(r), false) = (written, quiet) {
        sweepkit::diag::info("sweep", format!("report: {r}"));
    }
}

/// Whether summarize refuses one pick over `results` (`--format json`,
/// `sum_args`) because its hosts differ in hardware or server version
/// (its exit MIXED_HARDWARE); one that cannot run refuses nothing.
pub fn mixed_hardware(prog: &str, sum_args: &[String], results: &str) -> bool {
    let mut args: Vec<&str> = vec!["--format", "json"];
    args.extend(sum_args.iter().map(String::as_str));
    args.push(results);
    run(prog, &args, Stdio::null()).is_ok_and(|(rc, _)| rc == exit::MIXED_HARDWARE)
}
