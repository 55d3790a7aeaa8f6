# process spec: work dir, log, pid file, stop grace (ms), the old PID and
# what to signal, the settle knobs (common.sh), then the env words, new and old argv (each shell-quoted
# by svc-swap, every word single-quoted). Signals go through `env kill`:
# dash's builtin takes neither `--` nor a -PGID.
wd=$1 log=$2 pidf=$3 stopms=$4 oldpid=$5 sig=$6 wait=$7 port=$8 gpu=$9
force=${10} resendms=${11} envq=${12} newq=${13} oldq=${14} newhex=${15}
oldhex=${16}
shift 16
pids=
[ "$oldpid" -gt 0 ] && pids=$oldpid
m_reload() { :; }
# The members of process group $1. setsid made the server a group leader,
# and its workers (vLLM's EngineCore, SGLang's scheduler and detokenizer)
# can hold the port or GPU memory after the leader exits: settle (common.sh)
# waits for each of them, and --force-kill ends each of them.
group_pids() {
  for f in /proc/[0-9]*/stat; do
    { read -r s <"$f"; } 2>/dev/null || continue
    s=${s##*) }
    # shellcheck disable=SC2086 # state ppid pgrp ...: one word each
    set -- $s
    [ "$3" = "$grp" ] && { f=${f#/proc/}; printf ' %s' "${f%/stat}"; }
  done
}
m_stop() {
  if [ -z "$pids" ] || ! alive "$oldpid"; then
    say stop_result=already_stopped
    return 0
  fi
  case $sig in
    -*) grp=${sig#-}; pids=$(group_pids); pids=${pids# }; say "old_group=$pids" ;;
  esac
  env kill -s TERM -- "$sig"
  n=0 resent=0 next=$((resendms / 50))
  while alive "$oldpid"; do
    if [ $n -ge $((stopms / 50)) ]; then
      if [ "$force" != 1 ]; then
        say "error=PID $oldpid still running after SIGTERM (TimeoutStopSec); --force-kill sends SIGKILL"
        return 1
      fi
      env kill -s KILL -- "$sig"
      killed=1
      say stop_result=sigkill_after_timeout
      return 0
    fi
    # A server that lost the SIGTERM (vLLM while loading) gets another.
    if [ "$resendms" -gt 0 ] && [ $n -ge "$next" ]; then
      env kill -s TERM -- "$sig" && resent=$((resent + 1)) && say "term_resent=$resent"
      next=$((next + resendms / 50))
    fi
    sleep 0.05
    n=$((n + 1))
  done
  if [ "$resent" -gt 0 ]; then say stop_result=clean_after_resend; else say stop_result=clean; fi
}
m_start() {
  want=$oldhex
  [ "$1" = new ] && want=$newhex
  if [ "$1" = new ]; then eval "set -- $envq $newq"; else eval "set -- $envq $oldq"; fi
  rm -f -- "$pidf"
  off=0
  [ -f "$log" ] && off=$(wc -c <"$log")
  # shellcheck disable=SC2016 # the inner script expands its own $0, $@
  (cd "$wd" || exit 96
   exec setsid sh -c 'echo $$ > "$0.sweepkit-tmp" && mv -f -- "$0.sweepkit-tmp" "$0" && exec "$@"' \
     "$pidf" "$@" >>"$log" 2>&1 </dev/null) &
  i=0
  while [ ! -s "$pidf" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
  pid=$(cat -- "$pidf" 2>/dev/null)
  if [ -z "$pid" ]; then say "error=$pidf: no pid file after start (see $log)"; return 1; fi
  say "main_pid=$pid"
  say "log_offset=$off"
  # Until the exec chain (sh, env, server) reaches the server's argv
  # ($want, hex): a server that rejects its flags is gone by then. A crash
  # later (at load) is wait-ready's to classify.
  i=0
  while [ $i -lt 60 ]; do
    alive "$pid" || { say "error=PID $pid exited at once (see $log)"; return 1; }
    [ "$(od -An -v -tx1 <"/proc/$pid/cmdline" 2>/dev/null | tr -d ' \n')" = "$want" ] && return 0
    sleep 0.05
    i=$((i + 1))
  done
}
m_restart_old() {
  # Nothing ran before this swap (a server that was down, a Slurm job's
  # own copy of the spec): the old file is back, and nothing is started
  # that did not run (in a job it would bind the spec's own port).
  [ -n "$pids" ] || { say old_down=1; return 1; }
  alive "$oldpid" && return 0
  m_start old
}
