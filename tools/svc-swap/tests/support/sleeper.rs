//! The kill tests' part: a "sleeper" spec whose running argv says which
//! config it runs, svc-swap killed whole at a random moment, and the jobs
//! it left followed with `--reattach`.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

/// A spec running `sh -c 'sleep 300' sleeper --k N`: sh keeps its argv, so
/// /proc/PID/cmdline names the config that runs.
pub struct Sleeper {
    pub dir: PathBuf,
    pub spec: String,
}

impl Sleeper {
    pub fn new(tag: &str) -> Sleeper {
        let dir = testkit::temp_dir(tag);
        let spec = dir.join("k.spec").to_str().unwrap().to_string();
        std::fs::write(
            &spec,
            "ExecStart=/bin/sh -c \"sleep 300\" sleeper --k 0\nTimeoutStopSec=1\n",
        )
        .unwrap();
        Sleeper { dir, spec }
    }

    /// A sleeper whose server takes 2 s to stop on SIGTERM (within its
    /// stop timeout): a swap stays at work long enough for a test to cut
    /// it mid-way, however fast or loaded the machine.
    pub fn slow_stop(tag: &str) -> Sleeper {
        let dir = testkit::temp_dir(tag);
        let script = dir.join("slow-stop.sh");
        std::fs::write(
            &script,
            "trap 'sleep 2; kill \"$child\" 2>/dev/null; exit 0' TERM\nsleep 300 &\nchild=$!\nwait\n",
        )
        .unwrap();
        let spec = dir.join("k.spec").to_str().unwrap().to_string();
        std::fs::write(
            &spec,
            format!(
                "ExecStart=/bin/sh {} sleeper --k 0\nTimeoutStopSec=10\n",
                script.display()
            ),
        )
        .unwrap();
        Sleeper { dir, spec }
    }

    /// Start k=0 (a restart of a stopped server): something runs.
    pub fn start(&self, base: &[String]) {
        let mut c = super::command();
        c.args(base).args(["--spec", &self.spec, "--set", "k=0"]);
        testkit::run(c, "").expect_code(0);
        assert_eq!(self.running_k().as_deref(), Some("0"));
    }

    /// The spec file's k.
    pub fn file_k(&self) -> String {
        let text = std::fs::read_to_string(&self.spec).unwrap();
        let parsed = svc_swap::process_spec::parse(&self.spec, &text)
            .unwrap_or_else(|e| panic!("torn spec: {e}\n{text}"));
        parsed.exec.words.last().unwrap().clone()
    }

    pub fn pid(&self) -> Option<u32> {
        super::spec_pid(&self.spec)
    }

    /// The k the live process runs with, `None` when nothing runs.
    pub fn running_k(&self) -> Option<String> {
        let pid = self.pid()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        if stat.rsplit(')').next()?.trim_start().starts_with('Z') {
            return None;
        }
        let argv = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let words: Vec<String> = String::from_utf8_lossy(&argv)
            .split('\0')
            .map(String::from)
            .collect();
        let at = words.iter().position(|w| w == "--k")?;
        words.get(at + 1).cloned()
    }

    pub fn state_dir(&self) -> PathBuf {
        PathBuf::from(format!("{}.sweepkit-swap", self.spec))
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        if let Some(pid) = self.pid() {
            super::kill_spec_server(pid);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Start svc-swap with `args` in its own process group and SIGKILL the
/// whole group after `delay` (as Ctrl-C or a dying terminal would).
pub fn kill_after(args: &[String], delay: Duration) {
    let mut child = super::command()
        .process_group(0)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

/// IDs of the jobs left in `dir`, oldest first.
pub fn job_ids(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.strip_suffix(".json").map(String::from)
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `svc-swap BASE --reattach ID` for each job left: its one record.
pub fn reattach_all(base: &[String], dir: &Path) -> Vec<(i32, Value)> {
    job_ids(dir)
        .into_iter()
        .map(|id| {
            let r = super::swap_with(base, &["--reattach", &id], "");
            (r.code(), r.one())
        })
        .collect()
}

/// A cheap LCG: the test's own randomness, seeded by the PID.
pub fn next(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

/// Kill svc-swap at random moments of `rounds` swaps of a sleeper spec;
/// after each, the live process runs the spec's k, which is the old or the
/// new one, and the reattached record says which. `settle`: how long a
/// far-side command already in flight when svc-swap died (over SSH it runs
/// on) may take to land.
pub fn kill_rounds(base: &[String], rounds: u32, max_ms: u64, settle: Duration) -> [usize; 2] {
    let s = Sleeper::new("killjob");
    let spec = s.spec.clone();
    let mut seed = u64::from(std::process::id());
    let mut seen = [0usize; 2];
    let mut cur = "0".to_string();
    s.start(base);
    for i in 1..=rounds {
        let mut args = base.to_vec();
        args.extend(
            ["--spec", &spec, "--set", &format!("k={i}"), "--force-kill"].map(String::from),
        );
        kill_after(&args, Duration::from_millis(next(&mut seed) % max_ms));
        std::thread::sleep(settle);
        let mut recs = reattach_all(
            &[base, &["--spec".into(), spec.clone()]].concat(),
            &s.state_dir(),
        );
        let k = s.file_k();
        let new = i.to_string();
        assert!(k == cur || k == new, "round {i}: spec k={k}, was {cur}");
        assert_eq!(s.running_k().as_deref(), Some(k.as_str()), "round {i}");
        if let Some((code, rec)) = recs.pop() {
            match rec["type"].as_str() {
                Some("swap") => {
                    assert_eq!((code, k.as_str()), (0, new.as_str()), "{rec}");
                    assert_eq!(rec["reattached"], true);
                }
                _ => {
                    assert_eq!(rec["running"], "old", "{rec}");
                    assert_eq!(rec["config"]["k"], new.as_str(), "{rec}");
                    assert_eq!(k, cur, "{rec}");
                }
            }
        }
        assert!(
            job_ids(&s.state_dir()).is_empty(),
            "jobs left after reattach"
        );
        seen[usize::from(k == new)] += 1;
        cur = k;
    }
    seen
}
