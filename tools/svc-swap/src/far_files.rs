//! Files made here that a flag must name on the far side: `--set-file
//! FLAG=PATH` and the adaptive config of an `--apply-from` schedule
//! (SGLang's `--speculative-adaptive-config FILE`). Each is copied through
//! the swap's own transport (local, exec prefix, SSH) to a content-addressed
//! path, checked there by size and SHA-256, and only then is the flag set
//! to the far path; a mismatch is exit 29 before anything is stopped.
//!
//! Why an explicit flag rather than guessing which `--set` values are
//! files: a value such as `config.json` may name a file that exists only on
//! the far side, or one that happens to exist here too; copying on a guess
//! would silently replace the far one. `--set-file` says it; `--set` never
//! copies.
//!
//! The far path is `DIR/SHA16-NAME` (the first 16 hex digits of the
//! SHA-256, then the local file's name): the same content always lands on
//! the same path, so a second swap with the same file is a no-op, and a
//! rollback to the old config still finds the old file (files are never
//! removed by svc-swap). DIR is `--file-dir`, else
//! `/var/lib/sweepkit-swap/files` for a systemd unit (persistent, unlike
//! /run, so the unit still starts after a reboot) and `SPEC.sweepkit-files`
//! for a process spec (beside the spec, writable by whoever may edit it).

use std::time::Duration;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::CopiedFile;
use sweepkit::transport::Transport;

use crate::flags::{FlagName, Op};

/// A file to put on the far side for `flag`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFlag {
    pub flag: FlagName,
    /// The local path, or where the content came from (`FILE#adaptive_config`).
    pub source: String,
    pub bytes: Vec<u8>,
}

impl FileFlag {
    /// `--set-file FLAG=PATH`: read PATH now, so what is checked is what
    /// is sent.
    pub fn parse(s: &str) -> Result<FileFlag, Exit> {
        let usage = |m: String| Exit::new(exit::USAGE, anyhow::anyhow!("--set-file {m}"));
        let Some((f, path)) = s.split_once('=').filter(|(_, p)| !p.is_empty()) else {
            return Err(usage(format!("{s}: give FLAG=PATH (a local file)")));
        };
        let flag = FlagName::parse(f).map_err(|e| usage(format!("{s}: {e}")))?;
        let bytes =
            std::fs::read(path).map_err(|e| usage(format!("{s}: cannot read {path}: {e}")))?;
        Ok(FileFlag {
            flag,
            source: path.to_string(),
            bytes,
        })
    }

    pub fn sha256(&self) -> String {
        sweepkit::sha256::hex(&self.bytes)
    }

    /// `DIR/SHA16-NAME`; NAME keeps only characters safe in any path.
    pub fn far_path(&self, dir: &str) -> String {
        let base = self
            .source
            .split('#')
            .next()
            .unwrap_or("")
            .rsplit('/')
            .next()
            .unwrap_or("");
        let name: String = base
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || "._-".contains(c) {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let name = if name.trim_matches('.').is_empty() {
            "file".to_string()
        } else {
            name
        };
        let sha = self.sha256();
        format!("{}/{}-{name}", dir.trim_end_matches('/'), &sha[..16])
    }

    /// The edit that sets the flag to the far path.
    pub fn op(&self, dir: &str) -> Op {
        Op::Set {
            flag: self.flag.clone(),
            value: Some(self.far_path(dir)),
        }
    }

    /// What the swap record says of it.
    pub fn record(&self, dir: &str) -> CopiedFile {
        CopiedFile {
            flag: self.flag.spelled(),
            local_path: self.source.clone(),
            far_path: self.far_path(dir),
            sha256: self.sha256(),
            size_bytes: self.bytes.len() as u64,
            host_path: None,
        }
    }
}

/// With `--container`: the host directory behind container directory
/// `dir`, from inspect's `Mounts` (Docker and podman both list bind mounts
/// there as `Type: bind`, `Source`, `Destination`); the deepest mount
/// holding `dir` wins. The re-created container keeps its mounts
/// (`container/create.rs` carries `HostConfig.Binds` and `Mounts`), so a
/// file written there is what the new container reads.
pub fn bind_source(inspect: &serde_json::Value, dir: &str) -> Option<String> {
    let dir = dir.trim_end_matches('/');
    inspect
        .get("Mounts")?
        .as_array()?
        .iter()
        .filter(|m| m.get("Type").and_then(|t| t.as_str()) == Some("bind"))
        .filter_map(|m| {
            let d = m.get("Destination")?.as_str()?.trim_end_matches('/');
            let src = m.get("Source")?.as_str()?.trim_end_matches('/');
            let rest = dir.strip_prefix(d)?;
            (rest.is_empty() || rest.starts_with('/')).then(|| (d.len(), format!("{src}{rest}")))
        })
        .max_by_key(|(n, _)| *n)
        .map(|(_, s)| if s.is_empty() { "/".into() } else { s })
}

/// The container's inspect object (the engine picked as the swap does).
pub fn inspect_raw(
    t: &dyn Transport,
    want: Option<sweepkit::engine::Engine>,
    name: &str,
) -> Result<serde_json::Value, Exit> {
    let e = sweepkit::engine::pick(t, want)?;
    Ok(crate::container::inspect(t, e, name)?.raw)
}

/// `--container`: copy into the host directory behind `dir` (a directory
/// inside the container on one of its bind mounts); the records name the
/// container path and the host path.
pub fn upload_container(
    t: &dyn Transport,
    files: &[FileFlag],
    dir: &str,
    inspect: &serde_json::Value,
    name: &str,
) -> Result<Vec<CopiedFile>, Exit> {
    let Some(host) = bind_source(inspect, dir) else {
        return Err(Exit::new(
            exit::USAGE,
            anyhow::anyhow!(
                "--file-dir {dir}: not on a bind mount of container {name}; give a \
                 directory inside the container that a bind mount (-v HOST:DIR) holds"
            ),
        ));
    };
    let mut recs = upload(t, files, &host)?;
    for (r, f) in recs.iter_mut().zip(files) {
        r.host_path = Some(std::mem::replace(&mut r.far_path, f.far_path(dir)));
    }
    Ok(recs)
}

/// The far directory: `--file-dir`, else the manager's default.
pub fn dir(args: &crate::cli::Args, manager: crate::cli::Manager) -> Result<String, Exit> {
    if let Some(d) = &args.file_dir {
        if !d.starts_with('/') {
            return Err(Exit::new(
                exit::USAGE,
                anyhow::anyhow!(
                    "--file-dir {d}: give an absolute path (it names a far-side directory)"
                ),
            ));
        }
        return Ok(d.clone());
    }
    Ok(match manager {
        crate::cli::Manager::Process => {
            format!(
                "{}.sweepkit-files",
                args.spec.as_deref().unwrap_or_default()
            )
        }
        _ => "/var/lib/sweepkit-swap/files".into(),
    })
}

/// The far-side check: write stdin to a temp file, compare its size and
/// SHA-256 with `$2` and `$3`, rename it to `$1` only when both match (else
/// remove it, print what arrived, exit 9). Every value is a positional
/// parameter of this constant script, never spliced into shell text. The
/// first line names it, so a test's exec prefix can tamper with uploads.
const UPLOAD_SCRIPT: &str = r#"# sweepkit-upload: $1 path, $2 size, $3 sha256
t="$1.sweepkit-part.$$"
trap 'rm -f -- "$t"; exit 1' HUP INT TERM PIPE
cat > "$t" || { rm -f -- "$t"; exit 1; }
n=$(wc -c < "$t" | tr -d ' ')
s=$(sha256sum < "$t") || { rm -f -- "$t"; echo "sha256sum failed" >&2; exit 1; }
s=${s%% *}
if [ "$n" != "$2" ] || [ "$s" != "$3" ]; then
  rm -f -- "$t"; printf '%s %s\n' "$n" "$s"; exit 9
fi
chmod 0644 -- "$t" && mv -f -- "$t" "$1" || { rm -f -- "$t"; exit 1; }"#;

/// Copy each file to `dir` on the far side and check it there. Runs before
/// the stop: an error leaves the running server as it was.
pub fn upload(t: &dyn Transport, files: &[FileFlag], dir: &str) -> Result<Vec<CopiedFile>, Exit> {
    let timeout = Duration::from_secs(120);
    let mut out = Vec::new();
    for f in files {
        let rec = f.record(dir);
        let parent = rec.far_path.rsplit_once('/').map_or("/", |(d, _)| d);
        let parent = if parent.is_empty() { "/" } else { parent };
        crate::far_side::check(
            t,
            &["mkdir", "-p", "--", parent],
            crate::far_side::SHORT,
            exit::FAILURE,
        )?;
        let size = rec.size_bytes.to_string();
        let argv = [
            "sh",
            "-c",
            UPLOAD_SCRIPT,
            "sh",
            &rec.far_path,
            &size,
            &rec.sha256,
        ];
        let o = crate::far_side::run_in(t, &argv, Some(&f.bytes), timeout)?;
        match o.status {
            Some(0) => {}
            Some(9) => return Err(mismatch(t, &rec, &o.stdout_str())),
            _ => {
                let why = o.stderr_str();
                return Err(Exit::new(
                    exit::FAILURE,
                    anyhow::anyhow!(
                        "--set-file {}: copying {} to {} on {} failed: {}; nothing was stopped",
                        rec.flag,
                        rec.local_path,
                        rec.far_path,
                        t.describe(),
                        why.lines().last().unwrap_or("").trim()
                    ),
                ));
            }
        }
        out.push(rec);
    }
    Ok(out)
}

fn mismatch(t: &dyn Transport, rec: &CopiedFile, got: &str) -> Exit {
    let mut w = got.split_whitespace();
    let (n, s) = (w.next().unwrap_or("?"), w.next().unwrap_or("?"));
    Exit::new(
        exit::FILE_MISMATCH,
        anyhow::anyhow!(
            "--set-file {}: {} arrived at {} on {} as {n} bytes, sha256 {s} \
             (sent {} bytes, sha256 {}); removed there, nothing was stopped",
            rec.flag,
            rec.local_path,
            rec.far_path,
            t.describe(),
            rec.size_bytes,
            rec.sha256
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ff(source: &str, bytes: &[u8]) -> FileFlag {
        FileFlag {
            flag: FlagName::parse("speculative-adaptive-config").unwrap(),
            source: source.into(),
            bytes: bytes.to_vec(),
        }
    }

    #[test]
    fn far_path_is_content_addressed_and_path_safe() {
        let a = ff("/home/u/my sched $(x).json", b"{}");
        let p = a.far_path("/var/lib/x/");
        assert_eq!(p, "/var/lib/x/44136fa355b3678a-my_sched___x_.json");
        assert_eq!(
            ff("/elsewhere/my sched $(x).json", b"{}").far_path("/var/lib/x"),
            p
        );
        assert_ne!(
            ff("a.json", b"{ }").far_path("/d"),
            ff("a.json", b"{}").far_path("/d")
        );
        assert!(ff("r.jsonl#adaptive_config", b"{}")
            .far_path("/d")
            .ends_with("-r.jsonl"));
        assert!(ff("..", b"{}").far_path("/d").ends_with("-file"));
    }

    #[test]
    fn the_deepest_bind_mount_holding_the_dir_is_used() {
        let i = serde_json::json!({"Mounts": [
            {"Type": "bind", "Source": "/srv/a", "Destination": "/cfg"},
            {"Type": "bind", "Source": "/srv/b/", "Destination": "/cfg/sched"},
            {"Type": "volume", "Source": "/v", "Destination": "/data"}]});
        assert_eq!(bind_source(&i, "/cfg/sched/x").as_deref(), Some("/srv/b/x"));
        assert_eq!(bind_source(&i, "/cfg/").as_deref(), Some("/srv/a"));
        assert_eq!(bind_source(&i, "/cfgx"), None);
        assert_eq!(
            bind_source(&i, "/data"),
            None,
            "a named volume's source is not ours"
        );
    }

    #[test]
    fn set_file_needs_flag_and_a_readable_path() {
        assert_eq!(FileFlag::parse("x").unwrap_err().code, exit::USAGE);
        assert_eq!(FileFlag::parse("x=").unwrap_err().code, exit::USAGE);
        let e = FileFlag::parse("x=/nonexistent/f").unwrap_err();
        assert_eq!(e.code, exit::USAGE);
        let m = format!("{:#}", e.error.unwrap());
        assert!(
            m.starts_with("--set-file x=/nonexistent/f: cannot read"),
            "{m}"
        );
    }

    #[test]
    fn local_upload_lands_checked_and_a_tampered_one_is_refused() {
        let t = sweepkit::transport::Local::new();
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("far dir").to_str().unwrap().to_string();
        let f = ff("/x/a.json", b"{\"1\": {\"candidate_steps\": [1, 3]}}\n");
        let got = upload(&t, std::slice::from_ref(&f), &dir).unwrap();
        assert_eq!(std::fs::read(&got[0].far_path).unwrap(), f.bytes);
        assert_eq!(got[0].size_bytes, f.bytes.len() as u64);
        // A prefix that changes one byte on its way in (same size).
        let sed = Local::with_prefix(vec!["sh".into(), "-c".into(), TAMPER.into(), "sh".into()]);
        let g = ff("/x/b.json", b"[1]\n");
        let e = upload(&sed, std::slice::from_ref(&g), &dir).unwrap_err();
        assert_eq!(e.code, exit::FILE_MISMATCH);
        let m = format!("{:#}", e.error.unwrap());
        assert!(
            m.contains("as 4 bytes") && m.contains("nothing was stopped"),
            "{m}"
        );
        assert!(!m.contains('\n'));
        assert!(!std::path::Path::new(&g.far_path(&dir)).exists());
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(left.len(), 1, "no temp file left behind");
    }

    use sweepkit::transport::Local;
    const TAMPER: &str =
        r##"case "$3" in "# sweepkit-upload"*) sed 's/1/2/' | "$@" ;; *) exec "$@" ;; esac"##;
}
