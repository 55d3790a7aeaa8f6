//! `sweep --slurm`'s batch script and sbatch command line. One script
//! serves the whole grid as an array: task N runs config N. Inside the
//! allocation it copies the process spec (the copy is the job's own, so
//! two jobs on one node never edit one file), picks a port from
//! SLURM_JOB_ID (in a lane of its own), reads the API key from the sweep's
//! 0600 file (secrets.rs), runs `svc-swap | wait-ready | loadgen` into the job's
//! records file, the server a job step of its own (`srun --overlap`),
//! and stops the server it started. Every value is quoted as
//! bash's `printf %q` quotes ([`printf_q`]); the options go on sbatch's
//! command line, never into `#SBATCH` lines, so no user text is parsed
//! twice.

use std::fmt::Write as _;

use crate::quote::printf_q;

use crate::grid::PointWords;

use super::plan::{Plan, SCHEDULE_TASK, SPEC, URL};

/// Ports from SLURM_JOB_ID land in [BASE, BASE + SPAN): below Linux's
/// ephemeral range (32768 up), where any client's socket may sit. A job
/// probes only its lane (BASE + id % LANES, then LANES up each time), so
/// two jobs of a node probing at once never pick one port unless their
/// ids are LANES apart.
const PORT_BASE: u32 = 20000;
const PORT_SPAN: u32 = 12000;
const PORT_LANES: u32 = 1000;

fn words(ws: &[String]) -> String {
    ws.iter()
        .map(|w| match w.as_str() {
            SPEC => " \"$spec\"".to_string(),
            URL => " \"$url\"".to_string(),
            _ => format!(" {}", printf_q(w)),
        })
        .collect()
}

/// The batch script for plan `p`; `schedule`: the schedule step's words
/// (sweep-plan step's), run by array task [`SCHEDULE_TASK`] once derived.
pub fn batch(p: &Plan, schedule: Option<&PointWords>) -> String {
    let mut s = String::from(HEAD);
    let q = |v: &str| printf_q(v);
    let _ = writeln!(s, "dir={}", q(&p.dir));
    let _ = writeln!(s, "spec_src={} spec_dir={}", q(&p.spec), q(&p.spec_dir));
    let _ = writeln!(
        s,
        "port_base={PORT_BASE} port_span={PORT_SPAN} port_lanes={PORT_LANES}"
    );
    let _ = writeln!(s, "secrets={}", q(super::secrets::FILE));
    let _ = writeln!(s, "url_head={} url_tail={}", q(&p.url_head), q(&p.url_tail));
    s.push_str("case ${SLURM_ARRAY_TASK_ID:-} in\n");
    let points = p
        .grid
        .points
        .iter()
        .map(|pt| (pt.index, pt.stage_words(p.expect_config)));
    let sched = schedule.map(|w| (SCHEDULE_TASK, w.clone()));
    for (index, w) in points.chain(sched) {
        let _ = writeln!(
            s,
            "{index}) set_=({} ) ready_=({} ) load_=({} ) ;;",
            words(&w.swap),
            words(&w.ready),
            words(&w.load),
        );
    }
    s.push_str(
        "*) echo \"sweep: error: array task ${SLURM_ARRAY_TASK_ID:-none} is no config of this sweep\" >&2; exit 2 ;;\nesac\n",
    );
    s.push_str(BODY);
    let _ = writeln!(
        s,
        "( trap : TERM\n  {}{} --set \"port=$port\" \"${{set_[@]}}\" </dev/null \\\n  | {}{} \"${{ready_[@]}}\" \\\n  | {}{} \"${{load_[@]}}\" >>\"$jd/records.jsonl\"\n  echo \"exits=${{PIPESTATUS[*]}}\" >>\"$jd/env\" ) &",
        q(&p.tools[0]),
        words(&p.stages.target),
        q(&p.tools[1]),
        words(&p.stages.ready),
        q(&p.tools[2]),
        words(&p.stages.load),
    );
    s.push_str(TAIL);
    s
}

const HEAD: &str = r#"#!/bin/bash
# sweep --slurm: array task N runs config N of the grid in this job's
# allocation: svc-swap starts the server from the job's own copy of the
# process spec, wait-ready watches it, loadgen measures each level into
# the job's records file; sweep's control side appends those records to
# the results file when Slurm says the job ended. Written by sweep-plan.
set -u
"#;

const BODY: &str = r#"jd=$dir/job-$SLURM_JOB_ID
mkdir -p "$jd" || exit 1
restarts=${SLURM_RESTART_COUNT:-0}
# A requeued job starts over: the records of its earlier run move aside.
[[ ! -s $jd/records.jsonl ]] || mv -f "$jd/records.jsonl" "$jd/records-before-restart-$restarts.jsonl"
# The API key comes from the sweep's file, which only its owner reads, not
# from sbatch's environment, which slurmctld keeps with the job.
if [[ -r $dir/$secrets ]]; then
  while IFS= read -r kv; do [[ $kv != *=* ]] || export "${kv?}"; done <"$dir/$secrets"
fi
# The port: from the job id, in a lane of its own (the id modulo
# port_lanes), so two jobs on one node differ; the next free one of its
# lane when something else holds it. A port another process takes before
# the server binds it is the transport's failure: the config runs again.
port=$((port_base + SLURM_JOB_ID % port_lanes)) port_from=job_id
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && ((port + port_lanes < port_base + port_span)); do
  port=$((port + port_lanes)) port_from=probed
done
url=$url_head:$port$url_tail
# The server runs as a step of the job (srun --overlap: it shares the
# job's CPUs, memory and GPUs, and sees the GPUs gres gave), from its spec
# copy's ExecStart, so svc-swap's process manager still starts and watches
# it. Slurm 22.05's srun no longer takes --cpus-per-task from sbatch: it is
# passed on. loadgen stays a process of the batch script: srun turns a
# TERM it gets into a SIGKILL of its task, and Slurm TERMs the batch
# script's processes on every cancel and time limit, which would lose the
# level loadgen was measuring.
step=(srun --overlap --ntasks=1 --nodes=1 --job-name=sweep-server ${SLURM_CPUS_PER_TASK:+"--cpus-per-task=$SLURM_CPUS_PER_TASK"})
spec=$jd/server.spec
{ printf 'WorkingDirectory=%s\n' "$spec_dir"
  sed "s/^\([[:space:]]*ExecStart[[:space:]]*=[[:space:]]*\)/\1${step[*]} /" "$spec_src"
  printf '\nPort=%s\n' "$port"; } >"$spec" || exit 1
printf '%s\n' "node=${SLURMD_NODENAME:-}" "gpus=${CUDA_VISIBLE_DEVICES:-}" "port=$port" \
  "port_from=$port_from" "restart_count=$restarts" "array=${SLURM_ARRAY_JOB_ID:-}" \
  "task=${SLURM_ARRAY_TASK_ID:-}" >"$jd/env"
# The server runs in a session of its own (svc-swap's process manager),
# which Slurm's process tracking may not follow: stop it here. The TERM
# goes to its step (scancel --signal), not to srun, which would SIGKILL it.
# A process that ended but is not yet reaped (a zombie) is gone: svc-swap's
# setsid leaves srun to PID 1, which some machines' init reaps only every
# second or so (a container's may never), and kill -0 counts a zombie as
# alive: each config's job then ended a second or more after its server.
alive() {
  local s
  { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }
  [[ -n $s && $s != [ZX]* ]]
}
stop_server() {
  local pid i id name
  pid=$(cat "$spec.pid" 2>/dev/null) || return 0
  alive "$pid" || return 0
  # squeue -j names the array's every task when this is its first one
  # (their ids agree), each step as TASK.STEP: only this task's steps.
  while read -r id name; do
    [[ $name == sweep-server ]] || continue
    [[ $id == "$SLURM_JOB_ID".* || $id == "${SLURM_ARRAY_JOB_ID:-}_${SLURM_ARRAY_TASK_ID:-}".* ]] || continue
    scancel --quiet --signal=TERM "$SLURM_JOB_ID.${id##*.}"
  done < <(squeue -h -s -j "$SLURM_JOB_ID" -o '%i %j' 2>/dev/null)
  for ((i = 0; i < 50; i++)); do alive "$pid" || return 0; sleep 0.1; done
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do alive "$pid" || return 0; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null
}
# USR1 (sbatch --signal, ahead of the time limit): loadgen ends its level
# and writes what it measured. TERM (scancel, the limit): Slurm signals
# every process of the job itself; a second TERM would make loadgen quit
# without its record, so the script only waits for the pipe.
flushed=0 pipe=""
# shellcheck disable=SC2317 # the traps call them
on_usr1() { flushed=1; echo "flushed=1" >>"$jd/env"; [[ -z $pipe ]] || kill -TERM -- "-$pipe" 2>/dev/null; }
# shellcheck disable=SC2317
on_term() { [[ -z $pipe ]] || wait "$pipe"; stop_server; exit 143; }
trap on_usr1 USR1
trap on_term TERM INT
set -m # the pipe runs in a process group of its own
"#;

const TAIL: &str = r#"pipe=$!
while kill -0 "$pipe" 2>/dev/null; do wait "$pipe"; done
stop_server
# Flushed ahead of the limit: let the limit end the job, so Slurm says
# TIMEOUT, not COMPLETED.
if ((flushed)); then sleep 100000 & wait $!; fi
rc=()
while IFS='=' read -r k v; do [[ $k != exits ]] || read -r -a rc <<<"$v"; done <"$jd/env"
((${#rc[@]})) || exit 1 # the pipe recorded no statuses
for r in "${rc[@]}"; do ((r == 0)) || exit "$r"; done
exit 0
"#;

/// sbatch's words for the tasks `indices` of plan `p`, the script at
/// `script`, avoiding the nodes `exclude`.
pub fn sbatch_args(p: &Plan, indices: &[usize], exclude: &[String], script: &str) -> Vec<String> {
    let list: Vec<String> = indices.iter().map(usize::to_string).collect();
    let mut array = format!("--array={}", list.join(","));
    if let Some(n) = p.slurm.max_jobs {
        let _ = write!(array, "%{n}");
    }
    let mut a = vec![
        "--parsable".to_string(),
        "--job-name=sweep".into(),
        array,
        format!("--output={}/job-%j.out", p.dir),
        // A requeue would run the config again unseen; sweep resubmits
        // itself, on another node.
        "--no-requeue".into(),
    ];
    let time = p.slurm.time.as_ref().map(|t| t.text.clone());
    for (flag, v) in [
        ("--partition", &p.slurm.partition),
        ("--account", &p.slurm.account),
        ("--gres", &p.slurm.gres),
        ("--gpus-per-node", &p.slurm.gpus_per_node),
        ("--time", &time),
    ] {
        if let Some(v) = v {
            a.push(format!("{flag}={v}"));
        }
    }
    if p.slurm.exclusive {
        a.push("--exclusive".into());
    }
    if p.slurm.time.is_some() {
        a.push(format!(
            "--signal=B:USR1@{}",
            p.slurm.flush_before.as_secs().max(1)
        ));
    }
    if !exclude.is_empty() {
        a.push(format!("--exclude={}", exclude.join(",")));
    }
    a.extend(p.slurm.sbatch_arg.iter().cloned());
    a.push(script.to_string());
    a
}

/// `--dry-run`: the batch script, then the sbatch line for every
/// config, as commands to copy.
pub fn dry_run(p: &Plan) -> String {
    let all: Vec<usize> = p.grid.points.iter().map(|p| p.index).collect();
    let script = format!("{}/sweep.sbatch", p.dir);
    let words: Vec<String> = std::iter::once("sbatch".to_string())
        .chain(sbatch_args(p, &all, &[], &script))
        .map(|w| printf_q(&w))
        .collect();
    let mut notes = String::new();
    if p.search.is_some() {
        notes.push_str("# --adaptive: the search submits only the configs it decides on, one array each time (--array=N,...)\n");
    }
    if let Some(server) = &p.schedule {
        let _ = writeln!(
            notes,
            "# --schedule {server}: after the configs, array task {SCHEDULE_TASK} runs the derived schedule (svc-swap --apply-from {}/schedule.json)",
            p.dir
        );
    }
    format!(
        "{}# the script above, written to {script}, submitted as:\n{}\n{notes}",
        batch(p, None),
        words.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::BODY;

    /// Regression: stop_server waited on `kill -0`, which counts a zombie
    /// as alive, so each job ended a second or more after its server (as
    /// long as PID 1 took to reap srun). The script's `alive` says a
    /// zombie is gone and a running process is not.
    #[test]
    fn a_zombie_server_is_stopped_for_stop_server() {
        let at = BODY.find("alive() {").expect("the script's alive()");
        let end = BODY[at..].find("\n}\n").expect("its end") + at + 3;
        let dir = std::env::temp_dir().join(format!("sweep-plan-alive-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("zombie");
        // The child ends at once; its parent execs into a sleep that never
        // reaps it, so it stays a zombie while the sleep lasts.
        let script = format!(
            "{}sh -c 'sleep 0.01 & echo $! >\"$0\"; exec sleep 3' {f} & parent=$!\n\
             sleep 0.5\nz=$(<{f})\n\
             kill -0 \"$z\" && echo kill-0-alive\n\
             alive \"$z\" && echo zombie-alive\n\
             alive \"$parent\" && echo parent-alive\n\
             kill \"$parent\"\n",
            &BODY[at..end],
            f = f.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &script])
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(text, "kill-0-alive\nparent-alive\n", "{out:?}");
    }
}
