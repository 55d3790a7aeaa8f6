//! `--unit NAME`: a systemd service, driven only through `systemctl` and
//! `journalctl` argvs on the transport. Edits go to a named drop-in (or the
//! unit file with `--in-place`), then daemon-reload, then `systemctl show`
//! must carry the new ExecStart with NeedDaemonReload=no.

use std::collections::BTreeMap;
use std::time::Duration;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{
    ServiceManager, ServiceTarget, StartInfo, StopInfo, StopResult, SwapMethod,
};
use sweepkit::transport::Transport;

use crate::execstart::{self, ExecError, ExecLine};
use crate::far_side;
use crate::job::{self, State};
use crate::process_spec::parse_timespan;
use crate::show;
use crate::target::{cmdline_matches, Opts, Plan, Target};
use crate::unitfile::{self, CatFile, UnitFileError};

pub const DROP_IN: &str = "50-sweepkit.conf";

pub struct Systemd<'t> {
    t: &'t dyn Transport,
    unit: String,
    props: BTreeMap<String, String>,
    files: Vec<CatFile>,
    exec: ExecLine,
    /// The file the effective ExecStart comes from.
    exec_file: String,
}

fn err(code: u8, msg: String) -> Exit {
    Exit::new(code, anyhow::anyhow!(msg))
}

/// Why a unit has not one ExecStart svc-swap can edit (said after "unit
/// NAME").
#[derive(Debug, thiserror::Error)]
enum UnitExecError {
    #[error("{path}: {err}")]
    File { path: String, err: UnitFileError },
    #[error("has no ExecStart")]
    NoExecStart,
    #[error("{path}: {err}")]
    Exec { path: String, err: ExecError },
    #[error("has {0} ExecStart lines; svc-swap edits units with one")]
    Several(usize),
}

/// The effective ExecStart of `files` with `path` replaced by `text`
/// (`None`: removed; a path not among them is appended as a drop-in).
fn effective(
    files: &[CatFile],
    path: &str,
    text: Option<&str>,
) -> Result<(ExecLine, String), UnitExecError> {
    let mut list: Vec<CatFile> = files.iter().filter(|f| f.path != path).cloned().collect();
    if let Some(t) = text {
        let at = files
            .iter()
            .position(|f| f.path == path)
            .unwrap_or(list.len());
        list.insert(
            at.min(list.len()),
            CatFile {
                path: path.into(),
                text: t.into(),
            },
        );
    }
    let mut found: Vec<(unitfile::Entry, String)> = Vec::new();
    for f in &list {
        let entries = unitfile::entries(&f.text).map_err(|err| UnitExecError::File {
            path: f.path.clone(),
            err,
        })?;
        for e in entries
            .into_iter()
            .filter(|e| e.key == "ExecStart" && e.section == "Service")
        {
            if e.value.is_empty() {
                found.clear();
            } else {
                found.push((e, f.path.clone()));
            }
        }
    }
    match found.as_slice() {
        [] => Err(UnitExecError::NoExecStart),
        [(e, p)] => execstart::parse(&e.value)
            .map(|l| (l, p.clone()))
            .map_err(|err| UnitExecError::Exec {
                path: p.clone(),
                err,
            }),
        more => Err(UnitExecError::Several(more.len())),
    }
}

/// `--unit NAME` as systemd names it (`.service` when no type is given).
pub fn unit_name(name: &str) -> String {
    if name.contains('.') {
        name.to_string()
    } else {
        format!("{name}.service")
    }
}

/// Where a unit's swap jobs keep their state (job.rs).
pub fn state_dir(unit: &str) -> String {
    format!("/run/sweepkit-swap/{unit}")
}

impl<'t> Systemd<'t> {
    pub fn load(t: &'t dyn Transport, name: &str) -> Result<Self, Exit> {
        let unit = unit_name(name);
        let mut s = Systemd {
            t,
            unit,
            props: BTreeMap::new(),
            files: Vec::new(),
            exec: ExecLine {
                prefix: String::new(),
                words: Vec::new(),
            },
            exec_file: String::new(),
        };
        s.refresh()?;
        match s.prop("LoadState") {
            "loaded" => {}
            "not-found" => {
                return Err(err(
                    exit::TARGET_ERROR,
                    format!("unit {} not found", s.unit),
                ))
            }
            other => {
                return Err(err(
                    exit::TARGET_ERROR,
                    format!("unit {} is {other}", s.unit),
                ))
            }
        }
        let cat = far_side::check(
            t,
            &["systemctl", "cat", "--", &s.unit],
            far_side::SHORT,
            exit::TARGET_ERROR,
        )?;
        s.files = unitfile::split_cat(&cat);
        let (exec, file) = effective(&s.files, "", None)
            .map_err(|m| err(exit::TARGET_ERROR, format!("unit {} {m}", s.unit)))?;
        s.exec = exec;
        s.exec_file = file;
        Ok(s)
    }

    fn refresh(&mut self) -> Result<(), Exit> {
        let out = far_side::check(
            self.t,
            &["systemctl", "show", "-p", show::PROPS, "--", &self.unit],
            far_side::SHORT,
            exit::TARGET_ERROR,
        )?;
        self.props = show::parse(&out, show::PROPS);
        Ok(())
    }

    fn prop(&self, k: &str) -> &str {
        self.props.get(k).map_or("", String::as_str)
    }

    fn drop_in_path(&self) -> String {
        format!("/etc/systemd/system/{}.d/{DROP_IN}", self.unit)
    }

    fn cgroup_pids(&self) -> Result<Vec<u32>, Exit> {
        let cg = self.prop("ControlGroup");
        if cg.is_empty() {
            return Ok(Vec::new());
        }
        let script = r#"for d in /sys/fs/cgroup /sys/fs/cgroup/unified /sys/fs/cgroup/systemd; do
if [ -r "$d$1/cgroup.procs" ]; then exec find "$d$1" -name cgroup.procs -exec cat {} +; fi; done"#;
        let out = far_side::run(self.t, &["sh", "-c", script, "sh", cg], far_side::SHORT)?;
        Ok(out
            .stdout_str()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect())
    }

    /// The journal line saying how the stop of invocation `id` went.
    fn stop_journal(&self, id: &str) -> Option<String> {
        let m = format!("INVOCATION_ID={id}");
        let out = far_side::run(
            self.t,
            &["journalctl", "-q", "-o", "cat", "--no-pager", &m],
            far_side::SHORT,
        )
        .ok()?;
        let text = out.stdout_str();
        let hit = text.lines().find(|l| l.contains("timed out. Killing"));
        hit.map(String::from)
    }
}

impl Target for Systemd<'_> {
    fn info(&self) -> ServiceTarget {
        ServiceTarget {
            manager: ServiceManager::Systemd,
            unit: self.unit.clone(),
            port: crate::template_unit::instance_port(&self.unit, &self.exec),
            ..Default::default()
        }
    }

    fn current(&self) -> &ExecLine {
        &self.exec
    }

    fn plan_edit(&self, line: &ExecLine, in_place: bool) -> Result<Plan, Exit> {
        let rendered = execstart::render(line);
        if !in_place {
            let path = self.drop_in_path();
            let new = format!(
                "# Written by svc-swap; `svc-swap --unit {} --restore` puts back the previous one.\n\
                 [Service]\nExecStart=\nExecStart={rendered}\n",
                self.unit
            );
            let old = far_side::read_file(self.t, &path)?;
            return Ok(Plan {
                path,
                old,
                new: Some(new),
                line: line.clone(),
                restores: None,
                method: SwapMethod::DropIn,
            });
        }
        let path = self.prop("FragmentPath").to_string();
        if self.exec_file != path {
            return Err(err(
                exit::TARGET_ERROR,
                format!(
                    "--in-place: ExecStart comes from {}, not {path}",
                    self.exec_file
                ),
            ));
        }
        let text = far_side::read_file(self.t, &path)?
            .ok_or_else(|| err(exit::TARGET_ERROR, format!("{path}: vanished")))?;
        let entries = unitfile::entries(&text)
            .map_err(|e| err(exit::TARGET_ERROR, format!("{path}: {e}")))?;
        let ex = unitfile::exec_starts(&entries, Some("Service"));
        let entry = ex
            .last()
            .ok_or_else(|| err(exit::TARGET_ERROR, format!("{path}: no ExecStart")))?;
        let new = unitfile::replace_entry(&text, entry, &rendered);
        Ok(Plan {
            path,
            old: Some(text),
            new: Some(new),
            line: line.clone(),
            restores: None,
            method: SwapMethod::InPlace,
        })
    }

    fn plan_restore(&self, in_place: bool) -> Result<Plan, Exit> {
        let (path, method) = if in_place {
            (self.prop("FragmentPath").to_string(), SwapMethod::InPlace)
        } else {
            (self.drop_in_path(), SwapMethod::DropIn)
        };
        let old = far_side::read_file(self.t, &path)?;
        let backup = far_side::backups(self.t, &path)?.pop();
        let new = match &backup {
            Some(b) => Some(far_side::read_file(self.t, b)?.unwrap_or_default()),
            None if !in_place && old.is_some() => None,
            None => {
                return Err(err(
                    exit::TARGET_ERROR,
                    format!("{path}: nothing to restore"),
                ))
            }
        };
        let (line, _) = effective(&self.files, &path, new.as_deref())
            .map_err(|m| err(exit::TARGET_ERROR, format!("restoring {path}: unit {m}")))?;
        Ok(Plan {
            path,
            old,
            new,
            line,
            restores: backup,
            method,
        })
    }

    fn verify(&mut self, line: &ExecLine) -> Result<(), Exit> {
        self.refresh()?;
        if self.prop("NeedDaemonReload") != "no" {
            return Err(err(
                exit::NOT_APPLIED,
                format!(
                    "{}: NeedDaemonReload={} after daemon-reload",
                    self.unit,
                    self.prop("NeedDaemonReload")
                ),
            ));
        }
        let shown = show::exec_argv(self.prop("ExecStart")).unwrap_or("");
        if !show::carries(shown, line) {
            return Err(err(
                exit::NOT_APPLIED,
                format!("{}: systemctl show -p ExecStart has '{shown}', not the new line (another drop-in overrides it?)", self.unit),
            ));
        }
        Ok(())
    }

    fn needs_verdict(&self) -> bool {
        true
    }

    fn state_dir(&self) -> String {
        state_dir(&self.unit)
    }

    fn live_matches(&mut self, line: &ExecLine) -> Result<bool, Exit> {
        self.refresh()?;
        if !matches!(self.prop("ActiveState"), "active" | "activating")
            || self.verify(line).is_err()
        {
            return Ok(false);
        }
        let pid: u32 = self.prop("MainPID").parse().unwrap_or(0);
        // `%` specifiers and `$` variables cannot be compared with the argv
        // (None): systemd's own ExecStart, checked above, decides.
        Ok(pid != 0
            && cmdline_matches(line, far_side::cmdline(self.t, pid)?.as_deref()) != Some(false))
    }

    fn job_script(&self) -> &'static str {
        job::SYSTEMD
    }

    fn under_systemd_run(&self) -> bool {
        true
    }

    fn job_args(
        &mut self,
        o: &Opts,
        _new: &ExecLine,
        _old: &ExecLine,
    ) -> Result<(Vec<String>, StopInfo), Exit> {
        self.refresh()?;
        let mut info = StopInfo::default();
        let main: u32 = self.prop("MainPID").parse().unwrap_or(0);
        info.old_main_pid = (main != 0).then_some(main);
        info.old_invocation_id =
            Some(self.prop("InvocationID").to_string()).filter(|s| !s.is_empty());
        let mut pids = self.cgroup_pids()?;
        if main != 0 && !pids.contains(&main) {
            pids.push(main);
        }
        info.old_pids = pids.clone();
        let limit = parse_timespan(self.prop("TimeoutStopUSec")).unwrap_or(Duration::from_secs(90));
        let secs = |d: Duration| d.as_secs().max(1).to_string();
        let mut args = vec![
            self.unit.clone(),
            secs(limit.saturating_add(Duration::from_secs(60))),
            secs(o.start_timeout),
        ];
        args.extend(crate::target::settle_args(o, o.port));
        args.extend(pids.iter().map(u32::to_string));
        Ok((args, info))
    }

    fn finish(
        &mut self,
        st: &State,
        line: &ExecLine,
        info: &mut StopInfo,
    ) -> Result<StartInfo, Exit> {
        let result = st.get("stop_result").unwrap_or_default().to_string();
        let journal = info
            .old_invocation_id
            .as_deref()
            .and_then(|id| self.stop_journal(id));
        crate::target::stop_facts(st, info);
        classify_stop(st, &result, journal, info);
        info.systemd_result = Some(result);
        self.refresh()?;
        let pid: u32 = st.get("main_pid").and_then(|p| p.parse().ok()).unwrap_or(0);
        let mut s = StartInfo {
            started_at: crate::target::stamp_of(st, "t_start"),
            main_pid: (pid != 0).then_some(pid),
            invocation_id: st
                .get("invocation_id")
                .filter(|s| !s.is_empty())
                .map(String::from),
            reset_failed: st.has("reset_failed", "1"),
            ..Default::default()
        };
        s.cmdline_verified = cmdline_matches(line, st.cmdline().as_deref());
        if pid != 0 && s.cmdline_verified != Some(true) {
            s.cmdline_verified = cmdline_matches(line, far_side::cmdline(self.t, pid)?.as_deref());
        }
        Ok(s)
    }

    fn ready_env(&self) -> Vec<(String, String)> {
        vec![
            ("SWEEPKIT_UNIT".into(), self.unit.clone()),
            ("SWEEPKIT_MAIN_PID".into(), self.prop("MainPID").into()),
            (
                "SWEEPKIT_INVOCATION_ID".into(),
                self.prop("InvocationID").into(),
            ),
        ]
    }

    fn log_tail(&self) -> Vec<String> {
        let argv = [
            "journalctl",
            "-q",
            "-o",
            "cat",
            "--no-pager",
            "-n",
            "20",
            "-u",
            &self.unit,
        ];
        far_side::run(self.t, &argv, far_side::SHORT)
            .map(|o| o.stdout_str().lines().map(String::from).collect())
            .unwrap_or_default()
    }
}

/// The stop report from the job's state, systemd's `Result=` after the
/// stop and the journal's kill line for the old invocation (if any).
fn classify_stop(st: &State, result: &str, journal: Option<String>, info: &mut StopInfo) {
    info.term_resent = crate::target::term_resent(st);
    if let Some(left) = st.get("force_killed") {
        info.result = StopResult::ForceKilled;
        info.detail = Some(format!("sent SIGKILL to the unit's leftover PIDs [{left}]"));
        return;
    }
    let was_active = matches!(
        st.get("stop_was").unwrap_or_default(),
        "active" | "activating" | "reloading" | "deactivating"
    );
    info.result = if !was_active {
        StopResult::AlreadyStopped
    } else if result == "timeout" || journal.is_some() {
        StopResult::SigkillAfterTimeout
    } else if result == "success" && info.term_resent > 0 {
        StopResult::CleanAfterResend
    } else if result == "success" {
        StopResult::Clean
    } else {
        StopResult::Failed
    };
    info.detail = journal.or_else(|| match info.result {
        StopResult::Failed => Some(format!("Result={result}")),
        StopResult::CleanAfterResend => Some(format!(
            "the unit outlived systemd's SIGTERM; stopped after {} more (systemctl kill)",
            info.term_resent
        )),
        _ => None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stop(state: &str, result: &str, journal: Option<&str>) -> StopInfo {
        let mut info = StopInfo::default();
        let j = journal.map(String::from);
        classify_stop(&State::parse(state), result, j, &mut info);
        info
    }

    #[test]
    fn resent_sigterm_is_told_apart() {
        let i = stop("stop_was=activating\nterm_resent=1\n", "success", None);
        assert_eq!((i.result, i.term_resent), (StopResult::CleanAfterResend, 1));
        assert!(i.detail.unwrap().contains("1 more"));
        let i = stop("stop_was=active\n", "success", None);
        assert_eq!(
            (i.result, i.term_resent, i.detail),
            (StopResult::Clean, 0, None)
        );
        let i = stop(
            "stop_was=active\nterm_resent=1\nterm_resent=2\n",
            "timeout",
            Some("timed out. Killing."),
        );
        assert_eq!(
            (i.result, i.term_resent),
            (StopResult::SigkillAfterTimeout, 2)
        );
    }
}
