//! OpenSSH's client config (`~/.ssh/config`, or `--ssh-config FILE`) for
//! `--ssh HOST`: Host patterns with the first obtained value winning,
//! HostName, User, Port, IdentityFile, ProxyJump, StrictHostKeyChecking and
//! UserKnownHostsFile, as ssh_config(5) defines them. The ssh2-config crate
//! parses the file; this module turns one host's answer into an SshConfig
//! and points a malformed line out by file:line (the crate's errors carry
//! no line).

use std::path::{Path, PathBuf};

use super::dest::{local_user, SshDest};
use super::{home, SshConfig, SshTarget};
use crate::transport::TransportError;

use ssh2_config::{ParseRule, SshConfig as Parsed};

/// Longest ProxyJump chain followed (a config whose jump hosts jump through
/// each other would otherwise recurse forever).
const MAX_HOPS: usize = 8;

/// A parsed client config file (or none: no `~/.ssh/config`).
#[derive(Debug, Clone)]
pub struct ConfigFile {
    path: PathBuf,
    text: String,
    parsed: Option<Parsed>,
}

fn cfg_err(msg: String) -> TransportError {
    TransportError::Config(msg)
}

impl ConfigFile {
    /// Read and parse `path`, or `~/.ssh/config` when None (a missing
    /// default file is an empty config; a missing named file an error).
    pub fn load(path: Option<&Path>) -> Result<ConfigFile, TransportError> {
        let (path, named) = match path {
            Some(p) => (p.to_path_buf(), true),
            None => (home().join(".ssh/config"), false),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if !named && e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(ConfigFile::empty(path))
            }
            Err(e) => return Err(cfg_err(format!("ssh config {}: {e}", path.display()))),
        };
        let text = fence_match_blocks(&path, &text);
        let parsed = parse(&text).map_err(|e| {
            let line = bad_line(&text);
            cfg_err(format!("{}:{line}: {e}", path.display()))
        })?;
        Ok(ConfigFile {
            path,
            text,
            parsed: Some(parsed),
        })
    }

    /// No file at all: every host as written.
    pub fn empty(path: PathBuf) -> ConfigFile {
        ConfigFile {
            path,
            text: String::new(),
            parsed: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The settings for `dest`: what it says first, then the file's first
    /// obtained values, then OpenSSH's defaults (the local user, port 22).
    /// ProxyJump hops are resolved through the same file.
    pub fn resolve(&self, dest: &SshDest) -> Result<SshConfig, TransportError> {
        self.resolve_depth(dest, 0)
    }

    fn resolve_depth(&self, dest: &SshDest, depth: usize) -> Result<SshConfig, TransportError> {
        if depth > MAX_HOPS {
            return Err(cfg_err(format!(
                "{}: ProxyJump chain to '{}' is longer than {MAX_HOPS} hops (a loop?)",
                self.path.display(),
                dest.host
            )));
        }
        let p = self.parsed.as_ref().map(|c| c.query(&dest.host));
        let p = p.as_ref();
        let host = p
            .and_then(|p| p.host_name.as_deref())
            .map_or_else(|| dest.host.clone(), |h| expand_tokens(h, &dest.host));
        let user = dest
            .user
            .clone()
            .or_else(|| p.and_then(|p| p.user.clone()))
            .or_else(local_user)
            .ok_or_else(|| {
                cfg_err(format!(
                    "--ssh {dest}: no user: not in {}, no $USER and no passwd entry; \
                     write USER@HOST",
                    self.path.display()
                ))
            })?;
        let port = dest.port.or_else(|| p.and_then(|p| p.port)).unwrap_or(22);
        let mut c = SshConfig::new(SshTarget { user, host, port });
        c.key_files = p.and_then(|p| p.identity_file.clone()).unwrap_or_default();
        if let Some(p) = p {
            self.apply_host_keys(p, &mut c)?;
        }
        let hops = p
            .and_then(|p| p.proxy_jump.clone())
            .unwrap_or_default()
            .into_iter()
            .filter(|h| !h.eq_ignore_ascii_case("none"))
            .collect::<Vec<_>>();
        c.jump = self.chain(&hops, depth)?.map(Box::new);
        Ok(c)
    }

    /// `ProxyJump a,b`: b is reached through a, the target through b.
    fn chain(&self, hops: &[String], depth: usize) -> Result<Option<SshConfig>, TransportError> {
        let mut prev: Option<SshConfig> = None;
        for h in hops {
            let d: SshDest = h.parse().map_err(|e| {
                let line = self.line_of("proxyjump", h);
                cfg_err(format!("{}:{line}: ProxyJump {e}", self.path.display()))
            })?;
            let mut hop = self.resolve_depth(&d, depth + 1)?;
            if let Some(before) = prev.take() {
                // Later hops go through the earlier ones, whatever their own
                // ProxyJump says (as `ssh -J a,b` does).
                hop.jump = Some(Box::new(before));
            }
            prev = Some(hop);
        }
        Ok(prev)
    }

    /// StrictHostKeyChecking and UserKnownHostsFile (ssh2-config keeps them
    /// as raw words, first obtained value first).
    fn apply_host_keys(
        &self,
        p: &ssh2_config::HostParams,
        c: &mut SshConfig,
    ) -> Result<(), TransportError> {
        let raw = |k: &str| p.unsupported_fields.get(k).and_then(|v| v.first().cloned());
        if let Some(v) = raw("stricthostkeychecking") {
            c.accept_new_host_key = match v.to_ascii_lowercase().as_str() {
                // `ask` has no one to ask in a pipeline: strict.
                "yes" | "true" | "ask" => false,
                "accept-new" => true,
                // `no` would also accept a changed key; never do that.
                "no" | "false" | "off" => {
                    crate::diag::warn(format!(
                        "{}: StrictHostKeyChecking {v} is treated as \
                         accept-new (a changed host key is still refused)",
                        self.path.display()
                    ));
                    true
                }
                _ => {
                    let line = self.line_of("stricthostkeychecking", &v);
                    return Err(cfg_err(format!(
                        "{}:{line}: StrictHostKeyChecking '{v}': expected yes, \
                         accept-new, no or ask",
                        self.path.display()
                    )));
                }
            };
        }
        if let Some(v) = raw("userknownhostsfile").filter(|v| !v.eq_ignore_ascii_case("none")) {
            c.known_hosts = Some(expand_home(&v));
        }
        Ok(())
    }

    /// The first line that sets `key` to a value containing `value`, for
    /// messages (0 when not found, e.g. the value came from an Include).
    fn line_of(&self, key: &str, value: &str) -> usize {
        self.text
            .lines()
            .position(|l| {
                let l = l.trim().to_ascii_lowercase();
                l.starts_with(key) && l.contains(&value.to_ascii_lowercase())
            })
            .map_or(0, |i| i + 1)
    }
}

fn parse(text: &str) -> Result<Parsed, ssh2_config::SshParserError> {
    // Unsupported keywords (ForwardAgent, ...) are kept, not fatal: ssh
    // accepts them. Unknown ones are fatal, as in ssh ("Bad configuration
    // option").
    Parsed::default()
        .home_dir(home())
        .parse(&mut text.as_bytes(), ParseRule::ALLOW_UNSUPPORTED_FIELDS)
}

/// A Host pattern no real host name can match (it has a space-free,
/// dot-free, impossible form).
const NO_HOST: &str = "__sweepkit_match_block__";

/// ssh2-config rejects `Match` (an unknown keyword to it). Rather than fail
/// on a valid file, or let a Match block's options fall into the Host block
/// before it, each `Match` line becomes a Host block that matches nothing:
/// its options are ignored (with a warning), never applied to the wrong
/// host. Line numbers stay as they were.
fn fence_match_blocks(path: &Path, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text.lines().enumerate() {
        let first = line.split([' ', '\t', '=']).find(|w| !w.is_empty());
        if first.is_some_and(|w| w.eq_ignore_ascii_case("match")) {
            crate::diag::warn(format!(
                "{}:{}: Match blocks are not supported; \
                 their options are ignored",
                path.display(),
                i + 1
            ));
            out.push_str("Host ");
            out.push_str(NO_HOST);
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// The 1-based line at which parsing first fails: the shortest prefix of
/// the file that does not parse ends there. Client configs are short.
fn bad_line(text: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    (1..=lines.len())
        .find(|&n| parse(&lines[..n].join("\n")).is_err())
        .unwrap_or(lines.len())
}

/// ssh_config(5) tokens in HostName: `%h` (the name given), `%%`.
fn expand_tokens(s: &str, given: &str) -> String {
    s.replace("%%", "\u{0}")
        .replace("%h", given)
        .replace('\u{0}', "%")
}

/// `~/x` against $HOME.
pub(crate) fn expand_home(p: &str) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => home().join(rest),
        None if p == "~" => home(),
        None => PathBuf::from(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<ConfigFile, TransportError> {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), text).unwrap();
        ConfigFile::load(Some(f.path()))
    }

    fn dest(s: &str) -> SshDest {
        s.parse().unwrap()
    }

    const TEXT: &str = "\
# fleet
Host gpu*  !gpu9
    HostName %h.lab.example
    User alice
    IdentityFile ~/.ssh/lab_key
    StrictHostKeyChecking accept-new
Host gpu1
    Port 2222
    User bob
Host bastion
    HostName 10.0.0.1
    User jump
Host gpu2
    ProxyJump bastion,carol@relay:2200
Host *
    User nobody
    Port 2200
    UserKnownHostsFile ~/kh
";

    #[test]
    fn first_obtained_value_wins_across_host_patterns() {
        let f = file(TEXT).unwrap();
        let c = f.resolve(&dest("gpu1")).unwrap();
        assert_eq!(c.target.host, "gpu1.lab.example");
        assert_eq!(c.target.user, "alice", "the gpu* block comes first");
        assert_eq!(c.target.port, 2222, "gpu* sets no port; gpu1 does");
        assert_eq!(c.key_files, [home().join(".ssh/lab_key")]);
        assert!(c.accept_new_host_key);
        assert_eq!(c.known_hosts, Some(home().join("kh")));
        assert!(c.jump.is_none());
        // Given on the command line beats the file.
        let c = f.resolve(&dest("root@gpu1:22")).unwrap();
        assert_eq!((c.target.user.as_str(), c.target.port), ("root", 22));
        // Negated pattern: gpu9 falls through to `Host *` only.
        let c = f.resolve(&dest("gpu9")).unwrap();
        assert_eq!(
            (c.target.host.as_str(), c.target.user.as_str()),
            ("gpu9", "nobody")
        );
        assert!(!c.accept_new_host_key);
    }

    #[test]
    fn proxy_jump_chain_resolves_each_hop() {
        let f = file(TEXT).unwrap();
        let c = f.resolve(&dest("gpu2")).unwrap();
        let relay = c.jump.as_deref().expect("relay hop");
        assert_eq!(relay.target.to_string(), "carol@relay:2200");
        let bastion = relay.jump.as_deref().expect("bastion hop");
        assert_eq!(bastion.target.to_string(), "jump@10.0.0.1:2200");
        assert!(bastion.jump.is_none());
    }

    #[test]
    fn no_config_file_means_as_written() {
        let f = ConfigFile::empty("/nonexistent".into());
        let c = f.resolve(&dest("gpu1")).unwrap();
        assert_eq!((c.target.host.as_str(), c.target.port), ("gpu1", 22));
        assert_eq!(Some(c.target.user), local_user());
    }

    #[test]
    fn malformed_lines_are_named_by_file_and_line() {
        for (text, line) in [
            ("Host a\n  Port 22\n  Port many\n", 3),
            ("Host a\n  Bogus yes\n", 2),
            ("Host a\n  StrictHostKeyChecking perhaps\n", 2),
            ("Host a\n  ProxyJump -oEvil@x\n", 2),
        ] {
            let e = file(text)
                .and_then(|f| f.resolve(&dest("a")))
                .expect_err(text);
            assert!(matches!(e, TransportError::Config(_)), "{e}");
            let m = e.to_string();
            assert!(m.contains(&format!(":{line}: ")), "{text:?}: {m}");
        }
        let e = ConfigFile::load(Some(Path::new("/nonexistent/cfg"))).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/cfg"), "{e}");
    }

    #[test]
    fn strict_host_key_checking_is_never_weakened() {
        for (v, accept_new) in [
            ("yes", false),
            ("ask", false),
            ("accept-new", true),
            // `no` would take a changed key too: read as accept-new.
            ("no", true),
            ("off", true),
        ] {
            let f = file(&format!("Host a\n  StrictHostKeyChecking {v}\n")).unwrap();
            let c = f.resolve(&dest("a")).unwrap();
            assert_eq!(c.accept_new_host_key, accept_new, "{v}");
        }
    }

    #[test]
    fn match_blocks_are_fenced_off_not_misapplied() {
        let f =
            file("Host a\n  Port 2201\nMatch host a exec true\n  User evil\n  Port 1\n").unwrap();
        let c = f.resolve(&dest("a")).unwrap();
        assert_eq!(c.target.port, 2201);
        assert_ne!(c.target.user, "evil", "Match options leaked into Host a");
    }

    #[test]
    fn jump_loops_are_refused() {
        let f = file("Host a\n ProxyJump b\nHost b\n ProxyJump a\n").unwrap();
        let e = f.resolve(&dest("a")).unwrap_err();
        assert!(e.to_string().contains("loop"), "{e}");
    }
}
