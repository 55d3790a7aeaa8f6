# shellcheck shell=bash
# fleet: `sweep --hosts` (or --gpus), one grid spread over a pool of hosts
# or a machine's GPU slots (each slot a host of its own). Sourced by
# sweep.sh, whose globals and functions (run_step, originals, restore,
# ...) it uses. See sweep(1), FLEET, and sweep-plan(1) for the decisions.
# shellcheck disable=SC2154 # sweep.sh's settings (sweep-plan options)
#
# GNU parallel is the job engine: the hosts are its sshlogins (--slf), one
# job slot each, so no host runs two configs at once. A job (fleet_job) is
# one try of one config on its slot's host ($PARALLEL_SSHHOST): sweep's
# usual pipe there, appending to the one results file. parallel's
# --retries moves a failed config to another host; sweep-plan decides what
# parallel cannot (fleet-step, fleet-watch dropping a host, outcome; see
# sweep-plan(1)). RESULTS.fleet/ keeps each host's origin record across
# runs, and this run's sshlogin file, --joblog and tries.jsonl; with slots
# each machine's activity log and bench lock (sweep-plan slot-bench).

fleet_dir="$results.fleet"
h_id=() h_name=()

# sweep-plan options: all of sweep's settings; --pool: the pool into h_id
# and h_name (in --hosts order; a bad line is sweep's usage error); --host
# ID: sweep's stages (target, ready, load), origin file and messages there.
pool_settings() { local s; s=$("$SWEEP_PLAN" options "$@" -- "${argv[@]}") || exit $?; eval "$s"; } # [--pool | --host ID]

# ---- one job: one try of one config, on its slot's host ----------------
# parallel runs it in a bash of its own, which has sweep's functions, its
# tools and its argv from the environment fleet_run exports (bash cannot
# export arrays: argv comes quoted), and parses the settings again.
# Exit, for parallel's --retries (sweep-plan fleet-step decides): 0 the
# result stands, 1 another host should try, 2 usage, 130 interrupted.
fleet_job() { # INDEX
  set -euo pipefail
  eval "argv=($SWEEP_ARGV)" && pool_settings
  # shellcheck disable=SC2046 # function names: one word each
  export -n SWEEP_ARGV && export -nf $(compgen -A function) # not the tools' business
  signalled=0 pipe_sub="" swaps=0 finished=0 final_rc=0
  fleet_dir=$results.fleet print_table=0 no_restore=1 plain_progress=1 # the driver restores, prints the table
  local idx=$1 id=${PARALLEL_SSHHOST:-}
  # Every host dropped: parallel, its sshlogin file empty, runs jobs here
  # (sshlogin ':'); the config stays without a result.
  [[ $id != : ]] || { warn "${labels[idx - 1]}: no host left to run it"; exit "$EXIT_NO_HOST_LEFT"; }
  pool_settings --host "$id"
  # Dropped, but parallel has not re-read its sshlogin file yet: hand on.
  ! grep -qx "# dropped $id" "$fleet_dir/sshlogins" || exit "$EXIT_FAILURE"
  work=$(mktemp -d "${TMPDIR:-/tmp}/sweep-job.XXXXXX")
  trap 'fleet_job_exit $?' EXIT
  trap on_signal INT TERM HUP
  local -a step=(--index "$idx" --host "$id")
  ask step --index "$idx" "${step_args[@]}" --work "$work" "$results"
  # The origin is read once per host (a dry-run swap); a job never restores.
  if [[ ! -s $origin_file ]] && ! (originals "$id"); then
    plan fleet-step "${step[@]}" --origin-failed
    exit "$EXIT_FAILURE"
  fi
  # This run's records already hold the config's failure (another host).
  [[ $(plan verdict --index "$idx" --since "$SWEEP_FLEET_SINCE" "$results" --field state) != failed ]] ||
    step+=(--suspect)
  run_step
  ((signalled)) && exit "$EXIT_INTERRUPTED"
  step+=(--state "$last_state" --swap-exit "$last_rc_swap")
  plan fleet-step "${step[@]}" # the try's record, for fleet-watch
  exit "$(plan fleet-step "${step[@]}" --field exit)"
}

# A usage error (a tool rejected a pass-through argument) fails every
# config alike: SIGHUP tells parallel to start no further job (man
# parallel, COMPLETE RUNNING JOBS BUT DO NOT START NEW JOBS; $PARALLEL_PID
# is parallel's), and the driver finds this job's exit 2 in the joblog.
fleet_job_exit() { # RC
  rm -rf "$work"
  (($1 != EXIT_USAGE)) || kill -HUP "${PARALLEL_PID:-}" 2>/dev/null || true
}

# ---- the driver ----------------------------------------------------------
fleet_pid=""

fleet_main() {
  local -a pending=()
  command -v parallel >/dev/null ||
    die "$EXIT_NO_PARALLEL" "GNU parallel not found; --hosts needs it (apt-get install parallel)"
  pool_settings --pool
  # The first host's look refuses what would fail every config, at once.
  originals "${h_id[0]}" --only-refusals || exit $?
  mkdir -p "$fleet_dir"
  touch "$results"
  rm -f "$fleet_dir"/{joblog,tries.jsonl,activity-*}
  # GPU slots: every slot's origin first (a dry run each), then the pool
  # again, so the ports read from their targets are checked apart before
  # anything runs.
  ((!h_slots)) || { for id in "${h_id[@]}"; do originals "$id" || exit $?; done && pool_settings --pool; }
  printf '1/%s\n' "${h_id[@]}" >"$fleet_dir/sshlogins"
  SWEEP_FLEET_SINCE=$(wc -l <"$results") # where this run's records start
  # Every config left (--resume skips those with a result, and says so).
  read -r -a pending < <(plan step --all "${step_args[@]}" "${say_to[@]}" "$results" --field pending)
  say "$n_configs config(s) on ${#h_id[@]} host(s); results: $results"
  trap fleet_on_signal INT TERM HUP
  ((${#pending[@]} == 0)) || fleet_run "${pending[@]}"
  fleet_finish
}

# parallel's "ssh" for a pool host: run the job here ($1 is the host,
# $2 --), as ssh would: parallel's worker in a session of its own, so the
# signals parallel and a terminal send this shell miss it. When parallel
# stops the pool it TERMs this shell; the worker sees its parent gone and
# stops the job with --termseq (TERM, so the job writes its records and
# stops its tools; KILL after 20 s, or for what outlives the job at once),
# as it does over real ssh.
readonly fleet_ssh="bash -c 'shift 2; setsid bash -c \"\$*\" & wait \$!' sweep-fleet-ssh"

# Run the configs INDEX... over the pool; every try's record goes to
# sweep-plan fleet-watch, which ends when the last job has (the jobs hold
# its pipe), so the restores never overlap a job. fleet_pid is
# parallel's own pid (fleet_on_signal signals it).
fleet_run() { # INDEX...
  local i w watch_pid
  local -a watch=(--drop-after "$drop_after" --slf "$fleet_dir/sshlogins" --origins "$fleet_dir"
    --tries "$fleet_dir/tries.jsonl")
  for i in "${!h_id[@]}"; do watch+=(--host "${h_id[$i]}=${h_name[$i]}"); done
  # It reads on through a Ctrl-C, till the stopped jobs' last records.
  exec {w}> >(trap '' INT TERM HUP && exec "$SWEEP_PLAN" fleet-watch "${watch[@]}" "$results")
  watch_pid=$!
  # -u: jobs' lines pass straight through (each one write); --retries: a
  # config may meet every host once; --joblog: each job's exit in column 7.
  # The job is the bash parallel's worker signals: its traps act on the
  # TERM (a shell around it that died at once would make the worker KILL it).
  # SHELL: parallel's worker runs each job with $SHELL, as a login over
  # ssh would set it; unset (env -i, some CI runners) it runs none and
  # says the job exited 0.
  # The jobs get sweep's functions, settings and tools (fleet_job).
  (
    # The environment, not the command line: a big grid's settings
    # would outgrow one variable (128 KiB); its argv does not.
    # shellcheck disable=SC2046 # function names: one word each
    export -f $(compgen -A function) && export SWEEP_ARGV="${argv[*]@Q}" SWEEP_FLEET_SINCE SWEEP_PLAN SVC_SWAP WAIT_READY LOADGEN SUMMARIZE
    SHELL=$BASH exec parallel -u --slf "$fleet_dir/sshlogins" --ssh "$fleet_ssh" --retries "${#h_id[@]}" \
      --termseq TERM,20000,KILL,25 --joblog "$fleet_dir/joblog" fleet_job ::: "$@"
  ) </dev/null >&"$w" {w}>&- &
  fleet_pid=$!
  exec {w}>&-
  while kill -0 "$fleet_pid" 2>/dev/null; do wait "$fleet_pid" || true; done
  fleet_pid=""
  wait "$watch_pid" || warn "sweep-plan fleet-watch failed; the drops may be incomplete"
}

# Ctrl-C, or a signal to this script alone: no new job starts, each running
# job is told to stop (it writes its records and leaves its host as
# sweep's single-host interrupt does), then every host is restored.
# SIGINT to parallel is its own way to stop a pool: it starts no new job
# and ends each running one with --termseq (TERM, so the job stops its
# tools and writes its records, KILL after 20 s), waiting for them (man
# parallel, --termseq: "abnormal termination of GNU parallel"; tried on
# 20221122: the jobs got TERM and parallel exited 255 after them).
fleet_on_signal() {
  signalled=1
  [[ -z $fleet_pid ]] || kill -INT "$fleet_pid" 2>/dev/null || true
  say "interrupted; stopping every host's job"
}

# Restore every host that has an origin, all at once (each waits for its
# server); any that fails: final_rc 42.
fleet_restore() {
  local i id
  local -a pids=()
  for id in "${h_id[@]}"; do
    [[ -e $fleet_dir/origin-$id.jsonl ]] || continue
    (pool_settings --host "$id" && swaps=1 final_rc=0 && restore && exit "$final_rc") &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || final_rc=$EXIT_RESTORE_FAILED; done
}

# The end of a pool: restore, print the table, exit with its status.
# sweep-plan outcome counts the grid's states in the file and this run's
# drops, finds a usage error in the joblog, says what to say, and names
# the pool's exit status (2, 43, 41, 40, 45 or 0; 130 interrupted, 42 a
# refused --keep-winner: hosts of different hardware, whose summarize
# refuses one pick, once for the pool, not once per host).
fleet_finish() {
  local -a out=() end=()
  trap '' INT TERM HUP
  ((signalled == 0)) || end=(--interrupted)
  ((!keep_winner)) || end+=(--keep-winner --summarize "$SUMMARIZE" "${sum_args[@]/#/--sum-arg=}")
  mapfile -t out < <(plan outcome --since "${SWEEP_FLEET_SINCE:-0}" --joblog "$fleet_dir/joblog" \
    --tries "$fleet_dir/tries.jsonl" "${end[@]}" "$results" --field error --field warning \
    --field done --field refusal --field exit --field keep_winner)
  [[ ${out[5]:-} == true ]] || keep_winner=0 # the restores apply no winner
  [[ -z ${out[0]:-} ]] || err "${out[0]}"
  [[ -z ${out[1]:-} ]] || warn "${out[1]}"
  fleet_restore
  table --compare
  say_prefix=""
  say "${out[2]:-done}"
  [[ -z ${out[3]:-} ]] || err "${out[3]}"
  ((final_rc == 0)) || exit "$final_rc"
  exit "${out[4]:-$EXIT_FAILURE}"
}
