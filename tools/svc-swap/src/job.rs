//! The far-side job: one swap's install-reload-stop-start(-restore) as a
//! shell script that runs detached from svc-swap and its session (under
//! `systemd-run --collect` for systemd units, `setsid` for process specs),
//! so a lost SSH session or a killed svc-swap leaves the old or the new
//! config running, never neither. The job appends its progress to
//! `DIR/ID.state`; svc-swap follows that file and can reattach by ID.

use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::SwapRecord;
use sweepkit::transport::Transport;

use crate::far_side;

const COMMON: &str = include_str!("job/common.sh");
const MAIN: &str = include_str!("job/main.sh");
pub const SYSTEMD: &str = include_str!("job/systemd.sh");
pub const PROCESS: &str = include_str!("job/process.sh");
pub const CONTAINER: &str = concat!(
    include_str!("job/engine.sh"),
    include_str!("job/container.sh")
);
pub const COMPOSE: &str = concat!(
    include_str!("job/engine.sh"),
    include_str!("job/compose.sh")
);

/// Detach with setsid: the job outlives the command (and SSH channel) that
/// started it; its stdio is its own log, set by the script.
const LAUNCH: &str = r#"s=$1; shift; setsid sh -c "$s" sh "$@" >/dev/null 2>&1 </dev/null &"#;

/// How long the job waits for svc-swap's verdict on the installed file.
pub const GO_WAIT_S: u32 = 30;

/// What the manager adds to the job: its shell functions and their args.
pub struct ManagerJob {
    pub script: &'static str,
    pub args: Vec<String>,
    /// Run under `systemd-run` (a transient unit named after the job).
    pub systemd_run: bool,
}

/// The file change the job makes.
pub struct FileJob {
    pub path: String,
    /// `write` (the staged `PATH.sweepkit-new.ID`), `remove` or `keep`.
    pub mode: &'static str,
    /// What `write` writes.
    pub new_text: Option<String>,
    pub backup: Option<String>,
    pub restores: Option<String>,
    /// Backups of `path` to keep after a successful swap (0: all).
    pub keep: u32,
    /// Seconds to wait for svc-swap's verdict (0: no verdict needed).
    pub go_wait_s: u32,
}

/// What svc-swap knew when it started the job: enough to write the record
/// later, from this run or from a reattaching one (`DIR/ID.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    pub record: SwapRecord,
    /// The new ExecStart (prefix and unit-file words), for the argv check.
    pub prefix: String,
    pub words: Vec<String>,
    /// A rollback job (after a failed --ready-cmd), not the swap itself.
    #[serde(default)]
    pub rollback: bool,
}

/// `20261130T142100123Z-4242`: sorts by time, valid in a unit name.
pub fn new_id() -> String {
    let stamp: String = sweepkit::time::rfc3339(SystemTime::now())
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    format!("{stamp}-{}", std::process::id())
}

pub fn file(dir: &str, id: &str, ext: &str) -> String {
    format!("{dir}/{id}.{ext}")
}

/// Record what is pending, stage the new file and start the job, in one
/// far-side command (each round trip over SSH costs a fork on a loaded
/// host). Killed before its last step, it leaves a record of a job that
/// never started, which `follow` reports as such. Safe to repeat when the
/// session drops and its outcome is unknown: the lock is checked first.
///
/// What may hold a secret (the pending JSON, the staged text, the job's
/// words: launch lines with their `--api-key`) comes on stdin, into
/// `DIR/ID.in`, mode 0600: never in an argv, which `ps` shows every user
/// of the host (over SSH the login shell's, through an exec prefix the
/// prefix's, then the job's for its whole life). The file holds shell-quoted
/// words: the JSON, the text, then the job's; the job reads and removes it.
const PREP: &str = r#"dir=$1 id=$2 staged=$3 len=$4; shift 4
# Re-run after a lost session: the job took its lock, so it started (and may
# have installed the staged file already): stage nothing, launch nothing.
[ -d "$dir/$id.lock" ] && exit 0
mkdir -p -- "$dir" || exit 1
in="$dir/$id.in"
(umask 077 && cat >"$in.tmp" && [ "$(($(wc -c <"$in.tmp")))" = "$len" ] &&
  mv -f -- "$in.tmp" "$in" &&
  eval "set -- $(cat -- "$in")" &&
  printf '%s' "$1" >"$dir/$id.json.tmp" && mv -f -- "$dir/$id.json.tmp" "$dir/$id.json") ||
  { rm -f -- "$in.tmp" "$in"; exit 1; }
if [ -n "$staged" ]; then
  # Without a slash ${staged%/*} is the file itself: never mkdir that.
  case $staged in */*) d=${staged%/*}; [ -z "$d" ] || mkdir -p -- "$d" || exit 1 ;; esac
  (eval "set -- $(cat -- "$in")" && printf '%s' "$2" >"$staged") ||
    { rm -f -- "$staged" "$in"; exit 1; }
fi
"$@" "$in" && exit 0
rc=$?
# A launch repeated after a lost reply finds its job already there.
sleep 0.5
[ -d "$dir/$id.lock" ] && exit 0
# No job: nothing else would ever remove the staged file (or the words).
[ -z "$staged" ] || rm -f -- "$staged"
rm -f -- "$in"
exit $rc"#;

/// The job's first lines: its words from the 0600 file PREP wrote (its
/// only argument), the file removed once read; the JSON and the staged
/// text before them are PREP's.
const WORDS: &str = r#"a=$(cat -- "$1") && rm -f -- "$1" && eval "set -- $a" && shift 2 || exit 1
"#;

pub fn launch(
    t: &dyn Transport,
    dir: &str,
    id: &str,
    pending: &Pending,
    f: &FileJob,
    m: &ManagerJob,
) -> Result<(), Exit> {
    let json = serde_json::to_string(pending).expect("pending serializes");
    let staged = match &f.new_text {
        Some(_) => format!("{}.sweepkit-new.{id}", f.path),
        None => String::new(),
    };
    let mut words = vec![json, f.new_text.clone().unwrap_or_default()];
    words.extend([
        dir.to_string(),
        id.to_string(),
        f.path.clone(),
        f.mode.to_string(),
        f.backup.clone().unwrap_or_default(),
        f.restores.clone().unwrap_or_default(),
        f.keep.to_string(),
        f.go_wait_s.to_string(),
    ]);
    words.extend(m.args.iter().cloned());
    let input = sweepkit::transport::shell_join(&words);
    let script = format!("{WORDS}{COMMON}{}{MAIN}", m.script);
    let len = input.len().to_string();
    let mut argv: Vec<String> = ["sh", "-c", PREP, "sh", dir, id, &staged, &len]
        .map(String::from)
        .to_vec();
    if m.systemd_run {
        argv.extend(
            [
                "systemd-run",
                &format!("--unit=sweepkit-swap-{id}"),
                "--collect",
                "--quiet",
                "--",
                "sh",
                "-c",
                &script,
                "sh",
            ]
            .map(String::from),
        );
    } else {
        argv.extend(["sh".into(), "-c".into(), LAUNCH.into(), "sh".into(), script]);
    }
    let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = far_side::run_in(t, &refs, Some(input.as_bytes()), far_side::SHORT)?;
    if out.success() {
        return Ok(());
    }
    // Named by what it is: the argv's last words are the job's arguments.
    let why = out
        .stderr_str()
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join("; ");
    Err(Exit::new(
        exit::FAILURE,
        anyhow::anyhow!(
            "starting swap job {id} for {} failed (exit {}): {why}",
            f.path,
            out.status.map_or("by signal".into(), |s| s.to_string())
        ),
    ))
}

/// The job's `key=value` progress lines.
#[derive(Debug, Default, Clone)]
pub struct State {
    pub kv: Vec<(String, String)>,
}

impl State {
    pub fn parse(text: &str) -> State {
        let kv = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        State { kv }
    }
    /// The last value of `k`.
    pub fn get(&self, k: &str) -> Option<&str> {
        self.kv
            .iter()
            .rev()
            .find(|(x, _)| x == k)
            .map(|(_, v)| v.as_str())
    }
    pub fn has(&self, k: &str, v: &str) -> bool {
        self.kv.iter().any(|(x, y)| x == k && y == v)
    }
    /// `new`, `old` or `none` once the job is done.
    pub fn result(&self) -> Option<&str> {
        self.get("result")
    }
    /// Every error line, in order.
    pub fn errors(&self) -> String {
        let v: Vec<&str> = self
            .kv
            .iter()
            .filter(|(k, _)| k == "error")
            .map(|(_, v)| v.as_str())
            .collect();
        v.join("; ")
    }
    /// The new main PID's argv as the job read it (`cmdline_hex`).
    pub fn cmdline(&self) -> Option<Vec<String>> {
        let hex = self.get("cmdline_hex").filter(|h| !h.is_empty())?;
        Some(far_side::argv_of(&far_side::from_hex(hex)?))
    }

    /// Seconds between two `date +%s%N` stamps.
    pub fn span_s(&self, from: &str, to: &str) -> Option<f64> {
        let a: u128 = self.get(from)?.parse().ok()?;
        let b: u128 = self.get(to)?.parse().ok()?;
        Some(b.saturating_sub(a) as f64 / 1e9)
    }
}

pub fn read_pending(t: &dyn Transport, dir: &str, id: &str) -> Result<Option<Pending>, Exit> {
    let Some(text) = far_side::read_file(t, &file(dir, id, "json"))? else {
        return Ok(None);
    };
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Exit::new(
            exit::TARGET_ERROR,
            anyhow::anyhow!("{}: {e}", file(dir, id, "json")),
        )
    })
}

/// Wait on the far side (one round trip, not one per poll) until the job
/// is done, or (with $2 = 1) waits for a verdict, or 20 s passed; a job
/// with no state and no lock after 5 s never started (`nolock=1`).
const WAIT: &str = r#"f=$1 want=$2 lock=$3 i=0
while [ $i -lt 400 ]; do
  grep -q '^result=' "$f" 2>/dev/null && break
  [ "$want" = 1 ] && grep -qx 'phase=installed' "$f" 2>/dev/null && break
  [ $i -ge 100 ] && [ ! -s "$f" ] && [ ! -d "$lock" ] && { echo nolock=1; break; }
  sleep 0.05
  i=$((i + 1))
done
cat -- "$f" 2>/dev/null
exit 0"#;

fn wait_state(t: &dyn Transport, dir: &str, id: &str, want: bool) -> Result<State, Exit> {
    let (f, lock) = (file(dir, id, "state"), file(dir, id, "lock"));
    let want = if want { "1" } else { "0" };
    let argv = ["sh", "-c", WAIT, "sh", &f, want, &lock];
    let out = far_side::check(t, &argv, far_side::SHORT, exit::FAILURE)?;
    Ok(State::parse(&out))
}

/// Follow the job until it is done. Once the file is installed, `verify`
/// (when the job waits for a verdict) decides whether it may go on; its
/// error comes back beside the state.
pub fn follow(
    t: &dyn Transport,
    dir: &str,
    id: &str,
    verify: Option<&mut dyn FnMut() -> Result<(), Exit>>,
    limit: Duration,
) -> Result<(State, Option<Exit>), Exit> {
    let t0 = Instant::now();
    let mut decided = verify.is_none();
    let mut verify = verify;
    let mut refused = None;
    loop {
        let st = wait_state(t, dir, id, !decided)?;
        if st.result().is_some() {
            return Ok((st, refused));
        }
        if st.has("nolock", "1") {
            // Its starter was killed between recording and launching it.
            let st = State::parse("error=the swap job never started\nresult=old\n");
            return Ok((st, refused));
        }
        if !decided && st.has("phase", "installed") {
            let check = verify.as_mut().expect("undecided means a verifier");
            let verdict = match check() {
                Ok(()) => "go".to_string(),
                Err(e) => {
                    let why = e.error.as_ref().map_or(String::new(), |e| format!("{e:#}"));
                    refused = Some(e);
                    why.replace('\n', " ")
                }
            };
            let go = file(dir, id, "go");
            let put = r#"printf '%s' "$2" >"$1.tmp" && mv -f -- "$1.tmp" "$1""#;
            far_side::check(
                t,
                &["sh", "-c", put, "sh", &go, &verdict],
                far_side::SHORT,
                exit::FAILURE,
            )?;
            decided = true;
        }
        if t0.elapsed() >= limit {
            return Err(still_at_work(id, "", limit));
        }
    }
}

/// Wait on the far side (up to `$2` tenths of a second) while a job in a
/// directory `$1` matches is at work: its lock taken, no result, its shell
/// alive, and not waiting for a verdict (a later run calls that one off
/// itself). `$1` is a glob (for a Compose service, whose project is read
/// from its container); prints `idle` or `busy ID`. A job writes its pid
/// to its state file right after taking its lock, so a lock alone for
/// 3 s is a leftover (a job killed at birth, a cleanup cut short by a
/// lost session): it is removed, not waited for until the job limit.
const AWAIT: &str = r#"IFS=
i=0 orphan= since=0
while :; do
  busy=
  for l in $1/*.lock; do
    [ -d "$l" ] || continue
    j=${l%.lock}
    if [ ! -e "$j.state" ]; then
      if [ "$orphan" != "$l" ]; then
        orphan=$l since=$i
      elif [ $((i - since)) -ge 30 ]; then
        rmdir -- "$l" 2>/dev/null
        continue
      fi
    fi
    grep -q '^result=' "$j.state" 2>/dev/null && continue
    p=$(sed -n 's/^job_pid=//p' "$j.state" 2>/dev/null | tail -n 1)
    [ -n "$p" ] && [ ! -d "/proc/$p" ] && continue
    ph=$(grep '^phase=' "$j.state" 2>/dev/null | tail -n 1)
    [ "$ph" = phase=installed ] && [ ! -s "$j.go" ] && continue
    busy=${j##*/}
    break
  done
  [ -n "$busy" ] || { echo idle; exit 0; }
  [ $i -ge "$2" ] && { echo "busy $busy"; exit 0; }
  sleep 0.1
  i=$((i + 1))
done"#;

/// `dir` with the glob's special characters matched literally.
pub fn glob_literal(dir: &str) -> String {
    dir.chars()
        .map(|c| match c {
            '*' | '?' | '[' => format!("[{c}]"),
            c => c.to_string(),
        })
        .collect()
}

/// Before a run reads its target: wait until no job of an earlier run is
/// at work in the directories `pattern` (a glob) names. Such a job holds
/// the target half-changed (a container renamed away, not yet re-created),
/// and a run that read it then took "no such container" for the config's
/// failure. `limit` bounds the wait as `follow`'s does.
pub fn await_idle(t: &dyn Transport, pattern: &str, limit: Duration) -> Result<(), Exit> {
    let t0 = Instant::now();
    let mut said = false;
    loop {
        // A first look that does not wait, so the wait is said at once.
        let tenths = if said { "150" } else { "0" };
        let out = far_side::check(
            t,
            &["sh", "-c", AWAIT, "sh", pattern, tenths],
            far_side::SHORT,
            exit::FAILURE,
        )?;
        let Some(id) = out.trim().strip_prefix("busy ") else {
            return Ok(());
        };
        if !said {
            let m = format!("waiting for swap job {id}, an earlier run's, to end");
            sweepkit::diag::info("svc-swap", m);
            said = true;
            continue;
        }
        if t0.elapsed() >= limit {
            return Err(still_at_work(id, " of an earlier run", limit));
        }
    }
}

/// A job followed (or waited for) past `limit`: where to pick it up.
fn still_at_work(id: &str, whose: &str, limit: Duration) -> Exit {
    Exit::new(
        exit::FAILURE,
        anyhow::anyhow!(
            "swap job {id}{whose} still at work after {:.0}s; `svc-swap --reattach {id}` follows it",
            limit.as_secs_f64()
        ),
    )
}

/// IDs of jobs whose record was never written, oldest first.
pub fn unreported(t: &dyn Transport, dir: &str) -> Result<Vec<String>, Exit> {
    let script = r#"for f in "$1"/*.json; do [ -e "$f" ] && printf '%s\n' "$f"; done; exit 0"#;
    let out = far_side::check(
        t,
        &["sh", "-c", script, "sh", dir],
        far_side::SHORT,
        exit::FAILURE,
    )?;
    let mut v: Vec<String> = out
        .lines()
        .filter_map(|l| l.rsplit('/').next()?.strip_suffix(".json"))
        .map(String::from)
        .collect();
    v.sort();
    Ok(v)
}

/// Forget a job once its record is written. A job still at work (its
/// lock taken, no result yet: svc-swap lost its session, or gave up
/// waiting) keeps its files: removing its copy of the old file made its
/// undo remove the file itself, and a later svc-swap reattaches to it.
pub fn cleanup(t: &dyn Transport, dir: &str, id: &str) {
    // The record marker first and the lock next: cut short after either,
    // what is left is never taken for a job to report or to wait for.
    let script = r#"if [ -d "$1/$2".lock ] && ! grep -q '^result=' -- "$1/$2".state 2>/dev/null; then exit 0; fi
rm -f -- "$1/$2".json
rmdir -- "$1/$2".lock 2>/dev/null
rm -f -- "$1/$2".state "$1/$2".log "$1/$2".go "$1/$2".old "$1/$2".stoprc
# The state dir too once no other job's files are in it (rmdir refuses).
rmdir -- "$1" 2>/dev/null; exit 0"#;
    let _ = far_side::run(t, &["sh", "-c", script, "sh", dir, id], far_side::SHORT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_lines() {
        let s = State::parse("phase=installing\nerror=a=b\nphase=installed\nt_stop=1000000000\nt_start=3500000000\nerror=c\nresult=old\n");
        assert_eq!(s.get("phase"), Some("installed"));
        assert_eq!(s.errors(), "a=b; c");
        assert_eq!(s.result(), Some("old"));
        assert_eq!(s.span_s("t_stop", "t_start"), Some(2.5));
        assert!(s.has("phase", "installing"));
        let s = State::parse("cmdline_hex=7368002d630061200a6200\n");
        assert_eq!(s.cmdline().unwrap(), ["sh", "-c", "a \nb"]);
    }

    /// Regression: a cleanup after a lost session removed a running job's
    /// files, its copy of the old spec among them, and the job's undo then
    /// removed the spec itself.
    #[test]
    fn cleanup_leaves_a_job_at_work_and_forgets_a_finished_one() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("k.spec.sweepkit-swap");
        let d = dir.to_str().unwrap();
        let t = sweepkit::transport::Local::new();
        std::fs::create_dir_all(dir.join("a.lock")).unwrap();
        std::fs::write(dir.join("a.state"), "phase=installing\n").unwrap();
        std::fs::write(dir.join("a.old"), "ExecStart=x\n").unwrap();
        cleanup(&t, d, "a");
        assert!(dir.join("a.old").exists() && dir.join("a.lock").exists());
        std::fs::write(dir.join("a.state"), "phase=installing\nresult=new\n").unwrap();
        cleanup(&t, d, "a");
        assert!(!dir.exists(), "a finished job's files and the empty dir go");
    }

    /// Regression (CI, a fleet of systemd hosts): a lock left alone (its
    /// job's files gone, the cleanup cut before its rmdir) made every later
    /// run wait for a job that no longer existed, up to the job limit.
    #[test]
    fn a_lock_left_alone_is_removed_and_a_live_job_is_waited_for() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("sim.service");
        let d = dir.to_str().unwrap();
        let t = sweepkit::transport::Local::new();
        std::fs::create_dir_all(dir.join("old.lock")).unwrap();
        let t0 = Instant::now();
        await_idle(&t, &glob_literal(d), Duration::from_secs(30)).unwrap();
        assert!(t0.elapsed() < Duration::from_secs(20), "{:?}", t0.elapsed());
        assert!(!dir.join("old.lock").exists(), "the leftover lock goes");
        // A job whose shell lives (this test's own pid) and has no result.
        std::fs::create_dir_all(dir.join("live.lock")).unwrap();
        let st = format!("job_pid={}\nphase=stopping\n", std::process::id());
        std::fs::write(dir.join("live.state"), st).unwrap();
        let e = await_idle(&t, &glob_literal(d), Duration::from_secs(4)).unwrap_err();
        assert!(format!("{:#}", e.error.unwrap())
            .contains("swap job live of an earlier run still at work"));
        assert!(dir.join("live.lock").exists(), "a live job's lock stays");
    }

    #[test]
    fn ids_sort_by_time_and_fit_unit_names() {
        let a = new_id();
        std::thread::sleep(Duration::from_millis(2));
        let b = new_id();
        assert!(a < b, "{a} {b}");
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }
}
