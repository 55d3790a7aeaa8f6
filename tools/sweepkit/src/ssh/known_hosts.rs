//! known_hosts for the SSH transport: which key types are on file for a host
//! (so the host-key method can be pinned before the handshake), the check
//! after it, and OpenSSH's `accept-new` (append an unknown host's key).
//! Through a ProxyJump each hop is checked under its own name.
//!
//! libssh2's `check_port` ignores the key type: with an RSA key on file and
//! an ed25519 key offered it says "mismatch". Pinning the method preference to
//! the types on file makes the server offer a key we can actually compare.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD_NO_PAD};
use base64::engine::DecodePaddingMode;
use base64::Engine;
use ssh2::{CheckResult, HashType, KnownHostFileKind, KnownHosts, MethodType, Session};

use super::SshConfig;
use crate::transport::TransportError;

/// The known_hosts files consulted for one connection.
#[derive(Debug, Clone)]
pub(crate) struct HostKeyFiles {
    /// The user's file: read, and appended to under `accept-new`.
    pub user: PathBuf,
    /// Read-only system-wide files (`/etc/ssh/ssh_known_hosts`).
    pub system: Vec<PathBuf>,
}

/// Why known_hosts could not be read or written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KnownHostsError {
    #[error("known_hosts init: {0}")]
    Init(ssh2::Error),
    /// A file or directory that could not be read, created or written.
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    #[error("server sent a malformed host key")]
    MalformedKey,
}

fn io_at(path: &Path) -> impl FnOnce(std::io::Error) -> KnownHostsError + '_ {
    move |err| KnownHostsError::Io {
        path: path.to_path_buf(),
        err,
    }
}

/// What a known_hosts lookup for one host found.
pub(crate) struct OnFile {
    hosts: KnownHosts,
    /// Key types on file for this host, in file order (`ssh-ed25519`, ...).
    pub types: Vec<String>,
}

/// Load every readable file line by line (libssh2 rejects a whole file for
/// one line it cannot parse, such as an `sk-` key or a marker) and find the
/// key types recorded for `host:port`.
pub(crate) fn load(
    sess: &Session,
    files: &HostKeyFiles,
    host: &str,
    port: u16,
) -> Result<OnFile, KnownHostsError> {
    let mut hosts = sess.known_hosts().map_err(KnownHostsError::Init)?;
    for path in std::iter::once(&files.user).chain(files.system.iter()) {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_at(path)(e)),
        };
        for line in text.lines() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') || l.starts_with('@') {
                continue;
            }
            let _ = hosts.read_str(l, KnownHostFileKind::OpenSSH);
        }
    }
    let mut types = Vec::new();
    for entry in hosts.hosts().unwrap_or_default() {
        let Ok(blob) = B64.decode(entry.key()) else {
            continue;
        };
        if !matches!(hosts.check_port(host, port, &blob), CheckResult::Match) {
            continue;
        }
        if let Some(t) = key_type(&blob) {
            if !types.contains(&t) {
                types.push(t);
            }
        }
    }
    Ok(OnFile { hosts, types })
}

impl OnFile {
    /// Compare the key the server offered with the file.
    pub fn check(&self, host: &str, port: u16, blob: &[u8]) -> CheckResult {
        if self.types.is_empty() {
            return CheckResult::NotFound;
        }
        self.hosts.check_port(host, port, blob)
    }
}

/// The host-key method names that offer a key of known_hosts type `t`.
pub(crate) fn methods_for_type(t: &str) -> Vec<&'static str> {
    match t {
        "ssh-ed25519" => vec!["ssh-ed25519"],
        "ssh-rsa" => vec!["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
        "ecdsa-sha2-nistp256" => vec!["ecdsa-sha2-nistp256"],
        "ecdsa-sha2-nistp384" => vec!["ecdsa-sha2-nistp384"],
        "ecdsa-sha2-nistp521" => vec!["ecdsa-sha2-nistp521"],
        "ssh-dss" => vec!["ssh-dss"],
        _ => vec![],
    }
}

/// The name known_hosts uses for `host:port` (`[host]:port` off port 22).
pub(crate) fn host_pattern(host: &str, port: u16) -> String {
    if port == 22 {
        host.to_string()
    } else {
        format!("[{host}]:{port}")
    }
}

/// Append `host:port`'s key to `path` (creating `~/.ssh` 0700 if needed),
/// as OpenSSH's `StrictHostKeyChecking accept-new` does.
pub(crate) fn append(
    path: &Path,
    host: &str,
    port: u16,
    blob: &[u8],
) -> Result<(), KnownHostsError> {
    let t = key_type(blob).ok_or(KnownHostsError::MalformedKey)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(io_at(dir))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
            }
        }
    }
    // A file that does not end in a newline would glue our line to its last.
    let needs_nl = std::fs::read(path)
        .map(|b| !b.is_empty() && !b.ends_with(b"\n"))
        .unwrap_or(false);
    let line = format!(
        "{}{} {t} {}\n",
        if needs_nl { "\n" } else { "" },
        host_pattern(host, port),
        B64.encode(blob)
    );
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()))
        .map_err(io_at(path))
}

/// The key type named at the start of an SSH public-key blob.
pub(crate) fn key_type(blob: &[u8]) -> Option<String> {
    let len = u32::from_be_bytes(blob.get(..4)?.try_into().ok()?) as usize;
    let name = blob.get(4..4 + len)?;
    std::str::from_utf8(name).ok().map(str::to_string)
}

/// Base64 as known_hosts writes keys: standard alphabet, padded; an entry
/// whose padding was stripped still reads (as the hand-written decoder this
/// replaced allowed).
const B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Restrict the host-key methods to the key types on file, so the server
/// offers a key `check_port` can compare (it ignores types). Returns whether
/// anything was pinned.
pub(crate) fn pin_host_key_methods(sess: &Session, types: &[String]) -> bool {
    let supported = sess.supported_algs(MethodType::HostKey).unwrap_or_default();
    let prefs: Vec<&str> = types
        .iter()
        .flat_map(|t| methods_for_type(t))
        .filter(|m| supported.contains(m))
        .collect();
    !prefs.is_empty()
        && sess
            .method_pref(MethodType::HostKey, &prefs.join(","))
            .is_ok()
}

/// OpenSSH's form of the server's key fingerprint (`SHA256:...`).
fn fingerprint(sess: &Session) -> String {
    match sess.host_key_hash(HashType::Sha256) {
        Some(h) => format!("SHA256:{}", STANDARD_NO_PAD.encode(h)),
        None => "(no fingerprint)".into(),
    }
}

pub(crate) fn check_host_key(
    cfg: &SshConfig,
    sess: &Session,
    on_file: &OnFile,
    files: &HostKeyFiles,
) -> Result<(), TransportError> {
    let t = &cfg.target;
    let (blob, _) = sess
        .host_key()
        .ok_or_else(|| TransportError::HostKey(format!("{t}: the server sent no host key")))?;
    let ktype = key_type(blob).unwrap_or_else(|| "unknown".into());
    let fp = fingerprint(sess);
    let pattern = host_pattern(&t.host, t.port);
    let file = files.user.display();
    match on_file.check(&t.host, t.port, blob) {
        CheckResult::Match => Ok(()),
        CheckResult::Mismatch => Err(TransportError::HostKey(format!(
            "{t}: HOST KEY MISMATCH: the server's {ktype} key {fp} differs from the one \
             on file in {file}; refusing to connect (possible man-in-the-middle; if the \
             host was reinstalled, remove its line: ssh-keygen -R '{pattern}' -f {file})"
        ))),
        CheckResult::NotFound if cfg.accept_new_host_key => {
            append(&files.user, &t.host, t.port, blob).map_err(|e| {
                TransportError::HostKey(format!("{t}: recording the new host key: {e}"))
            })?;
            crate::diag::warn(format!("added {pattern} ({ktype} {fp}) to {file}"));
            Ok(())
        }
        CheckResult::NotFound => Err(TransportError::HostKey(format!(
            "{t}: unknown host: its {ktype} key {fp} is not in {file}; check the \
             fingerprint and add it (ssh-keyscan -p {} {} >> {file}), or pass \
             --accept-new-host-key",
            t.port, t.host
        ))),
        CheckResult::Failure => Err(TransportError::HostKey(format!(
            "{t}: cannot check the host key against {file}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_hosts_base64_is_padded_and_reads_unpadded() {
        assert_eq!(B64.encode(b"fo"), "Zm8=");
        assert_eq!(B64.decode("Zm8=").unwrap(), b"fo");
        assert_eq!(B64.decode("Zm8").unwrap(), b"fo");
        assert!(B64.decode("Zm8*").is_err());
        // OpenSSH prints SHA256 fingerprints without padding.
        assert_eq!(STANDARD_NO_PAD.encode(b"fo"), "Zm8");
    }

    #[test]
    fn key_type_reads_blob_prefix() {
        let mut blob = 11u32.to_be_bytes().to_vec();
        blob.extend_from_slice(b"ssh-ed25519");
        blob.extend_from_slice(&[0, 0, 0, 32]);
        assert_eq!(key_type(&blob).as_deref(), Some("ssh-ed25519"));
        assert_eq!(key_type(&[0, 0, 0, 40, b'x']), None);
    }

    #[test]
    fn host_pattern_brackets_non_default_port() {
        assert_eq!(host_pattern("gpu1", 22), "gpu1");
        assert_eq!(host_pattern("127.0.0.1", 2222), "[127.0.0.1]:2222");
    }
}
