# compose (Docker Compose or podman-compose): the engine CLI, the compose
# tool's words (shell-quoted by svc-swap), the file, the project's working
# directory and name, the service, its container's name and ID, the stop
# timeout (s), the settle knobs (common.sh), the argv the old config runs
# (hex, as /proc/PID/cmdline holds it), then the old container's host PIDs.
# The job's file step (common.sh) installs the edited Compose file and puts
# it back on failure; recreating the service from the file in force is the
# compose tool's `up -d --no-deps --force-recreate SERVICE`.
eng=$1 toolq=$2 cfile=$3 workdir=$4 project=$5 service=$6 name=$7 oldid=$8
stop_s=$9 wait=${10} port=${11} gpu=${12} force=${13} resendms=${14}
oldhex=${15}
shift 15
pids=$*
m_reload() { :; }
argv_hex() {
  h=$("$eng" container inspect --format '{{.Path}}{{range .Args}}{{printf "\x00%s" .}}{{end}}' -- "$1" 2>/dev/null |
    od -An -v -tx1 | tr -d ' \n')
  [ -n "$h" ] && printf '%s00' "${h%0a}"
}
# The engine's stop (engine.sh).
m_stop() { engine_stop; }
# Re-create the service from the file in force (the new one, or the old one
# put back), then check it stays up for a second.
m_start() {
  (
    cd -- "$workdir" || exit 1
    eval "set -- $toolq"
    "$@" -f "$cfile" -p "$project" up -d --no-deps --force-recreate "$service" >"$dir/$id.up" 2>&1 </dev/null
  )
  rc=$?
  if [ $rc != 0 ]; then
    say "error=compose up $service failed (exit $rc): $(grep . "$dir/$id.up" | tail -n 1)"
    rm -f -- "$dir/$id.up"
    engine_up
    return 1
  fi
  rm -f -- "$dir/$id.up"
  if [ -z "$(ins '{{.Id}}' "$name")" ]; then
    say "error=compose up made no container $name"
    engine_up
    return 1
  fi
  newid=$(ins '{{.Id}}' "$name")
  say "new_id=$newid"
  # Made by svc-swap: a later swap may take it over once it stopped (a
  # config that crashed at load), unlike a service its user stopped.
  printf '%s\n' "$newid" >>"$dir/made"
  pid=$(ins '{{.State.Pid}}' "$name")
  say "main_pid=$pid"
  t_end=$(($(date +%s%N) + 1000000000))
  while :; do
    if [ "$(ins '{{.State.Running}}' "$name")" != true ]; then
      say "error=$name exited at once (exit $(ins '{{.State.ExitCode}}' "$name"); its last log lines are in the record's log_tail)"
      "$eng" logs --tail 20 -- "$name" 2>&1 | while IFS= read -r l; do say "log=$l"; done
      return 1
    fi
    [ "$(date +%s%N)" -ge "$t_end" ] && break
    sleep 0.05
  done
  return 0
}
# The old file's service back, through an engine outage (engine.sh's
# until_engine, up to $wait s), as the container job's rollback: one that
# gave up at once left the service with no container at all.
m_restart_old() { until_engine restart_old; }
restart_old() {
  if [ "$(ins '{{.State.Running}}' "$name")" = true ] && [ "$(argv_hex "$name")" = "$oldhex" ]; then
    return 0
  fi
  m_start old
}
