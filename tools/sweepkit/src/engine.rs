//! Which container engine CLI runs on the far side: `--engine` when given,
//! else docker when its daemon answers, else podman. A docker client whose
//! daemon is down (`docker version` cannot reach the server) is not an
//! engine: the choice falls to podman, or the error says both. Shared by
//! svc-swap and wait-ready `--container`; the engine CLI runs on the far
//! side through the transport.

use std::time::Duration;

use crate::exit;
use crate::exit::Exit;
use crate::transport::{Transport, TransportError};

/// What svc-swap names the user's own container it keeps, stopped, when
/// it re-creates one (`NAME.sweepkit-prev`): the way back, which
/// sweep-plan's end names to the user.
pub const KEPT_SUFFIX: &str = ".sweepkit-prev";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "args", derive(clap::ValueEnum))]
pub enum Engine {
    /// Docker (the daemon must answer `docker version`)
    Docker,
    /// Podman (daemonless)
    Podman,
}

impl Engine {
    pub fn cli(self) -> &'static str {
        match self {
            Engine::Docker => "docker",
            Engine::Podman => "podman",
        }
    }

    /// The engine a record names (`target.container.engine`).
    pub fn from_name(s: &str) -> Option<Engine> {
        match s {
            "docker" => Some(Engine::Docker),
            "podman" => Some(Engine::Podman),
            _ => None,
        }
    }
}

/// One line per candidate: `ok E`, `missing E` or `down E: WHY`. Docker's
/// `version` fails when the client cannot reach its daemon; podman's works
/// without one, so `info` would only add a slow storage check.
const PROBE: &str = r#"for e in "$@"; do
  if ! command -v "$e" >/dev/null 2>&1; then echo "missing $e"; continue; fi
  case $e in
    docker) f='{{.Server.Version}}' ;;
    *) f='{{.Client.Version}}' ;;
  esac
  if out=$("$e" version --format "$f" 2>&1 </dev/null); then echo "ok $e"; exit 0; fi
  echo "down $e: $(printf '%s' "$out" | grep . | tail -n 1)"
done
exit 0"#;

/// The engine to drive, checked on the far side.
pub fn pick(t: &dyn Transport, want: Option<Engine>) -> Result<Engine, Exit> {
    let cands: Vec<Engine> = match want {
        Some(e) => vec![e],
        None => vec![Engine::Docker, Engine::Podman],
    };
    let mut argv: Vec<String> = ["sh", "-c", PROBE, "sh"].map(String::from).to_vec();
    argv.extend(cands.iter().map(|e| e.cli().to_string()));
    let out = t
        .run_idempotent(&argv, None, Duration::from_secs(30))
        .map_err(|e| {
            let code = match e {
                TransportError::Timeout(_) => exit::FAILURE,
                _ => exit::TRANSPORT_ERROR,
            };
            Exit::new(
                code,
                anyhow::anyhow!("{}: looking for a container engine: {e}", t.describe()),
            )
        })?;
    if !out.success() {
        return Err(Exit::new(
            exit::TRANSPORT_ERROR,
            anyhow::anyhow!(
                "{}: cannot run sh to look for a container engine: {}",
                t.describe(),
                out.stderr_str().trim()
            ),
        ));
    }
    decide(&out.stdout_str(), &cands, &t.describe())
}

/// The probe's verdict: the first `ok`, else one line saying why each
/// candidate is out.
fn decide(out: &str, cands: &[Engine], far_side: &str) -> Result<Engine, Exit> {
    for l in out.lines() {
        if let Some(e) = l.strip_prefix("ok ") {
            if let Some(found) = cands.iter().find(|c| c.cli() == e.trim()) {
                return Ok(*found);
            }
        }
    }
    let why: Vec<String> = out
        .lines()
        .filter_map(|l| {
            if let Some(e) = l.strip_prefix("missing ") {
                Some(format!("{e} is not installed"))
            } else {
                l.strip_prefix("down ")
                    .map(|r| format!("{r} (its engine does not answer)"))
            }
        })
        .collect();
    Err(Exit::new(
        exit::ENGINE_UNAVAILABLE,
        anyhow::anyhow!("no container engine on {far_side}: {}", why.join("; ")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_client_without_daemon_falls_to_podman() {
        let out = "down docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\nok podman\n";
        let both = [Engine::Docker, Engine::Podman];
        assert_eq!(decide(out, &both, "local").unwrap(), Engine::Podman);
        let e = decide(
            "down docker: Cannot connect\nmissing podman\n",
            &both,
            "local",
        )
        .unwrap_err();
        assert_eq!(e.code, exit::ENGINE_UNAVAILABLE);
        let m = format!("{:#}", e.error.unwrap());
        assert!(
            m.contains("docker: Cannot connect") && m.contains("podman is not installed"),
            "{m}"
        );
        assert!(!m.contains('\n'));
    }
}
