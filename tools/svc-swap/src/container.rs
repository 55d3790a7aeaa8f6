//! `--container NAME`: a server that runs in a Docker or podman container.
//! Its command cannot change in place, so a swap stops it, keeps it under
//! another name for a rollback, and creates the new one from the same
//! definition with the edited command (`container/create.rs`), all in the
//! far-side job (`job/container.sh`), so a lost session never leaves
//! neither running. The engine CLI runs on the far side, through SSH or the
//! exec prefix, as systemctl does for units.

pub mod absent;
pub mod create;
pub mod definition;
pub mod inspect;
pub mod sealed;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{
    ContainerRef, ServiceManager, ServiceTarget, StartInfo, StopInfo, StopResult, SwapMethod,
    SwapRecord,
};
use sweepkit::transport::{shell_join, Transport};

use crate::execstart::{escape_value, ExecLine};
use crate::far_side;
use crate::job::{self, State};
use crate::target::{Opts, Plan, Target};
use inspect::Inspected;
pub use sweepkit::engine::{self, Engine};

pub struct Container<'t> {
    t: &'t dyn Transport,
    engine: Engine,
    /// As loaded: the container the swap starts from.
    cur: Inspected,
    line: ExecLine,
    /// The container when the job was made (a rollback's is the new one).
    at_job: Option<Inspected>,
    new_id: Option<String>,
    new_pid: Option<u32>,
    previous: Option<String>,
    warnings: Vec<String>,
}

fn target_err(msg: String) -> Exit {
    Exit::new(exit::TARGET_ERROR, anyhow::anyhow!(msg))
}

/// `ENGINE container inspect NAME`, parsed; an unknown container is exit 20.
pub fn inspect(t: &dyn Transport, engine: Engine, name: &str) -> Result<Inspected, Exit> {
    lookup(t, engine, name)?.ok_or_else(|| {
        target_err(format!(
            "container {name}: no such container ({} on {})",
            engine.cli(),
            t.describe()
        ))
    })
}

/// `ENGINE container inspect NAME`, parsed; `None` when the engine has no
/// such container. Any other failure is the engine's (it did not answer):
/// exit 28, which a sweep retries as it does a lost session.
pub fn lookup(t: &dyn Transport, engine: Engine, name: &str) -> Result<Option<Inspected>, Exit> {
    let e = engine.cli();
    let out = far_side::run(t, &[e, "container", "inspect", "--", name], far_side::SHORT)?;
    if !out.success() {
        let why = out.stderr_str();
        let why = why
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        if why.to_lowercase().contains("no such") {
            return Ok(None);
        }
        return Err(Exit::new(
            exit::ENGINE_UNAVAILABLE,
            anyhow::anyhow!(
                "container {name}: {e} container inspect failed (the engine did not answer): {}",
                why.trim()
            ),
        ));
    }
    inspect::parse(&out.stdout_str())
        .map(Some)
        .map_err(|m| target_err(format!("container {name}: {m}")))
}

/// A name the engine CLI cannot take for an option.
pub fn check_name(name: &str) -> Result<(), Exit> {
    if name.is_empty() || name.starts_with('-') {
        return Err(Exit::new(
            exit::USAGE,
            anyhow::anyhow!("--container {name:?}: not a container name"),
        ));
    }
    Ok(())
}

/// `/run/sweepkit-swap/container-ENGINE-NAME`: its swap jobs' state.
pub fn state_dir(engine: Engine, name: &str) -> String {
    format!("/run/sweepkit-swap/container-{}-{name}", engine.cli())
}

/// The argv as ExecLine words: `%` and `$` doubled, so the flag editor's
/// unit-file rules read them back literally.
pub(crate) fn line_of(argv: &[String]) -> ExecLine {
    ExecLine {
        prefix: String::new(),
        words: argv.iter().map(|w| escape_value(w)).collect(),
    }
}

impl<'t> Container<'t> {
    /// Read container `name` of `engine` (picked with `engine::pick`):
    /// one left without its name by an earlier job is put back first, one
    /// its user stopped is refused (`absent.rs`).
    pub fn load(t: &'t dyn Transport, name: &str, engine: Engine) -> Result<Self, Exit> {
        check_name(name)?;
        let mut warnings = Vec::new();
        let mut cur = match lookup(t, engine, name)? {
            Some(c) => c,
            None => {
                let w = absent::put_back(t, engine, name)?;
                warn(&mut warnings, w);
                inspect(t, engine, name)?
            }
        };
        absent::refuse_stopped(t, &cur, &state_dir(engine, name))?;
        if cur.argv.is_empty() {
            return Err(target_err(format!(
                "container {name} has no command (Path, Args and Config.Cmd are empty)"
            )));
        }
        if cur.image_digest.is_none() && !cur.image_id.is_empty() && engine == Engine::Docker {
            cur.image_digest = repo_digest(t, engine, &cur.image_id);
        }
        if let Some(u) = cur.label("PODMAN_SYSTEMD_UNIT") {
            warn(&mut warnings, format!(
                "container {name} belongs to systemd unit {u}: a restart of the unit re-creates it from its own definition; consider --unit {u}"
            ));
        }
        let line = line_of(cur.server_argv());
        Ok(Container {
            t,
            engine,
            cur,
            line,
            at_job: None,
            new_id: None,
            new_pid: None,
            previous: None,
            warnings,
        })
    }

    fn name(&self) -> &str {
        &self.cur.name
    }

    /// `/run/sweepkit-swap/container-ENGINE-NAME.json`.
    fn def_path(&self) -> String {
        format!(
            "/run/sweepkit-swap/container-{}-{}.json",
            self.engine.cli(),
            self.name()
        )
    }

    /// The command words of `line` (the server's command line, see
    /// `inspect::line_from`), refusing an edit of the entrypoint.
    fn command_of(&self, line: &ExecLine) -> Result<Vec<String>, Exit> {
        let ep = self.cur.server_entrypoint();
        let n = ep.len();
        let argv = line.logical_argv();
        if argv.len() < n || argv[..n] != *ep {
            let ep = shell_join(&self.cur.argv[..self.cur.entrypoint_len]);
            let what = if self.cur.cmd().is_empty() {
                format!(
                    "container {} has no command (Config.Cmd is empty)",
                    self.name()
                )
            } else {
                format!(
                    "container {}'s command is {}",
                    self.name(),
                    shell_join(self.cur.cmd())
                )
            };
            return Err(target_err(format!(
                "{what}; the edit would change its entrypoint ({ep}), which svc-swap does not rewrite"
            )));
        }
        Ok(argv[n..].to_vec())
    }

    fn stop_s(&self, o: &Opts, c: &Inspected) -> u64 {
        o.stop_timeout
            .map_or(c.stop_timeout, |d| d.as_secs_f64().ceil() as u64)
    }

    fn render(&self, c: &Inspected, cmd: &[String], stop_s: u64) -> Result<String, Exit> {
        let rc =
            create::recreate(self.engine.cli(), c, cmd).map_err(|e| target_err(e.to_string()))?;
        Ok(definition::render(self.engine.cli(), c, cmd, &rc, stop_s))
    }

    /// A kept definition's command with its secret values filled back in
    /// (`sealed.rs`) from the live container's command or, failing that,
    /// the kept one's (NAME.sweepkit-prev).
    fn unsealed(&self, command: &[String], file: &str) -> Result<Vec<String>, Exit> {
        let live = [&self.cur.argv[..]];
        if let Ok(v) = sealed::unseal(command, &live) {
            return Ok(v);
        }
        let prev = format!("{}{}", self.name(), sweepkit::engine::KEPT_SUFFIX);
        let kept = lookup(self.t, self.engine, &prev)?.map(|c| c.argv);
        let holders = [&self.cur.argv[..], kept.as_deref().unwrap_or_default()];
        sealed::unseal(command, &holders).map_err(|e| target_err(format!("{file}: {e}")))
    }
}

/// Old PIDs on the host (`top`): what `--gpu` looks for in nvidia-smi,
/// which lists host PIDs.
pub(crate) fn host_pids(t: &dyn Transport, engine: Engine, c: &Inspected) -> Vec<u32> {
    if !c.running {
        return Vec::new();
    }
    let e = engine.cli();
    let argv: Vec<&str> = match engine {
        Engine::Podman => vec![e, "top", "--", &c.name, "hpid"],
        Engine::Docker => vec![e, "top", &c.name, "-eo", "pid"],
    };
    let pids = far_side::run(t, &argv, far_side::SHORT)
        .ok()
        .filter(|o| o.success())
        .map(|o| inspect::top_pids(&o.stdout_str()))
        .unwrap_or_default();
    if pids.is_empty() && c.pid > 0 {
        vec![c.pid]
    } else {
        pids
    }
}

/// The record's target for container `c` (a Compose service adds its file
/// and service).
pub(crate) fn service_target(engine: Engine, c: &Inspected) -> ServiceTarget {
    ServiceTarget {
        manager: ServiceManager::Container,
        unit: c.name.clone(),
        container: Some(ContainerRef {
            engine: engine.cli().into(),
            name: c.name.clone(),
            id: c.id.clone(),
            image: Some(c.image_name.clone()).filter(|s| !s.is_empty()),
            image_id: Some(c.image_id.clone()).filter(|s| !s.is_empty()),
            image_digest: c.image_digest.clone(),
            previous: None,
            compose_file: None,
            compose_service: None,
        }),
        ..Default::default()
    }
}

/// The stop report's detail for container `name`, from the stop's result
/// and re-sent SIGTERMs: `code` is its exit, `timeout_s` its stop timeout
/// where known.
pub(crate) fn stop_detail(
    name: &str,
    info: &StopInfo,
    code: &str,
    timeout_s: Option<u64>,
) -> String {
    match info.result {
        StopResult::SigkillAfterTimeout => format!(
            "container {name} outlived its stop timeout{}; the engine sent SIGKILL (exit {code})",
            timeout_s.map_or(String::new(), |s| format!(" ({s}s)"))
        ),
        StopResult::CleanAfterResend => format!(
            "container {name} outlived the first SIGTERM; it exited {code} after {} more",
            info.term_resent
        ),
        StopResult::AlreadyStopped => format!("container {name} was not running"),
        _ => format!("container {name} exited {code} within its stop timeout"),
    }
}

/// `--ready-cmd`'s environment for container `name`.
pub(crate) fn ready_env(engine: Engine, name: &str, pid: Option<u32>) -> Vec<(String, String)> {
    let mut v = vec![
        ("SWEEPKIT_CONTAINER".into(), name.to_string()),
        ("SWEEPKIT_ENGINE".into(), engine.cli().into()),
    ];
    if let Some(p) = pid {
        v.push(("SWEEPKIT_MAIN_PID".into(), p.to_string()));
    }
    v
}

/// The container's last 20 log lines, both streams in the engine's order
/// (not stdout then stderr).
pub(crate) fn log_tail(t: &dyn Transport, engine: Engine, name: &str) -> Vec<String> {
    let merged = r#"e=$1; shift; exec "$e" logs --tail 20 -- "$@" 2>&1"#;
    far_side::run(
        t,
        &["sh", "-c", merged, "sh", engine.cli(), name],
        far_side::SHORT,
    )
    .map(|o| o.stdout_str().lines().map(String::from).collect())
    .unwrap_or_default()
}

/// Say it on stderr now, keep it for the record.
pub(crate) fn warn(v: &mut Vec<String>, w: String) {
    sweepkit::diag::warning("svc-swap", &w);
    v.push(w);
}

/// Docker reports repository digests on the image, not the container.
fn repo_digest(t: &dyn Transport, e: Engine, image: &str) -> Option<String> {
    let f = "{{range .RepoDigests}}{{println .}}{{end}}";
    let out = far_side::run(
        t,
        &[e.cli(), "image", "inspect", "--format", f, image],
        far_side::SHORT,
    )
    .ok()?;
    out.stdout_str()
        .lines()
        .next()
        .map(String::from)
        .filter(|s| !s.is_empty())
}

impl Target for Container<'_> {
    fn info(&self) -> ServiceTarget {
        service_target(self.engine, &self.cur)
    }

    fn current(&self) -> &ExecLine {
        &self.line
    }

    fn plan_edit(&self, line: &ExecLine, _in_place: bool) -> Result<Plan, Exit> {
        let cmd = self.command_of(line)?;
        let s = self.stop_s(&Opts::default(), &self.cur);
        Ok(Plan {
            path: self.def_path(),
            old: Some(self.render(&self.cur, self.cur.cmd(), s)?),
            new: Some(self.render(&self.cur, &cmd, s)?),
            line: line.clone(),
            restores: None,
            method: SwapMethod::Container,
        })
    }

    fn plan_restore(&self, _in_place: bool) -> Result<Plan, Exit> {
        let path = self.def_path();
        let Some(b) = far_side::backups(self.t, &path)?.pop() else {
            return Err(target_err(format!(
                "container {}: no earlier definition to restore ({path}.sweepkit-bak.*)",
                self.name()
            )));
        };
        let text =
            far_side::read_file(self.t, &b)?.ok_or_else(|| target_err(format!("{b} vanished")))?;
        let d = definition::parse(&text).map_err(|e| target_err(format!("{b}: {e}")))?;
        let command = self.unsealed(&d.command, &b)?;
        let mut argv = self.cur.server_entrypoint().to_vec();
        argv.extend(command.iter().cloned());
        let s = self.stop_s(&Opts::default(), &self.cur);
        Ok(Plan {
            path,
            old: Some(self.render(&self.cur, self.cur.cmd(), s)?),
            new: Some(self.render(&self.cur, &command, s)?),
            line: line_of(&argv),
            restores: Some(b),
            method: SwapMethod::Container,
        })
    }

    fn state_dir(&self) -> String {
        state_dir(self.engine, self.name())
    }

    fn live_matches(&mut self, line: &ExecLine) -> Result<bool, Exit> {
        let c = inspect(self.t, self.engine, &self.cur.name)?;
        Ok(c.running && c.argv == line.logical_argv())
    }

    fn job_script(&self) -> &'static str {
        job::CONTAINER
    }

    fn job_args(
        &mut self,
        o: &Opts,
        new: &ExecLine,
        old: &ExecLine,
    ) -> Result<(Vec<String>, StopInfo), Exit> {
        let c = inspect(self.t, self.engine, &self.cur.name)?;
        let stop_s = self.stop_s(o, &c);
        let new_rc = create::recreate(self.engine.cli(), &c, &self.command_of(new)?)
            .map_err(|e| target_err(e.to_string()))?;
        let old_rc = create::recreate(self.engine.cli(), &c, &self.command_of(old)?)
            .map_err(|e| target_err(e.to_string()))?;
        // The job backs up the definition file before it writes the new
        // one: the file must hold the definition in force.
        let now = definition::render(self.engine.cli(), &c, c.cmd(), &old_rc, stop_s);
        far_side::write_private(self.t, &self.def_path(), &now)?;
        let pids = host_pids(self.t, self.engine, &c);
        let mut info = StopInfo::default();
        if c.running {
            info.old_main_pid = Some(c.pid);
            info.old_pids = pids.clone();
        }
        let prev = format!("{}{}", c.name, sweepkit::engine::KEPT_SUFFIX);
        let mut args = vec![
            self.engine.cli().to_string(),
            c.name.clone(),
            c.id.clone(),
            stop_s.to_string(),
        ];
        args.extend(crate::target::settle_args(o, o.port));
        args.extend([
            prev,
            shell_join(&new_rc.argv),
            shell_join(&old_rc.argv),
            u8::from(new_rc.starts).to_string(),
            u8::from(old_rc.starts).to_string(),
            crate::process::argv_hex(&new.logical_argv()),
            crate::process::argv_hex(&old.logical_argv()),
        ]);
        args.extend(pids.iter().map(u32::to_string));
        if new_rc.source == "inspect" {
            warn(&mut self.warnings, format!(
                "container {} was re-created from its inspect ({} keeps no create command); fields carried: see svc-swap(1) CONTAINERS",
                c.name,
                self.engine.cli()
            ));
        }
        self.at_job = Some(c);
        Ok((args, info))
    }

    fn finish(
        &mut self,
        st: &State,
        line: &ExecLine,
        info: &mut StopInfo,
    ) -> Result<StartInfo, Exit> {
        let name = self.cur.name.clone();
        crate::target::stop_facts(st, info);
        let old = self.at_job.clone().unwrap_or_else(|| self.cur.clone());
        let code = st.get("stop_exit").unwrap_or("?");
        let timeout_s = self.stop_s(&Opts::default(), &old).max(1);
        info.detail = Some(stop_detail(&name, info, code, Some(timeout_s)));
        self.previous = st.get("previous").map(String::from);
        let new = inspect(self.t, self.engine, &name)?;
        self.new_id = Some(new.id.clone());
        self.new_pid = Some(new.pid).filter(|p| *p > 0);
        for d in definition::differences(&old.raw, &new.raw) {
            warn(&mut self.warnings, d);
        }
        // The engine's own word on what runs: inspect's Path and Args.
        let verified = new.running && new.server_argv() == line.logical_argv();
        Ok(StartInfo {
            started_at: crate::target::stamp_of(st, "t_start"),
            main_pid: self.new_pid,
            cmdline_verified: Some(verified),
            ..Default::default()
        })
    }

    fn finish_record(&mut self, rec: &mut SwapRecord) {
        if let Some(c) = rec.target.container.as_mut() {
            if let Some(id) = &self.new_id {
                c.id = id.clone();
            }
            c.previous = self.previous.clone();
        }
        rec.warnings.append(&mut self.warnings);
    }

    fn ready_env(&self) -> Vec<(String, String)> {
        ready_env(self.engine, &self.cur.name, self.new_pid)
    }

    fn log_tail(&self) -> Vec<String> {
        log_tail(self.t, self.engine, &self.cur.name)
    }
}
