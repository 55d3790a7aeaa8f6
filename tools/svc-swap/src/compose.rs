//! `--compose FILE --service NAME`: a server that Docker Compose or
//! podman-compose runs. The service's `command:` is edited in the file
//! itself (`compose/yaml.rs`: only its text changes), backed up as unit
//! files are, and the compose tool re-creates that one service from the
//! file in force, in the far-side job (`job/compose.sh`): the engine stops
//! the old container (so the stop is reported as for `--container`), then
//! `COMPOSE -f FILE -p PROJECT up -d --no-deps --force-recreate SERVICE`
//! ("--force-recreate: recreate containers even if their configuration and
//! image haven't changed", "--no-deps: don't start linked services":
//! docs.docker.com/reference/cli/docker/compose/up; podman-compose 1.6's
//! `compose_up` takes the same flags and brings the service `down` before
//! it creates it anew). A failed start puts the old file back and
//! re-creates the old config the same way; `--restore` puts back the
//! newest backup.
//!
//! The service's container is found by the labels both tools set:
//! `com.docker.compose.service`, `.project`, `.project.working_dir` and
//! `.project.config_files` (Docker Compose `pkg/api/labels.go`;
//! podman_compose.py sets the same four, seen on 1.6.0 here). The project
//! name comes from the container, so a project started with `-p NAME` is
//! re-created as that project, not a new one named after the directory.
//! `-f FILE` makes the tool read that file alone (no `compose.override.yaml`:
//! docs.docker.com/compose/how-tos/multiple-compose-files/merge), so a
//! project whose `config_files` label names several files is refused.

pub mod find;
pub mod yaml;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{ServiceTarget, StartInfo, StopInfo, SwapMethod};
use sweepkit::transport::{shell_join, Transport};

use crate::container::inspect::Inspected;
use crate::container::{self, line_of, Engine};
use crate::execstart::ExecLine;
use crate::far_side;
use crate::job::{self, State};
use crate::target::{Opts, Plan, Target};
use find::{find_container, find_tool, resolve, FILES_LABEL, PROJECT_LABEL};
use yaml::Located;

pub struct Compose<'t> {
    t: &'t dyn Transport,
    engine: Engine,
    /// The compose CLI's words: `docker compose`, `docker-compose` or
    /// `podman-compose`.
    tool: Vec<String>,
    file: String,
    dir: String,
    service: String,
    project: String,
    text: String,
    loc: Located,
    /// The service's container as loaded.
    cur: Inspected,
    /// The service's `stop_grace_period` in seconds, when the file says.
    grace_s: Option<u64>,
    line: ExecLine,
    new_id: Option<String>,
    new_pid: Option<u32>,
    warnings: Vec<String>,
}

fn target_err(msg: String) -> Exit {
    Exit::new(exit::TARGET_ERROR, anyhow::anyhow!(msg))
}

/// `/run/sweepkit-swap/compose-PROJECT-SERVICE`: its swap jobs' state.
fn state_dir(project: &str, service: &str) -> String {
    format!("/run/sweepkit-swap/compose-{project}-{service}")
}

/// True when the live argv is `want`, a word of `want` with a variable in
/// it (`${MODEL}`, Compose's to fill in) matching any one word.
fn same_argv(live: &[String], want: &[String]) -> bool {
    live.len() == want.len()
        && live
            .iter()
            .zip(want)
            .all(|(l, w)| l == w || yaml::interpolates(w))
}

/// A Compose duration (`10s`, `1m30s`, `500ms`, Go's format) in whole
/// seconds, rounded up; a bare number is seconds.
fn compose_duration(s: &str) -> Option<u64> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        return Some(n);
    }
    sweepkit::time::parse_duration(s)
        .ok()
        .map(|d| d.as_secs_f64().ceil() as u64)
}

impl<'t> Compose<'t> {
    pub fn load(
        t: &'t dyn Transport,
        file: &str,
        service: &str,
        want: Option<Engine>,
    ) -> Result<Self, Exit> {
        let engine = container::engine::pick(t, want)?;
        let tool = find_tool(t, engine)?;
        let path = resolve(t, file)?;
        let text = far_side::read_file(t, &path)?
            .ok_or_else(|| target_err(format!("--compose {path}: no such file")))?;
        let loc = yaml::locate(&text, service).map_err(|m| target_err(format!("{path}: {m}")))?;
        let dir = path.rsplit_once('/').map_or("/", |(d, _)| d).to_string();
        let dir = if dir.is_empty() { "/".into() } else { dir };
        let cur = find_container(t, engine, &path, &dir, service)?;
        let project = cur.label(PROJECT_LABEL).unwrap_or_default().to_string();
        if project.is_empty() {
            return Err(target_err(format!(
                "--compose {path}: container {} has no {PROJECT_LABEL} label",
                cur.name
            )));
        }
        // Up would start a service its user stopped (issue 37), as a
        // container swap would.
        container::absent::refuse_stopped(t, &cur, &state_dir(&project, service))?;
        // Up with -f FILE reads that file alone: a project made from
        // several (an override file) would lose the others' settings.
        let files = cur.label(FILES_LABEL).unwrap_or_default();
        if files.contains(',') {
            return Err(target_err(format!(
                "--compose {path}: project {project} was made from several files ({files}); svc-swap re-creates from one and would drop the others' settings"
            )));
        }
        let mut argv = cur.server_entrypoint().to_vec();
        argv.extend(loc.words.iter().cloned());
        let mut warnings = Vec::new();
        // Docker Compose fills variables in before it splits a string
        // command (compose-go interpolates the YAML, then ShellCommand
        // splits), so `$ARGS` can be several words; podman-compose splits
        // first (podman_compose.py 1.6: normalize()'s shlex.split, then
        // rec_subs), so it is one. Either way the words must line up.
        let vars = loc.words.iter().filter(|w| yaml::interpolates(w)).count();
        if vars > 0 && cur.cmd().len() != loc.words.len() {
            return Err(target_err(format!(
                "{path}: service {service}'s command: (line {}) has {} words with variables and {} in all, but container {} runs {}: a variable fills in more or fewer words, so svc-swap cannot tell which word is which",
                loc.line,
                vars,
                loc.words.len(),
                cur.name,
                cur.cmd().len()
            )));
        }
        if !same_argv(cur.cmd(), &loc.words) {
            let w = format!(
                "container {} runs {}, not the file's command (line {}): the swap re-creates it from the file",
                cur.name,
                shell_join(cur.cmd()),
                loc.line
            );
            sweepkit::diag::warning("svc-swap", &w);
            warnings.push(w);
        }
        // podman-compose does not pass stop_grace_period to `podman create`
        // (podman_compose.py 1.6 reads it only for its own `stop -t`), so
        // the container's StopTimeout is podman's 10 s: the file's own
        // word comes first. (Docker Compose v2 sets StopTimeout from it:
        // pkg/compose/create.go getCreateConfigs, `StopTimeout:
        // ToSeconds(service.StopGracePeriod)`; the same is then read twice.)
        let grace_s = yaml::service_scalar(&text, service, "stop_grace_period").and_then(|g| {
            let d = compose_duration(&g);
            if d.is_none() {
                let w = format!("{path}: stop_grace_period {g:?} is not a duration svc-swap reads; the container's stop timeout ({}s) applies", cur.stop_timeout);
                sweepkit::diag::warning("svc-swap", &w);
                warnings.push(w);
            }
            d
        });
        Ok(Compose {
            t,
            engine,
            tool,
            file: path,
            dir,
            service: service.to_string(),
            project,
            text,
            loc,
            cur,
            grace_s,
            line: line_of(&argv),
            new_id: None,
            new_pid: None,
            warnings,
        })
    }

    /// The command words of `line` (after the entrypoint, which the file's
    /// `command:` does not hold).
    fn command_of(&self, line: &ExecLine) -> Result<Vec<String>, Exit> {
        let ep = self.cur.server_entrypoint();
        let n = ep.len();
        let argv = line.logical_argv();
        if argv.len() < n || argv[..n] != *ep {
            return Err(target_err(format!(
                "service {}: the edit would change its entrypoint ({}), which is not in command:",
                self.service,
                shell_join(&self.cur.argv[..self.cur.entrypoint_len])
            )));
        }
        Ok(argv[n..].to_vec())
    }

    /// The file's text with `words` as the command, checked by reading it
    /// back with the parser.
    fn edited(&self, words: &[String]) -> Result<String, Exit> {
        let new = yaml::rewrite(&self.text, &self.loc, words);
        match yaml::locate(&new, &self.service) {
            Ok(l) if l.words == words => Ok(new),
            Ok(l) => Err(target_err(format!(
                "{}: the edited command reads back as {} (svc-swap bug; nothing written)",
                self.file,
                shell_join(&l.words)
            ))),
            Err(e) => Err(target_err(format!(
                "{}: the edited file does not read back ({e}; svc-swap bug; nothing written)",
                self.file
            ))),
        }
    }

    /// `--stop-timeout`, else the file's stop_grace_period, else the
    /// container's StopTimeout.
    fn stop_s(&self, o: &Opts, c: &Inspected) -> u64 {
        o.stop_timeout
            .map_or(self.grace_s.unwrap_or(c.stop_timeout), |d| {
                d.as_secs_f64().ceil() as u64
            })
    }
}

impl Target for Compose<'_> {
    fn info(&self) -> ServiceTarget {
        let mut t = container::service_target(self.engine, &self.cur);
        if let Some(c) = t.container.as_mut() {
            c.compose_file = Some(self.file.clone());
            c.compose_service = Some(self.service.clone());
        }
        t
    }

    fn current(&self) -> &ExecLine {
        &self.line
    }

    fn plan_edit(&self, line: &ExecLine, _in_place: bool) -> Result<Plan, Exit> {
        let words = self.command_of(line)?;
        Ok(Plan {
            path: self.file.clone(),
            old: Some(self.text.clone()),
            new: Some(self.edited(&words)?),
            line: line.clone(),
            restores: None,
            method: SwapMethod::Compose,
        })
    }

    fn plan_restore(&self, _in_place: bool) -> Result<Plan, Exit> {
        let Some(b) = far_side::backups(self.t, &self.file)?.pop() else {
            return Err(target_err(format!(
                "{}: no earlier version to restore ({}.sweepkit-bak.*)",
                self.file, self.file
            )));
        };
        let text =
            far_side::read_file(self.t, &b)?.ok_or_else(|| target_err(format!("{b} vanished")))?;
        let l = yaml::locate(&text, &self.service).map_err(|m| target_err(format!("{b}: {m}")))?;
        let mut argv = self.cur.argv[..self.cur.entrypoint_len].to_vec();
        argv.extend(l.words);
        Ok(Plan {
            path: self.file.clone(),
            old: Some(self.text.clone()),
            new: Some(text),
            line: line_of(&argv),
            restores: Some(b),
            method: SwapMethod::Compose,
        })
    }

    fn state_dir(&self) -> String {
        state_dir(&self.project, &self.service)
    }

    fn live_matches(&mut self, line: &ExecLine) -> Result<bool, Exit> {
        let c = container::inspect(self.t, self.engine, &self.cur.name)?;
        Ok(c.running && same_argv(c.server_argv(), &line.logical_argv()))
    }

    fn job_script(&self) -> &'static str {
        job::COMPOSE
    }

    fn job_args(
        &mut self,
        o: &Opts,
        // The new argv is checked from inspect once the job ended (`finish`).
        _new: &ExecLine,
        old: &ExecLine,
    ) -> Result<(Vec<String>, StopInfo), Exit> {
        let c = container::inspect(self.t, self.engine, &self.cur.name)?;
        let pids = container::host_pids(self.t, self.engine, &c);
        let mut info = StopInfo::default();
        if c.running {
            info.old_main_pid = Some(c.pid);
            info.old_pids = pids.clone();
        }
        let mut args = vec![
            self.engine.cli().to_string(),
            shell_join(&self.tool),
            self.file.clone(),
            self.dir.clone(),
            self.project.clone(),
            self.service.clone(),
            c.name.clone(),
            c.id.clone(),
            self.stop_s(o, &c).to_string(),
        ];
        args.extend(crate::target::settle_args(o, o.port));
        args.push(crate::process::argv_hex(&old.logical_argv()));
        args.extend(pids.iter().map(u32::to_string));
        self.cur = c;
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
        let code = st.get("stop_exit").unwrap_or("?");
        info.detail = Some(container::stop_detail(&name, info, code, None));
        let new = container::inspect(self.t, self.engine, &name)?;
        self.new_id = Some(new.id.clone());
        self.new_pid = Some(new.pid).filter(|p| *p > 0);
        Ok(StartInfo {
            started_at: crate::target::stamp_of(st, "t_start"),
            main_pid: self.new_pid,
            cmdline_verified: Some(
                new.running && same_argv(new.server_argv(), &line.logical_argv()),
            ),
            ..Default::default()
        })
    }

    fn finish_record(&mut self, rec: &mut sweepkit::records::SwapRecord) {
        if let (Some(c), Some(id)) = (rec.target.container.as_mut(), &self.new_id) {
            c.id = id.clone();
        }
        rec.warnings.append(&mut self.warnings);
    }

    fn ready_env(&self) -> Vec<(String, String)> {
        container::ready_env(self.engine, &self.cur.name, self.new_pid)
    }

    fn log_tail(&self) -> Vec<String> {
        container::log_tail(self.t, self.engine, &self.cur.name)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn variables_match_any_one_word() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let want = v(&["sim", "--model", "${MODEL:-m}", "--n", "2"]);
        assert!(super::same_argv(
            &v(&["sim", "--model", "big", "--n", "2"]),
            &want
        ));
        assert!(!super::same_argv(
            &v(&["sim", "--model", "big", "--n", "3"]),
            &want
        ));
        assert!(!super::same_argv(
            &v(&["sim", "--model", "a", "b", "--n", "2"]),
            &want
        ));
    }

    #[test]
    fn compose_durations() {
        use super::compose_duration as d;
        assert_eq!(d("10s"), Some(10));
        assert_eq!(d("1m30s"), Some(90));
        assert_eq!(d("500ms"), Some(1));
        assert_eq!(d("7"), Some(7));
        assert_eq!(d("soon"), None);
    }
}
