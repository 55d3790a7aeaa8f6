# shellcheck shell=bash
# fleet: `sweep --hosts`, one grid spread over a pool of hosts. Sourced by
# sweep.sh, whose globals and functions (configs, run_config, originals,
# restore, set_target, ...) it uses. See sweep(1), FLEET.
# shellcheck disable=SC2154 # sweep.sh's settings (sweep-plan options)
#
# Shape: GNU parallel is the job engine, with one job slot per live host.
# Each job is this script again (`--fleet-job SLOT:INDEX`) for ONE config:
# it takes a free host (its slot's host first), records that host's origin
# once, runs sweep's usual pipe there, and appends to the one results file
# (each record one line, written with O_APPEND). A host is held with
# flock(1) on a lock file, so each config runs on one host and each host
# runs one config at a time. The driver restores every host at the end.
#
# parallel's own machinery: its joblog is the record of what ran (a job's
# exit 2, a usage error, ends the pool), SIGINT to it stops the running
# jobs (Ctrl-C), SIGHUP starts no new one (a usage error), --jobs FILE
# shrinks the pool by a dropped host.
# State still kept beside the results (RESULTS.fleet/): each host's origin
# record (also in RESULTS), locks, failure counts, drop marks, the joblog.
# Only the origins matter across runs; the rest is reset when a sweep
# starts.

fleet_dir="$results.fleet"
h_dest=() h_exec=() h_url=() h_id=() h_name=()

# Parse --hosts (a file, or a comma list) into h_*; usage errors name the line.
fleet_hosts() {
  local -a lines=() known=()
  local line n=0 where
  # A job takes the ids the driver worked out from its environment (a
  # cksum per host per job is three processes each, on a machine the
  # servers keep busy); parallel passes the driver's environment on.
  [[ -z $fleet_job ]] || read -r -a known <<<"${SWEEP_FLEET_IDS:-}"
  if [[ -f $hosts ]]; then
    mapfile -t lines <"$hosts"
  elif [[ $hosts == */* ]]; then
    die "$EXIT_USAGE" "--hosts $hosts: no such file"
  else
    IFS=, read -r -a lines <<<"$hosts"
  fi
  for line in "${lines[@]}"; do
    n=$((n + 1))
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    where="--hosts $([[ -f $hosts ]] && printf '%s line %d' "$hosts" "$n" || printf "'%s'" "$line")"
    fleet_host_line "$line" "$where"
  done
  ((${#h_dest[@]})) || die "$EXIT_USAGE" "--hosts $hosts: no hosts in it"
}

# One host line: DEST [NAME=VALUE]... [exec=PREFIX WORDS...]
fleet_host_line() { # LINE WHERE
  local dest rest word u id h
  local -A var=()
  read -r dest rest <<<"$1"
  [[ $dest == - || $dest =~ ^([^@[:space:]]+@)?(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9._-]+)(:[0-9]+)?$ ]] ||
    die "$EXIT_USAGE" "$2: '$dest' is not [USER@]HOST[:PORT] or -"
  while [[ -n $rest ]]; do
    word=${rest%%[[:space:]]*}
    if [[ $word == exec=* ]]; then
      var[exec]=${rest#exec=}
      break
    fi
    [[ $word =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || die "$EXIT_USAGE" "$2: '$word': expected NAME=VALUE"
    var[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
    rest=${rest#"$word"}
    rest=${rest#"${rest%%[![:space:]]*}"}
  done
  h=${dest#*@} h=${h%:[0-9]*} h=${h#[} h=${h%]}
  [[ $dest == - ]] && h=localhost
  u=${var[url]:-$url}
  u=${u//\{host\}/$h} u=${u//\{n\}/$((${#h_dest[@]} + 1))}
  for word in "${!var[@]}"; do u=${u//\{$word\}/${var[$word]}}; done
  [[ ! $u =~ \{[A-Za-z_][A-Za-z0-9_]*\} ]] ||
    die "$EXIT_USAGE" "$2: --url $url: no value for ${BASH_REMATCH[0]} on this host (add ${BASH_REMATCH[0]//[\{\}]/}=VALUE to its line)"
  id=${known[${#h_dest[@]}]:-} # fleet_hosts' local
  [[ -n $id ]] || id=$(printf '%s\n%s\n' "$dest" "${var[exec]:-}" | cksum | cut -d' ' -f1)
  for h in "${h_id[@]}"; do
    [[ $h != "$id" ]] || die "$EXIT_USAGE" "$2: the same host twice"
  done
  h_dest+=("$dest") h_exec+=("${var[exec]:-}") h_url+=("$u") h_id+=("$id")
  if [[ $dest == - ]]; then h_name+=("${var[exec]:-local}"); else h_name+=("$dest"); fi
}

# Point sweep's target, origin file and messages at host I.
fleet_use_host() { # I
  local d=${h_dest[$1]}
  [[ $d == - ]] && d=""
  set_target "$d" "${h_exec[$1]}" "${h_url[$1]}"
  origin_file="$fleet_dir/origin-${h_id[$1]}.jsonl"
  say_prefix="[${h_name[$1]}] "
}

fleet_dropped() { [[ -e $fleet_dir/dropped-${h_id[$1]} ]]; }

# Take a free live host not in EXCLUDED, trying SLOT's host first; sets
# fleet_i and holds its lock on fd fleet_fd. 1: no host could take it.
fleet_acquire() { # SLOT EXCLUDED...
  local slot=$1 n=${#h_id[@]} k i turn=0
  local -a live
  shift
  while :; do
    live=()
    for ((k = 0; k < n; k++)); do
      i=$(((slot - 1 + k) % n))
      fleet_dropped "$i" && continue
      [[ " $* " == *" $i "* ]] && continue
      live+=("$i")
      fleet_try_lock "$i" -n && return 0
    done
    ((${#live[@]})) || return 1
    # Every host busy (a config moving on after a failure): wait in the
    # kernel on one of them, in turn, rather than sleep and poll. A lock
    # released goes to its waiter at once, before the next job GNU
    # parallel starts can take it; polling lost that race every time, so
    # the moving config waited for the grid's end while its slot's host
    # idled. -w 0.5: dropped hosts and the driver's TERM are seen soon.
    i=${live[$((turn++ % ${#live[@]}))]}
    fleet_try_lock "$i" -w 0.5 && ! fleet_dropped "$i" && return 0
    fleet_release
  done
}

# Lock host I with flock(1) OPTS on fd fleet_fd; sets fleet_i. 1: not got.
fleet_try_lock() { # I FLOCK_OPTS...
  exec {fleet_fd}>>"$fleet_dir/lock-${h_id[$1]}"
  if flock "${@:2}" "$fleet_fd"; then
    fleet_i=$1
    return 0
  fi
  exec {fleet_fd}>&-
  return 1
}

fleet_release() { exec {fleet_fd}>&-; }

# Blame host I for a failure; at --drop-after failures, drop it: a record
# says so (a failure record with no config, class transport, so summarize
# never takes it for a result) and parallel runs one job fewer.
fleet_charge() { # I WHY
  local i=$1 why=$2 c n k live=0 of
  exec {c}>>"$fleet_dir/count.lock"
  flock "$c"
  n=$(($(cat "$fleet_dir/fail-${h_id[$i]}" 2>/dev/null || echo 0) + 1))
  echo "$n" >"$fleet_dir/fail-${h_id[$i]}"
  if ((n >= drop_after)) && ! fleet_dropped "$i"; then
    touch "$fleet_dir/dropped-${h_id[$i]}"
    for k in "${!h_id[@]}"; do fleet_dropped "$k" || live=$((live + 1)); done
    echo $((live > 0 ? live : 1)) >"$fleet_dir/jobs"
    warn "host ${h_name[$i]}: dropped after $n failures ($why); its configs go to the other hosts"
    of="$fleet_dir/origin-${h_id[$i]}.jsonl"
    [[ -e $of ]] || of=/dev/null
    "$SWEEP_PLAN" host-dropped --reason "host ${h_name[$i]} dropped after $n failures; last: $why" "$of" \
      >>"$results" || warn "sweep-plan host-dropped failed"
  fi
  exec {c}>&-
}

# ---- one job: one config, on whichever host is free ---------------------
# A config that fails on one host is run once more on another before it
# counts as the config's own failure: a GPU fault or a leftover process on
# one host looks exactly like an OOM at load. When it then succeeds, the
# first host is blamed; a transport failure (after --retries) blames its
# host at once. Exit: 0 measured, 40 failed (its own), 43 no host left,
# 130 interrupted.
fleet_job_main() {
  local slot=${fleet_job%%:*} idx=${fleet_job#*:} label i suspect=""
  local -a tried=() step=()
  [[ $slot =~ ^[0-9]+$ && $idx =~ ^[0-9]+$ ]] && ((idx >= 1 && idx <= n_configs)) ||
    die "$EXIT_USAGE" "--fleet-job '$fleet_job': internal SLOT:INDEX"
  fleet_hosts
  label=${labels[idx - 1]}
  trap 'fleet_job_exit $?' EXIT
  print_table=0 # the driver prints the table once, at the end
  no_restore=1
  trap on_signal INT TERM
  while fleet_acquire "$slot" "${tried[@]}"; do
    i=$fleet_i
    fleet_use_host "$i"
    tried+=("$i")
    # The origin is read once per host (a dry-run swap); later jobs there
    # need not ask again, since a job never restores.
    if [[ ! -s $origin_file ]] && ! (originals); then
      fleet_release
      fleet_charge "$i" "svc-swap --dry-run could not read its config"
      continue
    fi
    run_config "$idx"
    fleet_release
    ((interrupted)) && exit "$EXIT_INTERRUPTED"
    # run_config's verdict from the records this try appended (while a job
    # holds a config no other host runs it, so it is the file's too);
    # sweep-plan fleet-step says what follows from it.
    mapfile -t step < <("$SWEEP_PLAN" fleet-step --state "$last_state" ${suspect:+--suspect} \
      --swap-exit "$last_rc_swap" --field step --field exit)
    case ${step[0]} in
      measured)
        [[ -z $suspect ]] || fleet_charge "$suspect" "$label failed there, not on ${h_name[$i]}"
        exit "${step[1]}" ;;
      blame-host) fleet_charge "$i" "transport failure on $label" ;;
      try-elsewhere)
        suspect=$i
        say "$label: trying another host before it counts as the config's own failure" ;;
      *) exit "${step[1]:-$EXIT_FAILURE}" ;;
    esac
  done
  ((interrupted)) && exit "$EXIT_INTERRUPTED"
  [[ -z $suspect ]] || exit "$EXIT_SOME_CONFIGS_FAILED" # no other host: its failure stands
  warn "$label: no host left to run it"
  exit "$EXIT_NO_HOST_LEFT"
}

# A usage error (a tool rejected a pass-through argument) fails every
# config alike: SIGHUP tells parallel to start no further job (man
# parallel, COMPLETE RUNNING JOBS BUT DO NOT START NEW JOBS; $PARALLEL_PID
# is parallel's), and the driver finds this job's exit 2 in the joblog.
fleet_job_exit() { # RC
  (($1 != EXIT_USAGE)) || kill -HUP "${PARALLEL_PID:-}" 2>/dev/null || true
}

# ---- the driver ----------------------------------------------------------
fleet_pid=""

fleet_main() {
  local i pending=() code
  command -v parallel >/dev/null ||
    die "$EXIT_NO_PARALLEL" "GNU parallel not found; --hosts needs it (apt-get install parallel)"
  # One summary per host would give each host the best of the few configs
  # it happened to run (and svc-swap reads only one record).
  [[ $keep_winner == 0 || " ${sum_args[*]} " != *" --per-host "* ]] ||
    die "$EXIT_USAGE" "--keep-winner with --summarize-arg --per-host: each host ran only some configs, so its own best is no winner; drop one of them (--pool-hosts applies one pick to every host)"
  fleet_hosts
  ((dry_run)) && fleet_dry_run
  mkdir -p "$fleet_dir"
  touch "$results"
  rm -f "$fleet_dir"/dropped-* "$fleet_dir"/fail-* "$fleet_dir/joblog"
  echo "${#h_id[@]}" >"$fleet_dir/jobs"
  export SWEEP_FLEET_IDS="${h_id[*]}"
  for ((i = 1; i <= n_configs; i++)); do
    if [[ ${actions[i - 1]:-run} == skip ]]; then
      say "[$i/$n_configs] ${labels[i - 1]}: already in $results, skipped"
    else
      pending+=("$i")
    fi
  done
  say "$n_configs config(s) on ${#h_id[@]} host(s); results: $results"
  trap fleet_on_signal INT TERM
  # -u: jobs' progress lines pass straight through (each one write);
  # --jobs FILE is read again after each job, so a dropped host's slot
  # goes; --termseq: a job stops its tools and writes its records first;
  # --joblog: the record of what ran, each job's exit status in column 7.
  # fleet_pid is parallel's own pid (fleet_on_signal signals it).
  if ((${#pending[@]})); then
    parallel -u --jobs "$fleet_dir/jobs" --termseq TERM,20000,KILL,25 \
      --joblog "$fleet_dir/joblog" -q bash "$self" "${argv[@]}" --fleet-job '{%}:{}' \
      ::: "${pending[@]}" </dev/null &
    fleet_pid=$!
    while kill -0 "$fleet_pid" 2>/dev/null; do wait "$fleet_pid" || true; done
    fleet_pid=""
  fi
  if [[ -s $fleet_dir/joblog ]] && cut -f7 "$fleet_dir/joblog" | grep -qx "$EXIT_USAGE"; then
    printf '%s: error: %s\n' "$PROG" "a tool rejected its arguments; fix the pass-through options" >&2
    fleet_finish "$EXIT_USAGE"
  fi
  ((interrupted)) && fleet_finish "$EXIT_INTERRUPTED"
  fleet_finish 0
}

# --dry-run: each host with its URL, then the plan (on the first host).
fleet_dry_run() {
  local i
  for i in "${!h_dest[@]}"; do
    printf '# host %d: %s -> %s\n' $((i + 1)) "${h_name[$i]}" "${h_url[$i]}"
  done
  fleet_use_host 0
  say_prefix=""
  for ((i = 1; i <= n_configs; i++)); do run_config "$i"; done
  exit 0
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
  interrupted=1
  [[ -z $fleet_pid ]] || kill -INT "$fleet_pid" 2>/dev/null || true
  say "interrupted; stopping every host's job"
}

# Restore every host that has an origin (in parallel: each waits for its
# server), print the table, exit with the pool's status.
fleet_finish() { # CODE
  local code=$1 i rc dropped=0 refused=0
  local -a pids=()
  trap '' INT TERM
  if ((keep_winner)) && fleet_mixed_hardware; then
    keep_winner=0 refused=1
  fi
  for i in "${!h_id[@]}"; do
    fleet_dropped "$i" && dropped=$((dropped + 1))
    [[ -e $fleet_dir/origin-${h_id[$i]}.jsonl ]] || continue
    (
      fleet_use_host "$i"
      mapfile -t orig_set < <(plan restore "$origin_file")
      swaps=1 final_rc=0
      restore
      exit "$final_rc"
    ) &
    pids+=($!)
  done
  for i in "${pids[@]}"; do
    rc=0
    wait "$i" || rc=$?
    ((rc == 0)) || final_rc="$EXIT_RESTORE_FAILED"
  done
  table
  # sweep-plan outcome counts the grid's states in the file and names the
  # pool's exit status (43, 41, 40, 45 or 0).
  local -a out=()
  mapfile -t out < <(plan outcome --dropped "$dropped" "$results" \
    --field measured --field failed --field missing --field exit)
  say_prefix=""
  say "done: ${out[0]} measured, ${out[1]} failed, ${out[2]} without a result, $dropped host(s) dropped"
  ((code != 0)) || code=${out[3]:-$EXIT_FAILURE}
  ((final_rc)) && code=$final_rc
  if ((refused)); then
    printf '%s: error: %s\n' "$PROG" "--keep-winner: the hosts differ in hardware or server version, so one pick would compare the hosts, not the configs; every host's original config is back (--summarize-arg --pool-hosts applies one pick to every host anyway; summarize --per-host $results shows each host's best)" >&2
    code="$EXIT_RESTORE_FAILED"
  fi
  exit "$code"
}

# --keep-winner on a pool: summarize refuses one pick over hosts of
# different hardware (exit 55, MIXED_HARDWARE in exit.rs) unless the
# user's --summarize-arg says --pool-hosts. Each host's own best among the
# few configs it ran is no winner either, so the fleet refuses too, once,
# instead of one "applying the winner failed" per host.
fleet_mixed_hardware() {
  local rc=0
  "$SUMMARIZE" --format json "${sum_args[@]}" "$results" >/dev/null 2>&1 || rc=$?
  ((rc == EXIT_MIXED_HARDWARE))
}
