//! Far-side primitives over a `Transport`: read, back up and remove files,
//! inspect PIDs. (Signals, the port and GPU checks run inside the far-side
//! job, `job/*.sh`.) Every value is an argv word or a positional parameter
//! of a constant `sh -c` script, never spliced into shell text.
//!
//! Every command svc-swap runs is safe to run twice, so each goes through
//! `Transport::run_idempotent` and a session lost mid-command is re-run
//! within `--ssh-retry` (and one killed by a signal, once): reads (systemctl show/cat, /proc, journalctl, the
//! job's state), writes that converge (`mkdir -p`, temp file + `mv -f`, the
//! verdict file, `rm -f` of the job's files), and the job's launch, which
//! checks the job's lock first and so never starts a swap twice (job.rs).
//! The stop and start themselves run only inside the detached job.

use std::time::Duration;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::proc_stat;
use sweepkit::transport::{CmdOutput, Transport, TransportError};

/// Timeout for the small commands svc-swap runs.
pub const SHORT: Duration = Duration::from_secs(30);

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

/// Run `words` on the far side; a transport failure is exit 21.
pub fn run(t: &dyn Transport, words: &[&str], timeout: Duration) -> Result<CmdOutput, Exit> {
    run_in(t, words, None, timeout)
}

/// As `run`, with stdin bytes.
pub fn run_in(
    t: &dyn Transport,
    words: &[&str],
    stdin: Option<&[u8]>,
    timeout: Duration,
) -> Result<CmdOutput, Exit> {
    let argv = argv(words);
    let mut out = t.run_idempotent(&argv, stdin, timeout);
    // A command of svc-swap's own killed by a signal was killed from
    // outside (its sshd torn down a moment before the session dropped, the
    // OOM killer): it says nothing about the config. Run it once more, as
    // a lost session's command is: on a dead session the transport
    // reconnects, and a command killed twice is reported as it was.
    if matches!(&out, Ok(o) if o.status.is_none()) {
        sweepkit::diag::warn(format!(
            "{}: {} ended by a signal; running it again",
            t.describe(),
            words[0]
        ));
        out = t.run_idempotent(&argv, stdin, timeout);
    }
    out.map_err(|e| {
        let code = match e {
            TransportError::Timeout(_) => exit::FAILURE,
            _ => exit::TRANSPORT_ERROR,
        };
        // The SSH transport's own errors already start with its target.
        let (d, e) = (t.describe(), e.to_string());
        let e = e.strip_prefix(&format!("{d}: ")).unwrap_or(&e).to_string();
        Exit::new(code, anyhow::anyhow!("{d}: {}: {e}", words[0]))
    })
}

/// A command that must succeed; its stderr becomes the error.
pub fn check(
    t: &dyn Transport,
    words: &[&str],
    timeout: Duration,
    code: u8,
) -> Result<String, Exit> {
    let out = run(t, words, timeout)?;
    if out.success() {
        return Ok(out.stdout_str());
    }
    let msg = out.stderr_str();
    let msg = msg.trim();
    // Name the command by its program, verb and last word (the unit or
    // path), not its whole argv: `systemctl show sim.service failed`.
    let mut name: Vec<&str> = words.iter().take(2).copied().collect();
    if words.len() > 2 && !words[words.len() - 1].starts_with('-') {
        name.push(words[words.len() - 1]);
    }
    let name: Vec<&str> = name.into_iter().filter(|w| !w.contains('\n')).collect();
    Err(Exit::new(
        code,
        anyhow::anyhow!(
            "{} failed (exit {}){}{}",
            name.join(" "),
            out.status.map_or("by signal".into(), |s| s.to_string()),
            if msg.is_empty() { "" } else { ": " },
            msg
        ),
    ))
}

/// The file's text, `None` when it does not exist.
pub fn read_file(t: &dyn Transport, path: &str) -> Result<Option<String>, Exit> {
    let script = r#"[ -e "$1" ] || exit 3; exec cat -- "$1""#;
    let out = run(t, &["sh", "-c", script, "sh", path], SHORT)?;
    match out.status {
        Some(0) => String::from_utf8(out.stdout).map(Some).map_err(|_| {
            Exit::new(
                exit::TARGET_ERROR,
                anyhow::anyhow!("{path}: not UTF-8 text"),
            )
        }),
        Some(3) => Ok(None),
        _ => Err(Exit::new(
            exit::TARGET_ERROR,
            anyhow::anyhow!("cannot read {path}: {}", out.stderr_str().trim()),
        )),
    }
}

/// Write atomically (temp file + `mv -f`), creating the directory.
pub fn write_file(t: &dyn Transport, path: &str, text: &str) -> Result<(), Exit> {
    if let Some(dir) = std::path::Path::new(path).parent().and_then(|d| d.to_str()) {
        if !dir.is_empty() {
            check(t, &["mkdir", "-p", "--", dir], SHORT, exit::FAILURE)?;
        }
    }
    // A lost session ends with the transport code (21), a refusal with 1.
    t.write_file(path, text.as_bytes(), SHORT)
        .map_err(|e| Exit::new(e.exit_code(), anyhow::anyhow!(e)))
}

/// Write a file only its owner may read, atomically
/// (`Transport::write_private_file`: mode 0600 from its first byte, the
/// directory created); a lost session is the transport's exit code.
pub fn write_private(t: &dyn Transport, path: &str, text: &str) -> Result<(), Exit> {
    t.write_private_file(path, text.as_bytes(), SHORT)
        .map_err(|e| Exit::new(e.exit_code(), anyhow::anyhow!(e)))
}

/// Backups of `path` (`PATH.sweepkit-bak.STAMP`), oldest first.
pub fn backups(t: &dyn Transport, path: &str) -> Result<Vec<String>, Exit> {
    let script =
        r#"for f in "$1".sweepkit-bak.*; do [ -e "$f" ] && printf '%s\n' "$f"; done; exit 0"#;
    let out = check(t, &["sh", "-c", script, "sh", path], SHORT, exit::FAILURE)?;
    let mut v: Vec<String> = out.lines().map(String::from).collect();
    v.sort();
    Ok(v)
}

/// `/proc/PID/stat` facts: state letter and process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub pgid: i64,
}

pub fn parse_stat(stat: &str) -> Option<ProcStat> {
    let s = proc_stat::ProcStat::parse(stat)?;
    Some(ProcStat {
        state: s.state()?,
        pgid: s.pgrp()?,
    })
}

/// The process's state, `None` when it is gone or a zombie (a zombie has
/// released its memory and port; only its parent can reap it).
pub fn alive(t: &dyn Transport, pid: u32) -> Result<Option<ProcStat>, Exit> {
    let out = run(t, &["cat", &format!("/proc/{pid}/stat")], SHORT)?;
    if !out.success() {
        return Ok(None);
    }
    Ok(parse_stat(&out.stdout_str()).filter(|s| !proc_stat::dead(s.state)))
}

/// Bytes from lowercase hex (`od -An -v -tx1` output, spaces removed).
pub fn from_hex(hex: &str) -> Option<Vec<u8>> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// NUL-separated argv bytes as words.
pub fn argv_of(bytes: &[u8]) -> Vec<String> {
    let s = String::from_utf8_lossy(bytes);
    s.trim_end_matches('\0')
        .split('\0')
        .map(String::from)
        .collect()
}

/// A live process named by a pid file.
#[derive(Debug, Clone)]
pub struct Live {
    pub pid: u32,
    pub stat: ProcStat,
    pub argv: Option<Vec<String>>,
}

/// The pid file's PID, its state and argv in one round trip; `None` when
/// there is no pid file, or its process is gone or a zombie.
pub fn pidfile_process(t: &dyn Transport, pid_file: &str) -> Result<Option<Live>, Exit> {
    let script = r#"p=$(cat -- "$1" 2>/dev/null) || exit 0
case $p in "" | *[!0-9]*) exit 0 ;; esac
s=$(od -An -v -tx1 <"/proc/$p/stat" 2>/dev/null | tr -d ' \n') || exit 0
printf '%s\n%s\n' "$p" "$s"
od -An -v -tx1 <"/proc/$p/cmdline" 2>/dev/null | tr -d ' \n'
exit 0"#;
    let text = check(
        t,
        &["sh", "-c", script, "sh", pid_file],
        SHORT,
        exit::FAILURE,
    )?;
    let mut lines = text.lines();
    let (Some(pid), Some(stat)) = (lines.next(), lines.next()) else {
        return Ok(None);
    };
    let Some(pid) = pid.trim().parse().ok() else {
        return Ok(None);
    };
    let stat = from_hex(stat).and_then(|b| parse_stat(&String::from_utf8_lossy(&b)));
    let Some(stat) = stat.filter(|s| !proc_stat::dead(s.state)) else {
        return Ok(None);
    };
    let argv = lines
        .next()
        .and_then(from_hex)
        .filter(|b| !b.is_empty())
        .map(|b: Vec<u8>| argv_of(&b));
    Ok(Some(Live { pid, stat, argv }))
}

/// The argv of a live process, `None` when it cannot be read.
pub fn cmdline(t: &dyn Transport, pid: u32) -> Result<Option<Vec<String>>, Exit> {
    let out = run(t, &["cat", &format!("/proc/{pid}/cmdline")], SHORT)?;
    if !out.success() || out.stdout.is_empty() {
        return Ok(None);
    }
    Ok(Some(argv_of(&out.stdout)))
}

/// The last `n` lines of a far-side file (for crash reports).
pub fn tail(t: &dyn Transport, path: &str, n: usize) -> Vec<String> {
    run(t, &["tail", "-n", &n.to_string(), "--", path], SHORT)
        .map(|o| o.stdout_str().lines().map(String::from).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_odd_command_names() {
        let s = parse_stat("123 (we ird) name)) S 1 123 123 0 -1").unwrap();
        assert_eq!(
            s,
            ProcStat {
                state: 'S',
                pgid: 123
            }
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    /// A far side whose session drops at every command.
    struct Dropped;
    impl Transport for Dropped {
        fn run(
            &self,
            _: &[String],
            _: Option<&[u8]>,
            _: Duration,
        ) -> Result<CmdOutput, TransportError> {
            Err(TransportError::Connect(
                "ssh u@h: session lost: reset by peer".into(),
            ))
        }
        fn describe(&self) -> String {
            "ssh u@h".into()
        }
    }

    /// A far side whose commands are killed by a signal `kills` times,
    /// then succeed.
    struct Killed {
        kills: u32,
        runs: std::sync::Mutex<u32>,
    }
    impl Transport for Killed {
        fn run(
            &self,
            _: &[String],
            _: Option<&[u8]>,
            _: Duration,
        ) -> Result<CmdOutput, TransportError> {
            let mut n = self.runs.lock().unwrap();
            *n += 1;
            let status = if *n <= self.kills { None } else { Some(0) };
            Ok(CmdOutput {
                status,
                stdout: b"ok".to_vec(),
                stderr: Vec::new(),
            })
        }
        fn describe(&self) -> String {
            "ssh u@h".into()
        }
    }

    /// Regression: sshd's processes killed mid-swap took the job launch's
    /// shell with them a moment before the session dropped; "exit by
    /// signal" came back and the swap was recorded as the config's failure.
    #[test]
    fn a_command_killed_by_a_signal_runs_once_more() {
        let t = Killed {
            kills: 1,
            runs: Default::default(),
        };
        assert_eq!(check(&t, &["sh", "-c", "x"], SHORT, 1).unwrap(), "ok");
        assert_eq!(*t.runs.lock().unwrap(), 2);
        // Killed again: the command's own answer, reported as before.
        let t = Killed {
            kills: 2,
            runs: Default::default(),
        };
        let e = check(&t, &["systemctl", "show", "a.service"], SHORT, 1).unwrap_err();
        assert_eq!((e.code, *t.runs.lock().unwrap()), (1, 2));
        let msg = format!("{:#}", e.error.unwrap());
        assert_eq!(msg, "systemctl show a.service failed (exit by signal)");
    }

    /// Regression: `Transport::write_file` returned a String, so a session
    /// lost mid-write ended svc-swap with 1, not the transport code.
    #[test]
    fn lost_session_mid_write_is_a_transport_error() {
        let e = write_file(&Dropped, "spec", "x\n").unwrap_err();
        assert_eq!(e.code, exit::TRANSPORT_ERROR);
        let msg = format!("{:#}", e.error.unwrap());
        assert!(
            msg.contains("writing spec") && msg.contains("session lost"),
            "{msg}"
        );
        assert!(!msg.contains('\n'), "one line: {msg}");
    }

    #[test]
    fn local_file_helpers() {
        let t = sweepkit::transport::Local::new();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/x.spec");
        let p = p.to_str().unwrap();
        assert_eq!(read_file(&t, p).unwrap(), None);
        write_file(&t, p, "a\n").unwrap();
        assert_eq!(read_file(&t, p).unwrap().as_deref(), Some("a\n"));
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_file(&t, p, "b\n").unwrap();
        let mode = std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the rewrite keeps the file's mode");
        let q = format!("{p}.private");
        write_private(&t, &q, "k\n").unwrap();
        let mode = std::fs::metadata(&q).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            (mode, read_file(&t, &q).unwrap().unwrap()),
            (0o600, "k\n".into())
        );
        write_file(&t, &format!("{p}.sweepkit-bak.2"), "b").unwrap();
        write_file(&t, &format!("{p}.sweepkit-bak.1"), "c").unwrap();
        assert_eq!(backups(&t, p).unwrap().len(), 2);
        assert!(backups(&t, p).unwrap()[0].ends_with(".1"));
        let me = std::process::id();
        assert!(alive(&t, me).unwrap().is_some());
        let pf = format!("{p}.pid");
        assert!(pidfile_process(&t, &pf).unwrap().is_none(), "no pid file");
        write_file(&t, &pf, &format!("{me}\n")).unwrap();
        let live = pidfile_process(&t, &pf).unwrap().unwrap();
        assert_eq!(live.pid, me);
        assert_eq!(Some(live.argv.unwrap()), cmdline(&t, me).unwrap());
        assert!(cmdline(&t, me).unwrap().is_some());
    }
}
