//! `--ssh`'s value as the user wrote it: `[user@]host[:port]`, where host
//! may be an alias of `~/.ssh/config`. User and port stay unset when not
//! written, so the config file (and then the local user, port 22) can fill
//! them in, as OpenSSH does.

use std::fmt;
use std::str::FromStr;

/// An SSH destination before the config file is consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SshDest {
    pub user: Option<String>,
    /// A host name, address or `~/.ssh/config` alias.
    pub host: String,
    pub port: Option<u16>,
}

/// Why a destination does not read as `[USER@]HOST[:PORT]`; each names
/// the value as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DestError {
    #[error("'{0}': port '{1}' is not a number in 1..65535")]
    Port(String, String),
    #[error("'{0}': expected [USER@]HOST[:PORT]")]
    Shape(String),
    #[error("'{0}': missing ']' after IPv6 address")]
    Bracket(String),
    #[error("'{0}': expected ':PORT' after ']', found '{1}'")]
    AfterBracket(String, String),
    /// An `SshTarget` needs a user, and neither the value nor the
    /// environment gave one.
    #[error("'{0}': no user: write USER@HOST")]
    NoUser(String),
}

impl FromStr for SshDest {
    type Err = DestError;

    /// Parse `[user@]host[:port]` (`[v6addr]:port` for IPv6).
    fn from_str(s: &str) -> Result<Self, DestError> {
        let (user, rest) = match s.rsplit_once('@') {
            Some((u, r)) => (Some(u.to_string()), r),
            None => (None, s),
        };
        let (host, port) = split_host_port(s, rest)?;
        let port = match port {
            None => None,
            Some(p) => Some(
                p.parse::<u16>()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| DestError::Port(s.into(), p.into()))?,
            ),
        };
        let bad = |w: &str| w.is_empty() || w.starts_with('-') || w.contains(char::is_whitespace);
        if user.as_deref().is_some_and(bad) || bad(host) {
            return Err(DestError::Shape(s.into()));
        }
        Ok(SshDest {
            user,
            host: host.to_string(),
            port,
        })
    }
}

/// `host[:port]` or `[v6]:port`; a bare IPv6 address has several colons
/// and no port.
fn split_host_port<'a>(s: &str, rest: &'a str) -> Result<(&'a str, Option<&'a str>), DestError> {
    if let Some(r) = rest.strip_prefix('[') {
        let (h, after) = r
            .split_once(']')
            .ok_or_else(|| DestError::Bracket(s.into()))?;
        return match after {
            "" => Ok((h, None)),
            p => Ok((
                h,
                Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| DestError::AfterBracket(s.into(), p.into()))?,
                ),
            )),
        };
    }
    if rest.matches(':').count() == 1 {
        let (h, p) = rest.split_once(':').expect("one colon");
        return Ok((h, Some(p)));
    }
    Ok((rest, None))
}

impl fmt::Display for SshDest {
    /// As written (so a record carries the alias, and the next stage
    /// resolves it through the same config).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(u) = &self.user {
            write!(f, "{u}@")?;
        }
        match (self.host.contains(':'), self.port) {
            (true, Some(p)) => write!(f, "[{}]:{p}", self.host),
            (false, Some(p)) => write!(f, "{}:{p}", self.host),
            (_, None) => write!(f, "{}", self.host),
        }
    }
}

/// The local user name, as ssh picks it: `$USER`, `$LOGNAME`, else the
/// password database entry of the real uid (so a cron job or a container
/// without `$USER` still works).
pub fn local_user() -> Option<String> {
    for v in ["USER", "LOGNAME"] {
        if let Ok(u) = std::env::var(v) {
            if !u.is_empty() {
                return Some(u);
            }
        }
    }
    passwd_name()
}

/// `getpwuid_r(getuid())`'s name.
pub(crate) fn passwd_name() -> Option<String> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: an all-zero passwd is a valid out-parameter; getpwuid_r fills
    // it with pointers into `buf`, which outlives every read below.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: valid pointers to live values and `buf`'s true length.
    let rc = unsafe {
        libc::getpwuid_r(
            libc::getuid(),
            &mut pw,
            buf.as_mut_ptr().cast(),
            buf.len(),
            &mut out,
        )
    };
    if rc != 0 || out.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name points to a NUL-terminated string inside `buf`.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) };
    name.to_str().ok().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_as_written() {
        for (s, user, host, port) in [
            ("gpu1", None, "gpu1", None),
            ("root@gpu1", Some("root"), "gpu1", None),
            ("gpu1:2222", None, "gpu1", Some(2222)),
            ("a@[::1]:22", Some("a"), "::1", Some(22)),
            ("fe80::1", None, "fe80::1", None),
        ] {
            let d: SshDest = s.parse().unwrap();
            assert_eq!(
                (d.user.as_deref(), d.host.as_str(), d.port),
                (user, host, port)
            );
            assert_eq!(d.to_string(), s);
        }
        for bad in ["root@", "@h", "h:0", "h:x", "[::1", "-oProxy=x", "a b"] {
            assert!(bad.parse::<SshDest>().is_err(), "{bad}");
        }
    }

    #[test]
    fn passwd_name_is_the_real_user() {
        let out = std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap();
        let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(passwd_name().as_deref(), Some(id.as_str()));
    }
}
