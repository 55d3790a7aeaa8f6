//! The transport flags every far-side tool shares (feature `cli`), spelled
//! the same in svc-swap and wait-ready: `--ssh`, `--ssh-config`,
//! `--ssh-key`, `--known-hosts`, `--accept-new-host-key`, `--ssh-retry`,
//! `--exec-prefix`, `--connect-timeout`. Flatten `TransportArgs` into a
//! tool's clap Args and call `open()`. `--ssh HOST` is looked up in the
//! ssh client config as ssh does; flags given beat the file. A later stage
//! of a pipe calls `fill_from()` first, so the target recorded by the first
//! stage (`target` in the swap record) is reached the same way without
//! repeating the flags.

use std::path::PathBuf;
use std::time::Duration;

use crate::records::ServiceTarget;

/// Why [`TransportArgs::fill_from`] refused: the upstream record's target
/// (bad input) or the flags (usage).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FillError {
    /// A field of the record's `target` does not parse.
    #[error("target.{field}: {reason}")]
    Target { field: &'static str, reason: String },
    /// SSH-only flags with no destination on the command line or in the record.
    #[error(
        "--ssh-key, --known-hosts and --accept-new-host-key need --ssh \
         (or an upstream record whose target has ssh)"
    )]
    SshOnlyWithoutDestination,
}
use crate::ssh::{ConfigFile, DestError, Ssh, SshConfig, SshDest, DEFAULT_RETRY};
use crate::time::parse_duration;
use crate::transport::{Local, Transport, TransportError};

/// `--exec-prefix` split into words like a shell would (`pct exec 129 --`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecPrefix(pub Vec<String>);

fn parse_prefix(s: &str) -> Result<ExecPrefix, String> {
    let words = shell_words::split(s).map_err(|e| format!("'{s}': {e}"))?;
    if words.is_empty() {
        return Err("empty prefix".into());
    }
    Ok(ExecPrefix(words))
}

/// Where far-side commands run: here, behind a prefix, or over SSH.
#[derive(clap::Args, Debug, Clone)]
pub struct TransportArgs {
    /// Run far-side commands over SSH; HOST may be a Host
    /// alias of the ssh config (HostName, User, Port, IdentityFile,
    /// ProxyJump, ...); the user defaults to the config's, then the local one
    #[arg(long, value_name = "[USER@]HOST[:PORT]", value_parser = SshDest::from_str_clap)]
    pub ssh: Option<SshDest>,

    /// OpenSSH client config to read for --ssh
    /// [default: ~/.ssh/config]
    #[arg(long, value_name = "FILE", env = "SWEEPKIT_SSH_CONFIG")]
    pub ssh_config: Option<PathBuf>,

    /// Private key for --ssh (or the upstream record's SSH
    /// target), after agent keys (repeatable) [default: the config's
    /// IdentityFile, else ~/.ssh/id_ed25519, id_ecdsa, id_rsa]
    #[arg(long, value_name = "FILE")]
    pub ssh_key: Vec<PathBuf>,

    /// Check the host key against FILE, for every
    /// ProxyJump hop too [default: the config's UserKnownHostsFile,
    /// else ~/.ssh/known_hosts]
    #[arg(long, value_name = "FILE")]
    pub known_hosts: Option<PathBuf>,

    /// Record an unknown host's key (OpenSSH's
    /// accept-new, also set by StrictHostKeyChecking in the config); a
    /// changed key is still refused
    #[arg(long)]
    pub accept_new_host_key: bool,

    /// Run every far-side command behind this
    /// prefix, e.g. 'pct exec 129 --' (also with --ssh)
    #[arg(long, value_name = "'CMD ...'", value_parser = parse_prefix)]
    pub exec_prefix: Option<ExecPrefix>,

    /// Limit for SSH connect and authentication
    #[arg(long, value_name = "DUR", default_value = "10s", value_parser = parse_duration)]
    pub connect_timeout: Duration,

    /// Keep retrying SSH connects that are refused,
    /// reset or time out, and sessions lost mid-command (re-checkable
    /// steps only), for up to DUR with backoff; 0 for one attempt
    #[arg(long, value_name = "DUR", default_value = "30s", value_parser = parse_duration)]
    pub ssh_retry: Duration,
}

impl Default for TransportArgs {
    fn default() -> Self {
        TransportArgs {
            ssh: None,
            ssh_config: None,
            ssh_key: Vec::new(),
            known_hosts: None,
            accept_new_host_key: false,
            exec_prefix: None,
            connect_timeout: Duration::from_secs(10),
            ssh_retry: DEFAULT_RETRY,
        }
    }
}

impl SshDest {
    /// clap's value parser (the error text becomes clap's usage error).
    pub fn from_str_clap(s: &str) -> Result<SshDest, DestError> {
        s.parse()
    }
}

impl TransportArgs {
    /// True with `--ssh`.
    pub fn is_remote(&self) -> bool {
        self.ssh.is_some()
    }

    /// Fill what the command line left out from an upstream record's
    /// target: destination, key paths, known_hosts, accept-new, prefix.
    /// Flags given here win, each on its own (`--ssh-key K` with the
    /// record's destination works). Then check that SSH-only flags have a
    /// destination. `Err` says whether the record or the flags were wrong.
    pub fn fill_from(&mut self, t: Option<&ServiceTarget>) -> Result<(), FillError> {
        if let Some(t) = t {
            if self.ssh.is_none() {
                if let Some(s) = &t.ssh {
                    let dest = s.parse::<SshDest>().map_err(|e| FillError::Target {
                        field: "ssh",
                        reason: e.to_string(),
                    })?;
                    self.ssh = Some(dest);
                }
            }
            // Key, host-key file and policy belong to the record's
            // destination: take them only when that destination is ours.
            let same = self.ssh.as_ref().map(|s| s.to_string()) == t.ssh;
            if same && self.ssh_key.is_empty() {
                self.ssh_key = t.ssh_key.iter().map(PathBuf::from).collect();
            }
            if same && self.known_hosts.is_none() {
                self.known_hosts = t.known_hosts.as_ref().map(PathBuf::from);
            }
            if same && self.ssh_config.is_none() {
                self.ssh_config = t.ssh_config.as_ref().map(PathBuf::from);
            }
            self.accept_new_host_key |= same && t.accept_new_host_key;
            if self.exec_prefix.is_none() {
                if let Some(p) = &t.exec_prefix {
                    self.exec_prefix = Some(parse_prefix(p).map_err(|e| FillError::Target {
                        field: "exec_prefix",
                        reason: e.to_string(),
                    })?);
                }
            }
        }
        let ssh_only =
            !self.ssh_key.is_empty() || self.known_hosts.is_some() || self.accept_new_host_key;
        if ssh_only && self.ssh.is_none() {
            return Err(FillError::SshOnlyWithoutDestination);
        }
        Ok(())
    }

    /// Record how the far side was reached in `t` (paths, never secrets).
    pub fn describe_into(&self, t: &mut ServiceTarget) {
        let prefix = self.prefix();
        t.exec_prefix = (!prefix.is_empty()).then(|| crate::transport::shell_join(&prefix));
        t.ssh = self.ssh.as_ref().map(|s| s.to_string());
        if t.ssh.is_some() {
            t.ssh_key = self
                .ssh_key
                .iter()
                .map(|p| p.display().to_string())
                .collect();
            t.known_hosts = self.known_hosts.as_ref().map(|p| p.display().to_string());
            t.accept_new_host_key = self.accept_new_host_key;
            t.ssh_config = self.ssh_config.as_ref().map(|p| p.display().to_string());
        }
    }

    /// The exec prefix words (empty without `--exec-prefix`).
    pub fn prefix(&self) -> Vec<String> {
        self.exec_prefix.clone().map(|p| p.0).unwrap_or_default()
    }

    /// The SSH settings these flags describe, if `--ssh` was given: the
    /// destination looked up in the ssh config, then the flags applied over
    /// it. Errs (kind `Config`) on an unreadable or malformed config.
    pub fn ssh_config(&self) -> Result<Option<SshConfig>, TransportError> {
        match &self.ssh {
            None => Ok(None),
            Some(d) => self.resolve(d).map(Some),
        }
    }

    /// As `ssh_config`, for a destination from elsewhere (an upstream
    /// record's `target.ssh`), with these flags' key, known_hosts, retry,
    /// timeout and prefix.
    pub fn ssh_config_for(&self, dest: &str) -> Result<SshConfig, TransportError> {
        let d: SshDest = dest
            .parse()
            .map_err(|e: DestError| TransportError::Config(format!("ssh destination {e}")))?;
        self.resolve(&d)
    }

    fn resolve(&self, d: &SshDest) -> Result<SshConfig, TransportError> {
        let mut c = ConfigFile::load(self.ssh_config.as_deref())?.resolve(d)?;
        // Flags beat the file. Keys are the target's own; known_hosts and
        // the host-key policy hold for every hop.
        if !self.ssh_key.is_empty() {
            c.key_files = self.ssh_key.clone();
        }
        let mut hop = Some(&mut c);
        while let Some(h) = hop {
            if let Some(k) = &self.known_hosts {
                h.known_hosts = Some(k.clone());
            }
            h.accept_new_host_key |= self.accept_new_host_key;
            h.connect_timeout = self.connect_timeout;
            h.retry = self.ssh_retry;
            hop = h.jump.as_deref_mut();
        }
        c.prefix = self.prefix();
        Ok(c)
    }

    /// Open the transport: `Local` (with the prefix) or an authenticated
    /// `Ssh` session (config, connect, host key and auth errors surface
    /// here; `TransportError::exit_code` maps them).
    pub fn open(&self) -> Result<Box<dyn Transport>, TransportError> {
        match self.ssh_config()? {
            None => Ok(Box::new(Local::with_prefix(self.prefix()))),
            Some(c) => Ok(Box::new(Ssh::connect(c)?)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    #[command(name = "t")]
    struct T {
        #[command(flatten)]
        t: TransportArgs,
    }

    fn parse(args: &[&str]) -> Result<TransportArgs, clap::Error> {
        T::try_parse_from(std::iter::once("t").chain(args.iter().copied())).map(|t| t.t)
    }

    #[test]
    fn verify_cli() {
        T::command().debug_assert();
    }

    #[test]
    fn help_lines_fit_79_columns() {
        // As the tools render it: `max_term_width = 79` with wrap_help.
        for long in [false, true] {
            let mut c = T::command().term_width(79);
            let help = if long {
                c.render_long_help()
            } else {
                c.render_help()
            };
            for line in help.to_string().lines() {
                assert!(line.len() <= 79, "{} cols: {line}", line.len());
            }
        }
    }

    #[test]
    fn flags_parse() {
        let a = parse(&[
            "--ssh",
            "root@gpu1:2222",
            "--ssh-key",
            "/k1",
            "--ssh-key",
            "/k2",
            "--accept-new-host-key",
            "--exec-prefix",
            "pct exec '1 29' --",
            "--connect-timeout",
            "3s",
            "--ssh-config",
            "/dev/null",
        ])
        .unwrap();
        let c = a.ssh_config().unwrap().unwrap();
        assert_eq!(c.target.user, "root");
        assert_eq!(c.target.host, "gpu1");
        assert_eq!(c.target.port, 2222);
        assert_eq!(
            c.key_files,
            vec![PathBuf::from("/k1"), PathBuf::from("/k2")]
        );
        assert!(c.accept_new_host_key);
        assert_eq!(c.prefix, ["pct", "exec", "1 29", "--"]);
        assert_eq!(c.connect_timeout, Duration::from_secs(3));
        let d = parse(&[]).unwrap();
        assert!(!d.is_remote());
        assert_eq!(d.connect_timeout, Duration::from_secs(10));
        assert_eq!(d.ssh_retry, DEFAULT_RETRY);
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for args in [
            &["--ssh", "root@gpu1:99999"][..],
            &["--ssh", "root@"],
            &["--ssh", "-oProxyCommand=x"],
            &["--ssh-retry", "forever"],
            &["--exec-prefix", "pct 'unbalanced"],
            &["--exec-prefix", ""],
            &["--connect-timeout", "soon"],
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{args:?}: {e}");
        }
    }

    #[test]
    fn fill_from_takes_what_the_flags_left_out() {
        let t = ServiceTarget {
            ssh: Some("root@gpu1:2222".into()),
            ssh_key: vec!["/k1".into()],
            known_hosts: Some("/kh".into()),
            accept_new_host_key: true,
            exec_prefix: Some("pct exec '1 29' --".into()),
            ..Default::default()
        };
        // `--ssh-key` alone: the record gives the destination.
        let mut a = parse(&["--ssh-key", "/mine"]).unwrap();
        a.ssh_config = Some(PathBuf::from("/dev/null"));
        a.fill_from(Some(&t)).unwrap();
        let c = a.ssh_config().unwrap().unwrap();
        assert_eq!(c.target.to_string(), "root@gpu1:2222");
        assert_eq!(c.key_files, vec![PathBuf::from("/mine")]);
        assert_eq!(c.known_hosts, Some(PathBuf::from("/kh")));
        assert!(c.accept_new_host_key);
        assert_eq!(c.prefix, ["pct", "exec", "1 29", "--"]);
        // Round trip: what a stage records is what the next one reads.
        let mut back = ServiceTarget::default();
        a.describe_into(&mut back);
        assert_eq!(back.ssh, t.ssh);
        assert_eq!(back.exec_prefix, t.exec_prefix);
        // Another destination on the command line: not the record's key.
        let mut b = parse(&["--ssh", "me@other"]).unwrap();
        b.fill_from(Some(&t)).unwrap();
        assert!(b.ssh_key.is_empty() && b.known_hosts.is_none());
        // SSH-only flags with no destination anywhere.
        let mut d = parse(&["--ssh-key", "/k"]).unwrap();
        let e = d.fill_from(None).unwrap_err();
        assert_eq!(e, FillError::SshOnlyWithoutDestination);
        assert!(e.to_string().contains("need --ssh"), "{e}");
        let bad = ServiceTarget {
            ssh: Some("root@".into()),
            ..Default::default()
        };
        let e = parse(&[]).unwrap().fill_from(Some(&bad)).unwrap_err();
        assert!(matches!(e, FillError::Target { field: "ssh", .. }), "{e}");
        assert!(e.to_string().starts_with("target.ssh: "), "{e}");
    }

    #[test]
    fn local_with_prefix_runs_here() {
        let a = parse(&["--exec-prefix", "env SWEEPKIT_P=ok"]).unwrap();
        let t = a.open().unwrap();
        assert!(t.describe().starts_with("local via"));
        assert_eq!(crate::transport::sh_stdout(&*t, "echo $SWEEPKIT_P"), "ok");
    }
}
