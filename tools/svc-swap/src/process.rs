//! `--manager process`: supervise a server described by a process spec
//! (see `spec.rs`) without systemd. Stop: SIGTERM to the pid file's process
//! group, wait TimeoutStopSec, SIGKILL only with `--force-kill`. Start:
//! `setsid`, output appended to LogFile, pid file written by the child.

use std::time::{Duration, Instant};

use sweepkit::exit;
use sweepkit::records::{ServiceTarget, StartInfo, StopInfo};
use sweepkit::report::Exit;
use sweepkit::transport::Transport;

use crate::execstart::{self, ExecLine};
use crate::far;
use crate::spec::{self, Spec};
use crate::target::{cmdline_matches, Opts, Plan, Target};
use crate::unitfile;

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

impl<'t> Process<'t> {
    pub fn load(t: &'t dyn Transport, path: &str) -> Result<Self, Exit> {
        let text = far::read_file(t, path)?
            .ok_or_else(|| target_err(format!("{path}: no such spec file")))?;
        let spec = spec::parse(path, &text).map_err(|e| target_err(format!("{path}: {e}")))?;
        Ok(Process {
            t,
            path: path.to_string(),
            text,
            spec,
            new_pid: None,
        })
    }

    fn read_pid(&self) -> Result<Option<u32>, Exit> {
        let text = far::read_file(self.t, &self.spec.pid_file)?;
        Ok(text.and_then(|s| s.trim().parse().ok()))
    }

    fn wait_gone(&self, pid: u32, limit: Duration) -> Result<bool, Exit> {
        let t0 = Instant::now();
        loop {
            if far::alive(self.t, pid)?.is_none() {
                return Ok(true);
            }
            if t0.elapsed() >= limit {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The start script: data arrive as positional parameters only. The child
/// writes its own PID (temp + mv) before exec, so the pid file names the
/// server itself, whatever `setsid` does about forking.
const START: &str = r#"wd=$1 log=$2 pidf=$3; shift 3
rm -f -- "$pidf"
cd "$wd" || exit 96
off=0; [ -f "$log" ] && off=$(wc -c < "$log")
setsid sh -c 'echo $$ > "$0.sweepkit-tmp" && mv -f -- "$0.sweepkit-tmp" "$0" && exec "$@"' "$pidf" "$@" >>"$log" 2>&1 </dev/null &
i=0
while [ ! -s "$pidf" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
printf '%s %s\n' "$(cat -- "$pidf")" "$off""#;

impl Target for Process<'_> {
    fn info(&self) -> ServiceTarget {
        ServiceTarget {
            manager: "process".into(),
            unit: self.path.clone(),
            log: Some(self.spec.log_file.clone()),
            port: self.spec.port,
            ..Default::default()
        }
    }

    fn current(&self) -> &ExecLine {
        &self.spec.exec
    }

    fn plan_edit(&self, line: &ExecLine, _in_place: bool) -> Result<Plan, Exit> {
        let new =
            unitfile::replace_entry(&self.text, &self.spec.exec_entry, &execstart::render(line));
        Ok(Plan {
            path: self.path.clone(),
            old: Some(self.text.clone()),
            new: Some(new),
            line: line.clone(),
            restores: None,
            method: "spec",
        })
    }

    fn plan_restore(&self, _in_place: bool) -> Result<Plan, Exit> {
        let Some(b) = far::backups(self.t, &self.path)?.pop() else {
            return Err(target_err(format!("{}: no backup to restore", self.path)));
        };
        let text =
            far::read_file(self.t, &b)?.ok_or_else(|| target_err(format!("{b} vanished")))?;
        let spec = spec::parse(&self.path, &text).map_err(|e| target_err(format!("{b}: {e}")))?;
        Ok(Plan {
            path: self.path.clone(),
            old: Some(self.text.clone()),
            new: Some(text),
            line: spec.exec,
            restores: Some(b),
            method: "spec",
        })
    }

    fn reload(&mut self) -> Result<(), Exit> {
        Ok(())
    }

    fn verify(&mut self, line: &ExecLine) -> Result<(), Exit> {
        let text = far::read_file(self.t, &self.path)?.unwrap_or_default();
        let spec = spec::parse(&self.path, &text)
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

    fn stop(&mut self, o: &Opts) -> Result<StopInfo, Exit> {
        let t0 = Instant::now();
        let mut info = StopInfo::default();
        let port = o.port.or(self.spec.port);
        match self.read_pid()? {
            Some(pid) if far::alive(self.t, pid)?.is_some() => {
                stop_pid(self, pid, o, &mut info)?;
            }
            _ => info.result = "already_stopped".into(),
        }
        crate::settle::wait_port_and_gpu(self.t, port, o, &info.old_pids.clone(), &mut info)?;
        far::remove(self.t, &self.spec.pid_file)?;
        info.duration_s = t0.elapsed().as_secs_f64();
        Ok(info)
    }

    fn start(&mut self, _o: &Opts, line: &ExecLine) -> Result<StartInfo, Exit> {
        let started = std::time::SystemTime::now();
        let s = &self.spec;
        let mut argv: Vec<String> = [
            "sh",
            "-c",
            START,
            "sh",
            &s.working_dir,
            &s.log_file,
            &s.pid_file,
        ]
        .map(String::from)
        .to_vec();
        argv.push("env".into());
        argv.extend(s.env.iter().map(|(k, v)| format!("{k}={v}")));
        let words = line.logical_argv();
        argv.extend(words.iter().cloned());
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = far::check(self.t, &refs, far::SHORT, exit::START_FAILED)?;
        // "PID LOG_OFFSET": the log's size before the server wrote to it.
        let mut words = out.split_whitespace();
        let pid = words.next().and_then(|w| w.parse::<u32>().ok());
        let log_offset = words.next().and_then(|w| w.parse::<u64>().ok());
        let pid: u32 = pid.ok_or(()).map_err(|_| {
            Exit::new(
                exit::START_FAILED,
                anyhow::anyhow!(
                    "{}: no pid file after start (see {})",
                    s.pid_file,
                    s.log_file
                ),
            )
        })?;
        self.new_pid = Some(pid);
        // Wait for the exec chain (sh -> env -> server) to reach the server.
        let t0 = Instant::now();
        let mut verified = None;
        while t0.elapsed() < Duration::from_secs(3) {
            if far::alive(self.t, pid)?.is_none() {
                return Err(Exit::new(
                    exit::START_FAILED,
                    anyhow::anyhow!("PID {pid} exited at once (see {})", s.log_file),
                ));
            }
            let got = far::cmdline(self.t, pid)?;
            verified = cmdline_matches(line, got.as_deref());
            if verified == Some(true) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(StartInfo {
            started_at: sweepkit::time::rfc3339(started),
            main_pid: Some(pid),
            cmdline_verified: verified,
            log_offset,
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
        far::tail(self.t, &self.spec.log_file, 20)
    }
}

/// SIGTERM, wait TimeoutStopSec, then SIGKILL only with `--force-kill`.
fn stop_pid(p: &Process, pid: u32, o: &Opts, info: &mut StopInfo) -> Result<(), Exit> {
    let stat = far::alive(p.t, pid)?;
    // A stale pid file may name a recycled PID: signal only what runs the
    // spec's program.
    let prog = |s: &str| s.rsplit('/').next().unwrap_or(s).to_string();
    let want = prog(&p.spec.exec.logical_argv()[0]);
    if let Some(argv) = far::cmdline(p.t, pid)? {
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
    info.old_main_pid = Some(pid);
    info.old_pids = vec![pid];
    // setsid made the server a group leader: signal its whole group.
    let target = match stat {
        Some(s) if s.pgid == i64::from(pid) => format!("-{pid}"),
        _ => pid.to_string(),
    };
    far::kill(p.t, "TERM", &target)?;
    let limit = o.stop_timeout.unwrap_or(p.spec.timeout_stop);
    if p.wait_gone(pid, limit)? {
        info.result = "clean".into();
        return Ok(());
    }
    if !o.force_kill {
        return Err(Exit::new(
            exit::STOP_FAILED,
            anyhow::anyhow!(
                "PID {pid} still running {:.1}s after SIGTERM (TimeoutStopSec); \
                 --force-kill sends SIGKILL",
                limit.as_secs_f64()
            ),
        ));
    }
    far::kill(p.t, "KILL", &target)?;
    info.result = "sigkill_after_timeout".into();
    info.detail = Some(format!(
        "PID {pid} ignored SIGTERM for {:.1}s; sent SIGKILL to {target}",
        limit.as_secs_f64()
    ));
    if !p.wait_gone(pid, o.wait)? {
        return Err(Exit::new(
            exit::STOP_FAILED,
            anyhow::anyhow!("PID {pid} survived SIGKILL"),
        ));
    }
    Ok(())
}
