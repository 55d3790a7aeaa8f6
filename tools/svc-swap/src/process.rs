//! `--manager process`: supervise a server described by a process spec
//! (see `process_spec.rs`) without systemd. Stop: SIGTERM to the pid file's process
//! group, wait TimeoutStopSec, SIGKILL only with `--force-kill`. Start:
//! `setsid`, output appended to LogFile, pid file written by the child.

use std::time::Duration;

use sweepkit::exit;
use sweepkit::exit::Exit;
use sweepkit::records::{
    ServiceManager, ServiceTarget, StartInfo, StopInfo, StopResult, SwapMethod,
};
use sweepkit::transport::{shell_join, Transport};

use crate::execstart::ExecLine;
use crate::far_side;
use crate::job::{self, State};
use crate::process_spec::{self, Spec};
use crate::target::{cmdline_matches, Opts, Plan, Target};

pub struct Process<'t> {
    t: &'t dyn Transport,
    path: String,
    text: String,
    spec: Spec,
    new_pid: Option<u32>,
}

fn target_err(msg: String) -> Exit {
    Exit::new(exit::TARGET_ERROR, anyhow::anyhow!(msg))
}

/// Where a spec's swap jobs keep their state (job.rs).
pub fn state_dir(spec: &str) -> String {
    format!("{spec}.sweepkit-swap")
}

impl<'t> Process<'t> {
    pub fn load(t: &'t dyn Transport, path: &str) -> Result<Self, Exit> {
        let text = far_side::read_file(t, path)?
            .ok_or_else(|| target_err(format!("{path}: no such spec file")))?;
        let spec =
            process_spec::parse(path, &text).map_err(|e| target_err(format!("{path}: {e}")))?;
        Ok(Process {
            t,
            path: path.to_string(),
            text,
            spec,
            new_pid: None,
        })
    }
}

impl Target for Process<'_> {
    fn info(&self) -> ServiceTarget {
        ServiceTarget {
            manager: ServiceManager::Process,
            unit: self.path.clone(),
            log: Some(self.spec.log_file.clone()),
            pid_file: Some(self.spec.pid_file.clone()),
            port: self.spec.port,
            ..Default::default()
        }
    }

    fn current(&self) -> &ExecLine {
        &self.spec.exec
    }

    fn plan_edit(&self, line: &ExecLine, _in_place: bool) -> Result<Plan, Exit> {
        let new = crate::spec_layout::replace_exec(
            &self.text,
            &self.spec.exec_entry,
            &self.spec.exec,
            line,
        );
        Ok(Plan {
            path: self.path.clone(),
            old: Some(self.text.clone()),
            new: Some(new),
            line: line.clone(),
            restores: None,
            method: SwapMethod::Spec,
        })
    }

    fn plan_restore(&self, _in_place: bool) -> Result<Plan, Exit> {
        let Some(b) = far_side::backups(self.t, &self.path)?.pop() else {
            return Err(target_err(format!("{}: no backup to restore", self.path)));
        };
        let text =
            far_side::read_file(self.t, &b)?.ok_or_else(|| target_err(format!("{b} vanished")))?;
        let spec =
            process_spec::parse(&self.path, &text).map_err(|e| target_err(format!("{b}: {e}")))?;
        Ok(Plan {
            path: self.path.clone(),
            old: Some(self.text.clone()),
            new: Some(text),
            line: spec.exec,
            restores: Some(b),
            method: SwapMethod::Spec,
        })
    }

    fn verify(&mut self, line: &ExecLine) -> Result<(), Exit> {
        let text = far_side::read_file(self.t, &self.path)?.unwrap_or_default();
        let spec = process_spec::parse(&self.path, &text)
            .map_err(|e| Exit::new(exit::NOT_APPLIED, anyhow::anyhow!("{}: {e}", self.path)))?;
        if spec.exec.logical_argv() != line.logical_argv() {
            return Err(Exit::new(
                exit::NOT_APPLIED,
                anyhow::anyhow!(
                    "{}: ExecStart reads back as {:?}",
                    self.path,
                    spec.exec.logical_argv()
                ),
            ));
        }
        // self.spec stays the old one: its stop settings and program name
        // belong to the process still running.
        Ok(())
    }

    fn state_dir(&self) -> String {
        state_dir(&self.path)
    }

    fn live_matches(&mut self, line: &ExecLine) -> Result<bool, Exit> {
        let Some(live) = far_side::pidfile_process(self.t, &self.spec.pid_file)? else {
            return Ok(false);
        };
        self.new_pid = Some(live.pid);
        Ok(cmdline_matches(line, live.argv.as_deref()) == Some(true))
    }

    fn job_script(&self) -> &'static str {
        job::PROCESS
    }

    fn job_args(
        &mut self,
        o: &Opts,
        new: &ExecLine,
        old: &ExecLine,
    ) -> Result<(Vec<String>, StopInfo), Exit> {
        let mut info = StopInfo::default();
        let (pid, target) = match far_side::pidfile_process(self.t, &self.spec.pid_file)? {
            Some(live) => {
                check_program(self, live.pid, live.argv.as_deref())?;
                info.old_main_pid = Some(live.pid);
                info.old_pids = vec![live.pid];
                // setsid made the server a group leader: signal its group.
                let target = if live.stat.pgid == i64::from(live.pid) {
                    format!("-{}", live.pid)
                } else {
                    live.pid.to_string()
                };
                (live.pid, target)
            }
            None => (0, String::new()),
        };
        let s = &self.spec;
        let grace = o.stop_timeout.unwrap_or(s.timeout_stop);
        let env: Vec<String> = std::iter::once("env".to_string())
            .chain(s.env.iter().map(|(k, v)| format!("{k}={v}")))
            .collect();
        let mut args = vec![
            s.working_dir.clone(),
            s.log_file.clone(),
            s.pid_file.clone(),
            grace.as_millis().to_string(),
            pid.to_string(),
            target,
        ];
        args.extend(crate::target::settle_args(o, o.port.or(s.port)));
        args.push(shell_join(&env));
        args.push(shell_join(&new.logical_argv()));
        args.push(shell_join(&old.logical_argv()));
        args.push(argv_hex(&new.logical_argv()));
        args.push(argv_hex(&old.logical_argv()));
        Ok((args, info))
    }

    fn finish(
        &mut self,
        st: &State,
        line: &ExecLine,
        info: &mut StopInfo,
    ) -> Result<StartInfo, Exit> {
        crate::target::stop_facts(st, info);
        let pid = info.old_main_pid.unwrap_or(0);
        info.detail = match info.result {
            StopResult::SigkillAfterTimeout => Some(format!(
                "PID {pid} ignored SIGTERM for TimeoutStopSec; sent SIGKILL to its group"
            )),
            StopResult::CleanAfterResend => Some(format!(
                "PID {pid} outlived the first SIGTERM; ended after {} more",
                info.term_resent
            )),
            _ => None,
        };
        // The whole group the stop waited for (its workers after the leader).
        if let Some(g) = st.get("old_group") {
            let group: Vec<u32> = g.split(' ').filter_map(|p| p.parse().ok()).collect();
            if !group.is_empty() {
                info.old_pids = group;
            }
        }
        let pid: Option<u32> = st.get("main_pid").and_then(|p| p.parse().ok());
        self.new_pid = pid;
        let mut verified = cmdline_matches(line, st.cmdline().as_deref());
        if let (Some(pid), false) = (pid, verified == Some(true)) {
            // The exec chain (sh -> env -> server) may still be on its way.
            for _ in 0..20 {
                verified = cmdline_matches(line, far_side::cmdline(self.t, pid)?.as_deref());
                if verified == Some(true) || far_side::alive(self.t, pid)?.is_none() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(StartInfo {
            started_at: crate::target::stamp_of(st, "t_start"),
            main_pid: pid,
            cmdline_verified: verified,
            log_offset: st.get("log_offset").and_then(|v| v.parse().ok()),
            ..Default::default()
        })
    }

    fn ready_env(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("SWEEPKIT_SPEC".into(), self.path.clone()),
            ("SWEEPKIT_LOG".into(), self.spec.log_file.clone()),
        ];
        if let Some(p) = self.new_pid {
            v.push(("SWEEPKIT_MAIN_PID".into(), p.to_string()));
        }
        if let Some(p) = self.spec.port {
            v.push(("SWEEPKIT_PORT".into(), p.to_string()));
        }
        v
    }

    fn log_tail(&self) -> Vec<String> {
        far_side::tail(self.t, &self.spec.log_file, 20)
    }
}

/// The argv as /proc/PID/cmdline holds it (NUL after each word), in the
/// hex `od -An -v -tx1` writes.
pub(crate) fn argv_hex(argv: &[String]) -> String {
    argv.iter()
        .flat_map(|w| w.bytes().chain(std::iter::once(0)))
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A stale pid file may name a recycled PID: signal only what runs the
/// spec's program.
fn check_program(p: &Process, pid: u32, argv: Option<&[String]>) -> Result<(), Exit> {
    let prog = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let want = prog(&p.spec.exec.logical_argv()[0]);
    if let Some(argv) = argv {
        if prog(&argv[0]) != want {
            return Err(Exit::new(
                exit::STOP_FAILED,
                anyhow::anyhow!(
                    "{}: PID {pid} runs {}, not {want}; not signalling it (stale pid file?)",
                    p.spec.pid_file,
                    argv[0]
                ),
            ));
        }
    }
    Ok(())
}
