//! The API key on its way to the jobs. sbatch exports the caller's whole
//! environment to the job by default (`--export=ALL`), and slurmctld keeps
//! that environment with the job in its state files, where the cluster's
//! administrators (and `scontrol show job --details`' readers of the
//! script) are not the user. So the keys the tools read
//! (`SWEEPKIT_API_KEY`, and `OPENAI_API_KEY` for `--server openai`) leave
//! sbatch's environment ([`super::client::sbatch`]) and reach the jobs in
//! `RESULTS.slurm/secrets.env`, a file only its owner reads (mode 0600,
//! on the file system the nodes share), which the batch script exports;
//! the sweep removes it at its end.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;

use anyhow::anyhow;
use sweepkit::exit;
use sweepkit::exit::Exit;

/// The variables that carry a key to the tools.
pub const NAMES: [&str; 2] = ["SWEEPKIT_API_KEY", "OPENAI_API_KEY"];

/// The file the batch script reads them from, in the sweep's folder.
pub const FILE: &str = "secrets.env";

/// `NAME=VALUE` lines of the keys set here (`get` reads a variable).
pub fn lines(get: impl Fn(&str) -> Option<String>) -> String {
    NAMES
        .iter()
        .filter_map(|n| {
            get(n)
                .filter(|v| !v.is_empty() && !v.contains('\n'))
                .map(|v| format!("{n}={v}\n"))
        })
        .collect()
}

/// Write the keys set in this environment to `dir`/[`FILE`], readable by
/// its owner only (made so before a byte is written); none set: no file.
/// Its path, when written.
pub fn stage(dir: &str) -> Result<Option<String>, Exit> {
    let text = lines(|n| std::env::var(n).ok());
    let path = format!("{dir}/{FILE}");
    let _ = std::fs::remove_file(&path);
    if text.is_empty() {
        return Ok(None);
    }
    let fail = |e: std::io::Error| Exit::new(exit::FAILURE, anyhow!("{path}: {e}"));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(fail)?;
    f.write_all(text.as_bytes()).map_err(fail)?;
    Ok(Some(path))
}

/// The sweep ended: no job of it reads the file any more.
pub fn remove(dir: &str) {
    let _ = std::fs::remove_file(format!("{dir}/{FILE}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn only_the_keys_set_go_in_the_file_and_only_its_owner_reads_it() {
        let env = |n: &str| (n == "SWEEPKIT_API_KEY").then(|| "k-1".to_string());
        assert_eq!(lines(env), "SWEEPKIT_API_KEY=k-1\n");
        assert_eq!(lines(|_| Some(String::new())), "");
        assert_eq!(lines(|_| Some("a\nb".into())), "", "no line of its own");
        let dir = testkit::temp_dir("sweep-plan-secrets");
        let d = dir.to_str().unwrap();
        std::fs::write(dir.join(FILE), "stale").unwrap();
        let written = stage(d).unwrap();
        let f = dir.join(FILE);
        match written {
            Some(_) => {
                let mode = std::fs::metadata(&f).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
            }
            None => assert!(!f.exists(), "a stale file goes"),
        }
        remove(d);
        assert!(!f.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
