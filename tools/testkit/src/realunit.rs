//! A real vLLM or SGLang as a systemd unit in a throw-away container
//! (testkit::nspawn): the container is the host's own / volatile (a tmpfs
//! with the host's /usr read-only), so the real-peer cache (venvs, models,
//! the sgl_kernel stand-in) and the interpreter the venvs were made from
//! are bound read-only at their host paths. The unit is written and
//! daemon-reloaded but never started: the sweep's first swap starts it, so
//! a unit-based check costs no server start of its own.

use std::path::{Path, PathBuf};

use crate::nspawn::Container;
use crate::realpeer::Peers;

/// The port every real server listens on inside its container: the
/// container has its own network namespace, so no other test can take it.
pub const PORT: u16 = 8000;

/// A booted container holding one real server's unit.
pub struct UnitHost {
    pub c: Container,
    pub unit: String,
}

/// The Python installation a venv's interpreter is a symlink into (uv
/// makes venvs whose bin/python points at the base interpreter, e.g.
/// /root/.pyenv/versions/3.11.7/bin/python3.11): its prefix, two levels up.
pub fn python_prefix(venv_python: &Path) -> PathBuf {
    let real = std::fs::canonicalize(venv_python)
        .unwrap_or_else(|e| panic!("{}: {e}: rerun make real-peer", venv_python.display()));
    real.parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("{}: no prefix above bin/", real.display()))
        .to_path_buf()
}

impl UnitHost {
    /// Boot a container with the cache and `python`'s prefix bound, and
    /// install `unit`.service running `exec` with `env` (unstarted).
    pub fn install(p: &Peers, python: &Path, unit: &str, exec: &str, env: &[(&str, &str)]) -> Self {
        let cache = PathBuf::from(p.str("cache"));
        assert!(
            cache.is_dir(),
            "{}: no cache directory in the manifest",
            p.path.display()
        );
        let prefix = python_prefix(python);
        let (cache_s, prefix_s) = (path_str(&cache), path_str(&prefix));
        let c = Container::boot(&[(cache.as_path(), &cache_s), (prefix.as_path(), &prefix_s)])
            .expect("boot a container for the real server's unit");
        // PYTHONUNBUFFERED: a process spec's server inherits it from the test
        // environment; a unit's must be told, or its log reaches the journal
        // in 8 KiB blocks and a crash's last lines can come late.
        let mut words = vec!["PYTHONUNBUFFERED=1".to_string()];
        words.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        // TimeoutStopSec=10: a vLLM that loses SIGTERM while loading is
        // killed by systemd in 10 s instead of the default 90.
        let text = format!(
            "[Unit]\nDescription=sweepkit real {unit}\n[Service]\nExecStart={exec}\n\
             Environment={}\nTimeoutStopSec=10\n",
            words.join(" ")
        );
        c.write_file(&format!("/etc/systemd/system/{unit}.service"), &text);
        c.sh("systemctl daemon-reload");
        UnitHost {
            c,
            unit: unit.to_string(),
        }
    }

    /// `nsenter -t PID -n --`: run a host binary in the container's
    /// network namespace (its 127.0.0.1 is the server's).
    pub fn net_prefix(&self) -> Vec<String> {
        ["nsenter", "-t", &self.c.pid1.to_string(), "-n", "--"]
            .map(String::from)
            .to_vec()
    }

    /// The sweep arguments that drive this unit through the exec prefix.
    pub fn sweep_target(&self) -> Vec<String> {
        [
            "--unit",
            &self.unit,
            "--exec-prefix",
            &self.c.exec_prefix(),
            "--url",
            &format!("http://127.0.0.1:{PORT}"),
        ]
        .map(String::from)
        .to_vec()
    }

    /// The unit's journal (for failure messages and log checks).
    pub fn journal(&self, lines: u32) -> String {
        let o = self.c.run(&[
            "journalctl",
            "-u",
            &self.unit,
            "-n",
            &lines.to_string(),
            "-o",
            "cat",
            "--no-pager",
        ]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// A file inside the container ("" when it does not exist).
    pub fn read(&self, path: &str) -> String {
        let o = self.c.run(&["cat", path]);
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

fn path_str(p: &Path) -> String {
    p.to_str()
        .unwrap_or_else(|| panic!("{}: not UTF-8", p.display()))
        .to_string()
}
