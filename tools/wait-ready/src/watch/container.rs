//! `--container NAME` (or the swap record's container): poll the engine's
//! `container inspect` (locally, behind an exec prefix, or over SSH). An
//! exited container is a crash, with its exit code; `State.OOMKilled` an
//! OOM; a container the engine restarts (`State.Restarting`, or a rising
//! `RestartCount`, its restart policy at work) a restart loop. The last
//! lines come from `logs --tail`, and `--expect-config` can read the live
//! command from inspect's `Path` and `Args`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sweepkit::engine::Engine;
use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::transport::{Transport, TransportError};

use super::{Event, CMD_TIMEOUT};

/// Each inspect costs the engine a good part of 100 ms: twice a second.
pub const EVERY: Duration = Duration::from_millis(500);

/// One inspect, one line: `|`-separated state fields.
const FORMAT: &str = "{{.State.Status}}|{{.State.Running}}|{{.State.Restarting}}|{{.State.ExitCode}}|{{.State.OOMKilled}}|{{.RestartCount}}|{{.State.Pid}}|{{.Id}}|{{.HostConfig.RestartPolicy.Name}}|{{.HostConfig.RestartPolicy.MaximumRetryCount}}";

/// The state fields of one inspect.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct State {
    pub status: String,
    pub running: bool,
    pub restarting: bool,
    pub exit_code: i64,
    pub oom: bool,
    pub restarts: u64,
    pub pid: u32,
    pub id: String,
    /// `always`, `unless-stopped`, `on-failure` (empty or `no`: none).
    pub policy: String,
    pub max_retries: u64,
}

impl State {
    /// True when the engine will start it again after it exits.
    fn engine_restarts(&self) -> bool {
        match self.policy.as_str() {
            "always" | "unless-stopped" => true,
            "on-failure" => {
                self.exit_code != 0 && (self.max_retries == 0 || self.restarts < self.max_retries)
            }
            _ => false,
        }
    }
}

pub fn parse_state(line: &str) -> Option<State> {
    let f: Vec<&str> = line.trim().split('|').collect();
    if f.len() != 10 {
        return None;
    }
    Some(State {
        status: f[0].to_string(),
        running: f[1] == "true",
        restarting: f[2] == "true",
        exit_code: f[3].parse().ok()?,
        oom: f[4] == "true",
        restarts: f[5].parse().unwrap_or(0),
        pid: f[6].parse().unwrap_or(0),
        id: f[7].to_string(),
        policy: f[8].to_string(),
        max_retries: f[9].parse().unwrap_or(0),
    })
}

pub struct ContainerWatch {
    pub name: String,
    pub engine: Engine,
    transport: Arc<dyn Transport>,
    next: Instant,
    /// RestartCount when the wait began.
    base: Option<u64>,
    /// The main PID last seen (for the live argv when inspect cannot say).
    pub main_pid: Option<u32>,
}

impl ContainerWatch {
    pub fn new(name: &str, engine: Engine, transport: Arc<dyn Transport>) -> Self {
        ContainerWatch {
            name: name.to_string(),
            engine,
            transport,
            next: Instant::now(),
            base: None,
            main_pid: None,
        }
    }

    fn inspect(&self, format: &str) -> Result<String, Exit> {
        let argv = [
            self.engine.cli(),
            "container",
            "inspect",
            "--format",
            format,
            "--",
            &self.name,
        ]
        .map(String::from);
        let out = self
            .transport
            .run_idempotent(&argv, None, CMD_TIMEOUT)
            .map_err(|e| transport_error(&*self.transport, e))?;
        if !out.success() {
            let why = out.stderr_str();
            let why = why
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            // An engine that does not answer (docker's daemon down,
            // podman's socket refusing) says nothing of the config: exit
            // 28 with a transport failure record, as svc-swap's `lookup`
            // reports it, so a sweep retries the config.
            let (code, what) = if why.to_lowercase().contains("no such") {
                (exit::FAILURE, "no such container".to_string())
            } else {
                let e = self.engine.cli();
                let what = format!(
                    "{e} container inspect failed (the engine did not answer): {}",
                    why.trim()
                );
                (exit::ENGINE_UNAVAILABLE, what)
            };
            return Err(Exit::new(
                code,
                anyhow::anyhow!(
                    "container {}: {what} ({} on {})",
                    self.name,
                    self.engine.cli(),
                    self.transport.describe()
                ),
            ));
        }
        Ok(out.stdout_str())
    }

    pub fn poll(&mut self, now: Instant) -> Result<Option<Event>, Exit> {
        if now < self.next {
            return Ok(None);
        }
        self.next = now + EVERY;
        let text = self.inspect(FORMAT)?;
        let s = parse_state(&text).ok_or_else(|| {
            Exit::new(
                exit::FAILURE,
                anyhow::anyhow!(
                    "container {}: unreadable inspect output {text:?}",
                    self.name
                ),
            )
        })?;
        self.main_pid = Some(s.pid).filter(|p| *p > 0);
        let base = *self.base.get_or_insert(s.restarts);
        Ok(classify(&self.name, &s, base))
    }

    /// The container's last log lines, both streams in the engine's order.
    pub fn logs_tail(&self) -> Vec<String> {
        let script = r#"e=$1; shift; exec "$e" logs --tail 20 -- "$@" 2>&1"#;
        let argv = ["sh", "-c", script, "sh", self.engine.cli(), &self.name].map(String::from);
        match self.transport.run_idempotent(&argv, None, CMD_TIMEOUT) {
            Ok(o) => o
                .stdout_str()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// The command the container runs, by the engine: `Path` then `Args`.
    pub fn live_argv(&self) -> Result<Vec<String>, String> {
        let f = "{{json .Path}}{{range .Args}}\n{{json .}}{{end}}";
        let text = self.inspect(f).map_err(|e| {
            e.error
                .map_or_else(|| "inspect failed".into(), |e| format!("{e:#}"))
        })?;
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str::<String>(l).map_err(|e| format!("inspect: {e}")))
            .collect()
    }
}

/// What one state means, given the RestartCount at the start.
pub fn classify(name: &str, s: &State, base: u64) -> Option<Event> {
    if s.restarting || s.restarts > base {
        return Some(Event::RestartLoop {
            reason: format!(
                "container {name} is being restarted by its engine (RestartCount {base} -> {}, last exit {})",
                s.restarts, s.exit_code
            ),
        });
    }
    if s.running {
        return None;
    }
    // Between two restarts it reads exited (podman: stopped): one its
    // engine restarts is a loop once it has been restarted, and until then
    // the next look tells.
    if s.engine_restarts() {
        if s.restarts > 0 {
            return Some(Event::RestartLoop {
                reason: format!(
                    "container {name} exited with code {} and its engine restarts it (restart policy {}, RestartCount {})",
                    s.exit_code, s.policy, s.restarts
                ),
            });
        }
        return None;
    }
    if s.oom {
        return Some(Event::Crashed {
            reason: format!(
                "container {name} was OOM-killed (State.OOMKilled; exit {})",
                s.exit_code
            ),
            oom: true,
        });
    }
    let what = match s.status.as_str() {
        "exited" | "stopped" | "dead" => {
            format!("exited with code {}{}", s.exit_code, signal(s.exit_code))
        }
        other => format!("is not running ({other}, exit code {})", s.exit_code),
    };
    Some(Event::Crashed {
        reason: format!("container {name} {what}"),
        oom: false,
    })
}

/// What an exit code above 128 says: the signal that ended it.
fn signal(code: i64) -> &'static str {
    match code {
        137 => " (SIGKILL: out of memory, or killed)",
        143 => " (SIGTERM)",
        139 => " (SIGSEGV)",
        134 => " (SIGABRT)",
        _ => "",
    }
}

fn transport_error(t: &dyn Transport, e: TransportError) -> Exit {
    Exit::new(
        exit::TRANSPORT_ERROR,
        anyhow::anyhow!("watching the container ({}): {e}", t.describe()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_what_they_mean() {
        let s = parse_state("running|true|false|0|false|0|4242|abc||0\n").unwrap();
        assert_eq!((s.pid, s.running), (4242, true));
        assert_eq!(classify("c", &s, 0), None);
        let s = parse_state("exited|false|false|1|false|0|0|abc||0").unwrap();
        let Some(Event::Crashed { reason, oom }) = classify("c", &s, 0) else {
            panic!()
        };
        assert!(!oom && reason.contains("exited with code 1"), "{reason}");
        let s = parse_state("exited|false|false|137|true|0|0|abc||0").unwrap();
        assert!(matches!(
            classify("c", &s, 0),
            Some(Event::Crashed { oom: true, .. })
        ));
        let s = parse_state("running|true|false|1|false|3|77|abc|always|0").unwrap();
        let Some(Event::RestartLoop { reason }) = classify("c", &s, 1) else {
            panic!()
        };
        assert!(reason.contains("RestartCount 1 -> 3"), "{reason}");
        let s = parse_state("restarting|false|true|1|false|0|0|abc||0").unwrap();
        assert!(matches!(
            classify("c", &s, 0),
            Some(Event::RestartLoop { .. })
        ));
        // Between restarts (podman says stopped): a loop once restarted.
        let s = parse_state("stopped|false|false|3|false|4|0|abc|always|0").unwrap();
        assert!(matches!(
            classify("c", &s, 4),
            Some(Event::RestartLoop { .. })
        ));
        let s = parse_state("exited|false|false|3|false|0|0|abc|always|0").unwrap();
        assert_eq!(classify("c", &s, 0), None, "the engine restarts it");
        // on-failure with its retries spent: it stays down, a crash.
        let s = parse_state("exited|false|false|3|false|2|0|abc|on-failure|2").unwrap();
        assert!(matches!(classify("c", &s, 2), Some(Event::Crashed { .. })));
        assert_eq!(parse_state("garbage"), None);
    }
}
