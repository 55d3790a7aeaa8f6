//! Key authentication for the SSH transport: every agent identity in turn,
//! then key files. Never a password or passphrase prompt: a tool in a
//! pipeline has no one to ask.

use std::path::{Path, PathBuf};
use std::time::Instant;

use ssh2::Session;

use super::{home, SshConfig};
use crate::transport::TransportError;

/// Every agent identity in turn (`userauth_agent` stops at the first), then
/// each key file; no password or passphrase prompt, ever.
pub(crate) fn authenticate(
    cfg: &SshConfig,
    sess: &Session,
    deadline: Instant,
) -> Result<(), TransportError> {
    let t = &cfg.target;
    let user = t.user.as_str();
    let mut tried: Vec<String> = Vec::new();
    if cfg.use_agent {
        match try_agent(cfg, sess, user) {
            Ok(_) if sess.authenticated() => return Ok(()),
            Ok(0) => {}
            Ok(n) => tried.push(format!("{n} agent key(s)")),
            Err(note) => tried.push(note.to_string()),
        }
    }
    let defaults = [".ssh/id_ed25519", ".ssh/id_ecdsa", ".ssh/id_rsa"].map(|p| home().join(p));
    let explicit = !cfg.key_files.is_empty();
    let files: Vec<&Path> = if explicit {
        cfg.key_files.iter().map(PathBuf::as_path).collect()
    } else {
        defaults
            .iter()
            .map(PathBuf::as_path)
            .filter(|p| p.exists())
            .collect()
    };
    for f in files {
        if Instant::now() >= deadline {
            break;
        }
        if !f.exists() {
            tried.push(format!("{} (no such file)", f.display()));
            continue;
        }
        match sess.userauth_pubkey_file(user, None, f, None) {
            Ok(()) if sess.authenticated() => return Ok(()),
            Ok(()) => tried.push(format!("{} (rejected)", f.display())),
            Err(e) => tried.push(format!("{} ({})", f.display(), e.message())),
        }
    }
    let methods = sess.auth_methods(user).unwrap_or("?").to_string();
    let tried = if tried.is_empty() {
        "no keys: no agent and no key file; pass --ssh-key FILE".to_string()
    } else {
        format!("tried {}", tried.join(", "))
    };
    Err(TransportError::Auth(format!(
        "ssh {t}: authentication failed for user '{user}' ({tried}); \
         server accepts: {methods}"
    )))
}

/// Why the agent's keys could not be offered: a note for the failure
/// message (no agent is not an error by itself).
#[derive(Debug, thiserror::Error)]
enum AgentError {
    /// Opening or listing the agent failed.
    #[error("agent: {0}")]
    Agent(String),
    #[error("agent {}: {err}", path.display())]
    Socket {
        path: std::path::PathBuf,
        err: ssh2::Error,
    },
    #[error("agent unreachable ({0})")]
    Unreachable(String),
}

/// Offer each agent identity; Ok(number tried).
fn try_agent(cfg: &SshConfig, sess: &Session, user: &str) -> Result<usize, AgentError> {
    if cfg.agent_socket.is_none() && std::env::var_os("SSH_AUTH_SOCK").is_none() {
        return Ok(0);
    }
    let mut agent = sess.agent().map_err(|e| AgentError::Agent(e.to_string()))?;
    if let Some(p) = &cfg.agent_socket {
        agent
            .set_identity_path(p)
            .map_err(|err| AgentError::Socket {
                path: p.clone(),
                err,
            })?;
    }
    agent
        .connect()
        .map_err(|e| AgentError::Unreachable(e.message().into()))?;
    agent
        .list_identities()
        .map_err(|e| AgentError::Agent(e.message().into()))?;
    let ids = agent.identities().unwrap_or_default();
    let mut n = 0;
    for id in &ids {
        n += 1;
        if agent.userauth(user, id).is_ok() && sess.authenticated() {
            break;
        }
    }
    let _ = agent.disconnect();
    Ok(n)
}
