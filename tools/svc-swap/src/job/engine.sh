# The container engine's part shared by the container and compose jobs:
# reading a container's state, and its stop. Both read the job's globals:
# eng, name, oldid, stop_s, resendms (and dir, id from common.sh).
ins() { "$eng" container inspect --format "$1" -- "$2" 2>/dev/null; }
# After an engine command failed: does the engine answer at all? One that
# does not (docker's daemon down, podman's socket refusing) is said once as
# engine_down=1: svc-swap reports that as the engine's failure (exit 28,
# class transport), not the config's.
engine_up() {
  "$eng" version >/dev/null 2>&1 && return 0
  grep -qx engine_down=1 "$st" 2>/dev/null || say engine_down=1
  return 1
}
# Run "$@" (a restore step) until it works: while the engine does not
# answer, again every second for up to $wait s, and once more when it
# answers again. A rollback that gave up during an outage left NAME to no
# container at all.
until_engine() {
  t_lim=$(($(date +%s) + wait)) again=
  while ! "$@"; do
    if engine_up; then
      [ -z "$again" ] || return 1
      again=1
    else
      again=
      [ "$(date +%s)" -lt "$t_lim" ] || return 1
      sleep 1
    fi
  done
}
# The engine's stop: SIGTERM (or the image's StopSignal), SIGKILL after
# $stop_s; a killed container's exit code reads 137 (podman issue 11854).
# While it runs, SIGTERM is sent again every $resendms ms (vLLM loses one
# that arrives while it loads).
engine_stop() {
  if [ "$(ins '{{.State.Running}}' "$oldid")" != true ]; then
    # No answer is not "stopped": an engine that does not answer stops
    # nothing, and the old container must stay NAME.
    engine_up || { say "error=$eng does not answer; $name was not stopped"; return 1; }
    say stop_result=already_stopped
    return 0
  fi
  rc="$dir/$id.stoprc"
  rm -f -- "$rc"
  ("$eng" stop -t "$stop_s" -- "$oldid" >/dev/null; echo $? >"$rc") &
  n=0 resent=0 next=$((resendms / 50))
  while [ ! -s "$rc" ]; do
    if [ "$resendms" -gt 0 ] && [ $n -ge "$next" ]; then
      next=$((next + resendms / 50))
      [ "$(ins '{{.State.Running}}' "$oldid")" = true ] &&
        "$eng" kill --signal TERM -- "$oldid" >/dev/null 2>&1 &&
        resent=$((resent + 1)) && say "term_resent=$resent"
    fi
    sleep 0.05
    n=$((n + 1))
  done
  wait
  if [ "$(cat -- "$rc")" != 0 ]; then
    say "error=$eng stop $name failed"
    engine_up
    return 1
  fi
  code=$(ins '{{.State.ExitCode}}' "$oldid")
  say "stop_exit=$code"
  if [ "$code" = 137 ]; then
    say stop_result=sigkill_after_timeout
  elif [ "$resent" -gt 0 ]; then
    say stop_result=clean_after_resend
  else
    say stop_result=clean
  fi
}
