//! A container engine that fails as one that does not answer, for the
//! fault tests: a stand-in `podman` (or `docker`) first on PATH that, for
//! a window of seconds, refuses every command with the engine's own
//! "connection refused" / "Cannot connect to the Docker daemon" line and
//! exit 125, then runs the real CLI. The window opens now or at the first
//! command that has a given word (`run`: the create of a new container).
//! It can also hold every command with a given word for a few seconds, so
//! a swap job sits between its rename and its create for a test to kill
//! svc-swap there. Whatever runs with [`Outage::path`] as PATH (svc-swap,
//! the far-side job it starts, sweep) sees it; the test's own engine calls
//! (testkit::podman) do not.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SCRIPT: &str = r#"#!/bin/sh
d=$(dirname "$0")/ctl
now=$(date +%s)
if [ -s "$d/trigger" ] && [ ! -s "$d/until" ]; then
  t=$(cat "$d/trigger")
  for w in "$@"; do
    [ "$w" = "$t" ] && { echo $((now + $(cat "$d/secs"))) >"$d/until"; break; }
  done
fi
if [ -s "$d/until" ] && [ "$now" -lt "$(cat "$d/until")" ]; then
  case $1 in version|--version) [ -e "$d/spare-version" ] && exec "$REAL" "$@" ;; esac
  printf '%s\n' "$*" >>"$d/refused"
  echo "$MSG" >&2
  exit 125
fi
if [ -s "$d/slow" ]; then
  for w in "$@"; do
    [ "$w" = "$(cat "$d/slow")" ] && { : >"$d/slowed"; sleep "$(cat "$d/slow_s")"; break; }
  done
fi
exec "$REAL" "$@"
"#;

/// The stand-in engine CLI and the files that steer it.
pub struct Outage {
    pub dir: PathBuf,
    ctl: PathBuf,
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

impl Outage {
    /// A stand-in for `engine` (`podman` or `docker`), passing everything
    /// to the real one until told otherwise.
    pub fn new(engine: &str) -> Outage {
        let out = Command::new("sh")
            .args(["-c", "command -v \"$1\"", "sh", engine])
            .output()
            .expect("sh runs");
        let real = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(!real.is_empty(), "{engine} is not installed");
        let msg = match engine {
            "docker" => "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?",
            _ => "Error: unable to connect to Podman socket: dial unix /run/podman/podman.sock: connect: connection refused",
        };
        let dir = crate::temp_dir("outage");
        let ctl = dir.join("ctl");
        std::fs::create_dir_all(&ctl).unwrap();
        let text = SCRIPT
            .replace("\"$REAL\"", &format!("'{real}'"))
            .replace("\"$MSG\"", &format!("'{msg}'"));
        let bin = dir.join(engine);
        std::fs::write(&bin, text).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        Outage { dir, ctl }
    }

    /// PATH with the stand-in first.
    pub fn path(&self) -> String {
        format!(
            "{}:{}",
            self.dir.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    fn put(&self, name: &str, text: &str) {
        std::fs::write(self.ctl.join(name), text).unwrap();
    }

    /// Refuse every command for `secs` from now.
    pub fn now(&self, secs: u64) {
        self.put("until", &(now_s() + secs).to_string());
    }

    /// Refuse every command for `secs` from the first that has the word
    /// `word` (that one included).
    pub fn from_first(&self, word: &str, secs: u64) {
        self.put("secs", &secs.to_string());
        self.put("trigger", word);
    }

    /// `version` and `--version` answer during the window (the engine
    /// probe and podman-compose's own check pass; the commands after them
    /// fail).
    pub fn spare_version(&self) {
        self.put("spare-version", "");
    }

    /// Hold each command with the word `word` for `secs` before running it.
    pub fn slow(&self, word: &str, secs: u64) {
        self.put("slow_s", &secs.to_string());
        self.put("slow", word);
    }

    /// Wait (up to `limit`) until a held command began.
    pub fn await_slowed(&self, limit: Duration) {
        let t0 = Instant::now();
        while !self.ctl.join("slowed").exists() {
            assert!(t0.elapsed() < limit, "no command was held");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The commands refused so far, one a line.
    pub fn refused(&self) -> String {
        std::fs::read_to_string(self.ctl.join("refused")).unwrap_or_default()
    }

    /// Wait until the window has closed.
    pub fn await_end(&self) {
        let until: u64 = std::fs::read_to_string(self.ctl.join("until"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        while now_s() < until {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Outage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
