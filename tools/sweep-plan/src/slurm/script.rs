//! `sweep --slurm`'s batch script and sbatch command line. One script
//! serves the whole grid as an array: task N runs config N. Inside the
//! allocation it copies the process spec (the copy is the job's own, so
//! two jobs on one node never edit one file), picks a port from
//! SLURM_JOB_ID, runs `svc-swap | wait-ready | loadgen` into the job's
//! records file and stops the server it started. Every value is quoted as
//! bash's `printf %q` quotes ([`bash_q`]); the options go on sbatch's
//! command line, never into `#SBATCH` lines, so no user text is parsed
//! twice.

use std::fmt::Write as _;

use crate::grid::Tool;
use crate::stage_words::bash_q;

use super::plan::{Plan, SPEC, URL};

/// Ports from SLURM_JOB_ID land in [BASE, BASE + SPAN): below Linux's
/// ephemeral range (32768 up), where any client's socket may sit.
const PORT_BASE: u32 = 20000;
const PORT_SPAN: u32 = 12000;

fn words(ws: &[String]) -> String {
    ws.iter()
        .map(|w| match w.as_str() {
            SPEC => " \"$spec\"".to_string(),
            URL => " \"$url\"".to_string(),
            _ => format!(" {}", bash_q(w)),
        })
        .collect()
}

/// The batch script for plan `p` (the tools at `tools`).
pub fn batch(p: &Plan) -> String {
    let mut s = String::from(HEAD);
    let q = |v: &str| bash_q(v);
    let _ = writeln!(s, "dir={}", q(&p.dir));
    let _ = writeln!(s, "spec_src={} spec_dir={}", q(&p.spec), q(&p.spec_dir));
    let _ = writeln!(s, "port_base={PORT_BASE} port_span={PORT_SPAN}");
    let _ = writeln!(s, "url_head={} url_tail={}", q(&p.url_head), q(&p.url_tail));
    s.push_str("case ${SLURM_ARRAY_TASK_ID:-} in\n");
    for pt in &p.grid.points {
        let mut ready = Vec::new();
        if p.expect_config {
            ready.extend(pt.args(Tool::Expect));
        }
        ready.extend(pt.args(Tool::Stage));
        let _ = writeln!(
            s,
            "{}) set_=({} ) ready_=({} ) load_=({} ) ;;",
            pt.index,
            words(&pt.args(Tool::Swap)),
            words(&ready),
            words(&pt.args(Tool::Stage)),
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
# The port: from the job id, so two jobs on one node differ; the next
# free one up when something else holds it.
port=$((port_base + SLURM_JOB_ID % port_span)) port_from=job_id
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
  port=$((port + 1)) port_from=probed
done
url=$url_head:$port$url_tail
spec=$jd/server.spec
{ printf 'WorkingDirectory=%s\n' "$spec_dir"; cat "$spec_src"; printf '\nPort=%s\n' "$port"; } >"$spec" || exit 1
printf '%s\n' "node=${SLURMD_NODENAME:-}" "gpus=${CUDA_VISIBLE_DEVICES:-}" "port=$port" \
  "port_from=$port_from" "restart_count=$restarts" >"$jd/env"
# The server runs in a session of its own (svc-swap's process manager),
# which Slurm's process tracking may not follow: stop it here.
stop_server() {
  local pid i
  pid=$(cat "$spec.pid" 2>/dev/null) || return 0
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
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
    if let Some(n) = p.max_jobs {
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
    for (flag, v) in [
        ("--partition", &p.partition),
        ("--account", &p.account),
        ("--gres", &p.gres),
        ("--gpus-per-node", &p.gpus_per_node),
        ("--time", &p.time),
    ] {
        if let Some(v) = v {
            a.push(format!("{flag}={v}"));
        }
    }
    if p.exclusive {
        a.push("--exclusive".into());
    }
    if p.time.is_some() {
        a.push(format!("--signal=B:USR1@{}", p.flush_before_s));
    }
    if !exclude.is_empty() {
        a.push(format!("--exclude={}", exclude.join(",")));
    }
    a.extend(p.sbatch_args.iter().cloned());
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
        .map(|w| bash_q(&w))
        .collect();
    format!(
        "{}# the script above, written to {script}, submitted as:\n{}\n",
        batch(p),
        words.join(" ")
    )
}
