# container (docker or podman): the engine CLI, the container's name and the
# old container's ID, the stop timeout (s), the settle knobs (common.sh), the
# name the old container is kept under, then the engine argv that creates the
# new one and the one that re-creates the old (each shell-quoted by svc-swap,
# every word single-quoted), whether each starts the container itself, the
# argv each should run (hex, as /proc/PID/cmdline holds it), and the old
# container's host PIDs.
eng=$1 name=$2 oldid=$3 stop_s=$4 wait=$5 port=$6 gpu=$7 force=$8 resendms=$9
prev=${10} newq=${11} oldq=${12} newstarts=${13} oldstarts=${14}
newhex=${15} oldhex=${16}
shift 16
pids=$*
kept="$name.sweepkit-old-$id"
m_reload() { :; }
# The engine's stop (engine.sh), then the old container renamed.
m_stop() {
  engine_stop || return 1
  # Kept for a rollback under another name; one made with --rm is gone.
  if [ -n "$(ins '{{.Id}}' "$oldid")" ]; then
    "$eng" rename "$oldid" "$kept" || { say "error=cannot rename $name to $kept"; engine_up; return 1; }
    say kept=1
  elif ! engine_up; then
    say "error=$eng does not answer; $name was stopped but not renamed"
    return 1
  fi
}
# Bring up the new (or the re-created old) container; a container kept from
# an earlier swap that runs the wanted argv is renamed back instead.
m_start() {
  which=$1
  if [ "$which" = new ]; then
    want=$newhex starts=$newstarts
    eval "set -- $newq"
  else
    want=$oldhex starts=$oldstarts
    eval "set -- $oldq"
  fi
  reused=
  if [ "$(ins '{{.Id}}' "$prev")" != "" ] && [ "$(argv_hex "$prev")" = "$want" ]; then
    "$eng" rename "$prev" "$name" && reused=1
  fi
  if [ -z "$reused" ]; then
    if ! out=$("$@" 2>&1 </dev/null); then
      say "error=$eng could not create $name: $(printf '%s' "$out" | tail -n 1)"
      # What a failed create left, never the old container itself (still
      # NAME when the engine did not answer its rename).
      [ "$(ins '{{.Id}}' "$name")" = "$oldid" ] || "$eng" rm -f -- "$name" >/dev/null 2>&1
      engine_up
      return 1
    fi
  fi
  if [ -n "$reused" ] || [ "$starts" != 1 ]; then
    if ! out=$("$eng" start -- "$name" 2>&1 </dev/null); then
      say "error=$eng start $name failed: $(printf '%s' "$out" | tail -n 1)"
      engine_up
      drop_new
      return 1
    fi
  fi
  newid=$(ins '{{.Id}}' "$name")
  pid=$(ins '{{.State.Pid}}' "$name")
  say "new_id=$newid"
  say "main_pid=$pid"
  # Made by svc-swap: a later swap may take it over even once it stopped
  # (a config that crashed at load), unlike a container its user stopped;
  # and it is not kept once replaced (keep_prev). The user's own container
  # renamed back is not made here.
  [ -n "$reused" ] || printf '%s\n' "$newid" >>"$dir/made"
  # A server that rejects its flags is gone by now; a crash at load is
  # wait-ready's to classify.
  # (One second by the clock: each inspect takes a good part of one.)
  t_end=$(($(date +%s%N) + 1000000000))
  while :; do
    if [ "$(ins '{{.State.Running}}' "$name")" != true ]; then
      say "error=$name exited at once (exit $(ins '{{.State.ExitCode}}' "$name"); its last log lines are in the record's log_tail)"
      "$eng" logs --tail 20 -- "$name" 2>&1 | while IFS= read -r l; do say "log=$l"; done
      drop_new
      return 1
    fi
    [ "$(date +%s%N)" -ge "$t_end" ] && break
    sleep 0.05
  done
  [ "$which" = new ] || return 0
  keep_prev
  return 0
}
# The swap took. One container is kept, and only its user's own (the one
# the swaps started from): a swap back to its command renames it back
# (above), so a sweep that ends on the original config leaves nothing
# behind. One a swap made is removed once replaced (the next swap to its
# config re-creates it): a stopped copy of a swept config, its key in its
# command, never lingers.
keep_prev() {
  kid=$(ins '{{.Id}}' "$kept")
  if [ -n "$kid" ] && grep -qx -- "$kid" "$dir/made" 2>/dev/null; then
    "$eng" rm -f -- "$kept" >/dev/null 2>&1
  elif [ -n "$kid" ]; then
    [ -n "$reused" ] || "$eng" rm -f -- "$prev" >/dev/null 2>&1
    "$eng" rename "$kept" "$prev"
  fi
  [ -z "$(ins '{{.Id}}' "$prev")" ] || say "previous=$prev"
}
# The argv a container's process runs, in /proc/PID/cmdline's hex.
argv_hex() {
  # The engine ends its output with a newline (0a), not a NUL.
  h=$("$eng" container inspect --format '{{.Path}}{{range .Args}}{{printf "\x00%s" .}}{{end}}' -- "$1" 2>/dev/null |
    od -An -v -tx1 | tr -d ' \n')
  [ -n "$h" ] && printf '%s00' "${h%0a}"
}
# A new container that failed: removed, or put back under $prev if it was
# the kept one renamed.
drop_new() {
  if [ -n "$reused" ]; then
    "$eng" stop -t 1 -- "$name" >/dev/null 2>&1
    "$eng" rename "$name" "$prev" >/dev/null 2>&1
  else
    "$eng" rm -f -- "$name" >/dev/null 2>&1
  fi
}
# The old container back as NAME, through an engine outage; failing that,
# the failure record says which container is kept and how to put it back.
m_restart_old() {
  until_engine restart_old && return 0
  if grep -qx kept=1 "$st"; then
    say "error=no container is named $name; $kept is the one that ran before this swap: '$eng rename $kept $name && $eng start $name' puts it back (the next svc-swap does it itself)"
  fi
  return 1
}
restart_old() {
  engine_up || return 1
  cur=$(ins '{{.Id}}' "$name")
  [ -n "$cur" ] && [ "$cur" != "$oldid" ] && "$eng" rm -f -- "$cur" >/dev/null 2>&1
  if [ -n "$(ins '{{.Id}}' "$kept")" ]; then
    "$eng" rename "$kept" "$name" || return 1
  fi
  if [ -n "$(ins '{{.Id}}' "$name")" ]; then
    [ "$(ins '{{.State.Running}}' "$name")" = true ] && return 0
    "$eng" start -- "$name" >/dev/null 2>&1 || return 1
    say "old_id=$(ins '{{.Id}}' "$name")"
    return 0
  fi
  # Gone (made with --rm): re-created from its definition.
  m_start old
}
