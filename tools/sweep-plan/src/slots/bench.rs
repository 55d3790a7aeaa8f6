//! One config's bench in a GPU slot (`sweep-plan slot-bench -- LOADGEN
//! ARGS...`, the bench stage of the slot's pipe): loads overlap, benches
//! do not. It marks the slot `loading` as the pipe starts, reads the
//! ready record wait-ready hands on, waits for the machine's bench lock
//! (an flock the kernel frees when its holder dies, so a killed bench
//! never keeps it), then runs loadgen on that record, holding the lock
//! till loadgen ends, and adds the slot (its GPUs, what the machine's
//! other slots did during each level) to every bench record loadgen
//! writes. `--bench-together` takes no lock. A signal while it waits ends
//! the wait with an interrupted record; while loadgen runs, loadgen (which
//! a terminal's Ctrl-C reaches too) gets it once, after a grace.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, Context};
use serde_json::Value;
use sweepkit::exit;
use sweepkit::exit::{Exit, WithCode};
use sweepkit::records::{self, FailureKind, Record, SlotActivity, SlotUse, Stage};

use super::activity::{self, Log};

/// How long a signalled bench waits for loadgen to end on its own (a
/// terminal's Ctrl-C reached it too: a second signal would make it quit
/// without its record) before it forwards the signal.
const GRACE: Duration = Duration::from_secs(5);

/// One slot's bench.
pub struct Bench {
    pub log: Log,
    /// The machine's name, for the records.
    pub machine: String,
    /// The machine's bench lock; `None`: `--bench-together`.
    pub lock: Option<String>,
    /// loadgen and its arguments.
    pub loadgen: Vec<String>,
}

/// Run the bench: the exit status is loadgen's (128 + signal when one
/// ended it), or 130 when a signal ended the wait for the lock.
pub fn run(b: &Bench, mut stdin: impl Read, mut out: impl Write) -> Result<u8, Exit> {
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::SeqCst));
    b.log.mark(SlotActivity::Loading)?;
    let mut up = String::new();
    stdin
        .read_to_string(&mut up)
        .context("<stdin>: not UTF-8 text")
        .code(exit::BAD_INPUT)?;
    b.log.mark(SlotActivity::Idle)?;
    let ready = first_kind(&up).as_deref() == Some("ready");
    let _held = match (&b.lock, ready) {
        (Some(path), true) => match wait_lock(path, &stop)? {
            Some(f) => Some(f),
            None => return interrupted(&up, &mut out),
        },
        (None, true) if stop.load(Ordering::SeqCst) => return interrupted(&up, &mut out),
        _ => None,
    };
    if ready {
        b.log.mark(SlotActivity::Benchmarking)?;
    }
    let code = loadgen(b, &up, ready, &stop, &mut out);
    b.log.mark(SlotActivity::Idle)?;
    code
}

/// The `type` of the first record of `text`.
fn first_kind(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let v: Value = serde_json::from_str(line).ok()?;
    v.get("type")?.as_str().map(String::from)
}

/// The lock at `path`, held; `None`: a signal came first.
fn wait_lock(path: &str, stop: &AtomicBool) -> Result<Option<File>, Exit> {
    let f = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("{path}: cannot open the bench lock"))
        .code(exit::FAILURE)?;
    // A signal before the bench starts: no bench, even with the lock free.
    while !stop.load(Ordering::SeqCst) {
        match try_flock(&f) {
            Ok(true) => return Ok(Some(f)),
            Ok(false) => {}
            Err(e) => return Err(Exit::new(exit::FAILURE, anyhow!("{path}: {e}"))),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(None)
}

/// Take `f`'s exclusive flock(2) if it is free (false: another holds it).
/// (std's `File::try_lock` is newer than the workspace's rust-version.)
fn try_flock(f: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: flock(2) on a descriptor `f` owns for the call.
    match unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } {
        0 => Ok(true),
        _ => match std::io::Error::last_os_error() {
            e if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
            e => Err(e),
        },
    }
}

/// A signal ended the wait: the config's interrupted record (its
/// upstream the ready record), and 130.
fn interrupted(up: &str, out: &mut impl Write) -> Result<u8, Exit> {
    let raw: Option<Value> = up.lines().find_map(|l| serde_json::from_str(l).ok());
    let config = raw
        .as_ref()
        .and_then(|v| serde_json::from_value(v.get("config")?.clone()).ok())
        .unwrap_or_default();
    let f = records::failure(
        "sweep-plan",
        SystemTime::now(),
        config,
        Stage::Bench,
        FailureKind::Interrupted,
        "interrupted while waiting for another slot's bench to end; nothing was measured",
        raw,
    );
    sweepkit::io::write_record(out, &Record::Failure(f))
        .and_then(|()| out.flush())
        .context("writing stdout")
        .code(exit::FAILURE)?;
    Ok(exit::INTERRUPTED)
}

/// Run loadgen on `up`; each bench record it writes gets the slot (when
/// the server was ready) and goes to `out`.
fn loadgen(
    b: &Bench,
    up: &str,
    ready: bool,
    stop: &Arc<AtomicBool>,
    out: &mut impl Write,
) -> Result<u8, Exit> {
    let (prog, args) = b
        .loadgen
        .split_first()
        .ok_or_else(|| Exit::new(exit::USAGE, anyhow!("no loadgen command after --")))?;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("{prog}: cannot run"))
        .code(exit::FAILURE)?;
    if let Some(mut w) = child.stdin.take() {
        // loadgen reads one record; a closed pipe before that is its own.
        let _ = w.write_all(up.as_bytes());
    }
    let stdout = child.stdout.take().expect("piped");
    let pid = child.id();
    let watch = {
        let stop = stop.clone();
        std::thread::spawn(move || forward_signal(pid, &stop))
    };
    for line in BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        let line = match ready {
            true => with_slot(b, &line),
            false => line,
        };
        // The results file: a failed write is the pipe's end, as loadgen's.
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
    let code = status(&mut child);
    stop.store(true, Ordering::SeqCst);
    let _ = watch.join();
    Ok(code)
}

/// After a signal, give loadgen `GRACE` to end on its own, then TERM it
/// once; return when it has ended (`stop` set by the reader at its end).
fn forward_signal(pid: u32, stop: &AtomicBool) {
    let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists();
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let since = Instant::now();
    while alive() && since.elapsed() < GRACE {
        std::thread::sleep(Duration::from_millis(50));
    }
    if alive() {
        // SAFETY: kill(2) with a pid we spawned and a valid signal number.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
}

fn status(child: &mut Child) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match child.wait() {
        Ok(s) => s
            .code()
            .or_else(|| s.signal().map(|g| 128 + g))
            .map_or(exit::FAILURE, |c| c as u8),
        Err(_) => exit::FAILURE,
    }
}

/// `line` with `slot` added when it is a bench record: the slot, its GPUs,
/// and what the machine's other slots did between the level's start and
/// its record.
fn with_slot(b: &Bench, line: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(line) else {
        return line.to_string();
    };
    if v.get("type").and_then(Value::as_str) != Some("bench") {
        return line.to_string();
    }
    let t = |k: &str| {
        v.pointer(&format!("/provenance/{k}"))
            .and_then(Value::as_str)
            .and_then(|s| humantime::parse_rfc3339_weak(s.trim_end_matches('Z')).ok())
            .map(activity::unix)
    };
    let (t0, t1) = (t("started_at"), t("finished_at"));
    let beside = match (t0, t1) {
        (Some(a), Some(z)) => activity::beside(&b.log.read(), &b.log.slot, a, z),
        _ => Vec::new(),
    };
    let slot = SlotUse {
        machine: b.machine.clone(),
        slot: b.log.slot.clone(),
        gpus: b.log.gpus.clone(),
        bench_together: b.lock.is_none(),
        beside,
    };
    v["slot"] = serde_json::to_value(slot).unwrap_or(Value::Null);
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(dir: &std::path::Path, slot: &str, lock: bool, loadgen: &str) -> Bench {
        Bench {
            log: Log {
                path: dir.join("activity.jsonl").to_string_lossy().into_owned(),
                slot: slot.into(),
                gpus: Some(format!("{slot},9")),
            },
            machine: "local".into(),
            lock: lock.then(|| dir.join("lock").to_string_lossy().into_owned()),
            loadgen: vec!["sh".into(), "-c".into(), loadgen.into()],
        }
    }

    const READY: &str = r#"{"type":"ready","config":{"k":"1"}}"#;

    /// A stand-in loadgen: reads the record, writes a bench record whose
    /// window is the last second, and one line that is no record.
    const FAKE: &str = r#"read -r up; now=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ); then=$(date -u -d '-1 sec' +%Y-%m-%dT%H:%M:%S.%3NZ)
printf '{"type":"bench","provenance":{"started_at":"%s","finished_at":"%s"}}\nnot json\n' "$then" "$now"; exit 3"#;

    #[test]
    fn a_bench_names_its_slot_and_what_the_others_did() {
        let dir = testkit::temp_dir("slot-bench");
        let other = Log {
            path: dir.join("activity.jsonl").to_string_lossy().into_owned(),
            slot: "1".into(),
            gpus: None,
        };
        other.mark(SlotActivity::Loading).unwrap();
        let b = bench(&dir, "0", true, FAKE);
        let mut out = Vec::new();
        let code = run(&b, READY.as_bytes(), &mut out).unwrap();
        assert_eq!(code, 3, "loadgen's status");
        let text = String::from_utf8(out).unwrap();
        let mut lines = text.lines();
        let rec: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(rec["slot"]["slot"], "0");
        assert_eq!(rec["slot"]["gpus"], "0,9");
        assert_eq!(rec["slot"]["bench_together"], false);
        assert_eq!(rec["slot"]["beside"][0]["slot"], "1");
        assert_eq!(rec["slot"]["beside"][0]["activity"][0], "loading");
        assert_eq!(lines.next(), Some("not json"));
        let marks: Vec<SlotActivity> = b.log.read().into_iter().map(|m| m.activity).collect();
        use SlotActivity as A;
        assert_eq!(
            marks,
            [A::Loading, A::Loading, A::Idle, A::Benchmarking, A::Idle]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failure_upstream_passes_through_without_the_lock_or_a_slot() {
        let dir = testkit::temp_dir("slot-bench-fail");
        // The lock is held elsewhere: a failure must not wait for it.
        let lock = File::create(dir.join("lock")).unwrap();
        assert!(try_flock(&lock).unwrap());
        let b = bench(&dir, "0", true, "cat; exit 4");
        let fail = r#"{"type":"failure","config":{"k":"1"}}"#;
        let mut out = Vec::new();
        assert_eq!(run(&b, fail.as_bytes(), &mut out).unwrap(), 4);
        assert_eq!(String::from_utf8(out).unwrap().trim(), fail);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_lock_waits_for_its_holder_and_frees_when_it_dies() {
        let dir = testkit::temp_dir("slot-bench-lock");
        let path = dir.join("lock");
        // Another process holds the lock, then is killed.
        let mut holder = Command::new("flock")
            .arg(&path)
            .args(["sleep", "30"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let stop = AtomicBool::new(false);
        let p = path.to_string_lossy().into_owned();
        let t0 = Instant::now();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(700));
            let _ = holder.kill();
            let _ = holder.wait();
        });
        assert!(wait_lock(&p, &stop).unwrap().is_some());
        assert!(t0.elapsed() >= Duration::from_millis(600), "it waited");
        killer.join().unwrap();
        // A signal ends a wait: no lock, the interrupted record.
        let f = File::open(&path).unwrap();
        assert!(try_flock(&f).unwrap());
        stop.store(true, Ordering::SeqCst);
        assert!(wait_lock(&p, &stop).unwrap().is_none());
        let mut out = Vec::new();
        assert_eq!(interrupted(READY, &mut out).unwrap(), exit::INTERRUPTED);
        let rec: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(rec["kind"], "interrupted");
        assert_eq!(rec["config"]["k"], "1");
        assert_eq!(rec["upstream"]["type"], "ready");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
