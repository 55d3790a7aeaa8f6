# systemd: unit, stop bound (s), start bound (s), then the old PIDs.
unit=$1 stoplim=$2 startlim=$3 wait=$4 port=$5 gpu=$6 force=$7 resendms=$8
shift 8
pids=$*
prop() { systemctl show -P "$1" -- "$unit"; }
m_reload() { systemctl daemon-reload; }
# `systemctl stop` in the background: while systemd waits in stop-sigterm,
# every $resendms ms the SIGTERM is sent again, to whom systemd sent it
# (KillMode=control-group: all; mixed, process: the main PID). systemd's
# own SIGKILL after TimeoutStopSec is untouched.
m_stop() {
  say "stop_was=$(prop ActiveState)"
  whom=all
  case $(prop KillMode) in mixed | process) whom=main ;; esac
  rc="$dir/$id.stoprc"
  rm -f -- "$rc"
  (timeout "$stoplim" systemctl stop -- "$unit"; echo $? >"$rc") &
  n=0 resent=0 next=$((resendms / 50))
  while [ ! -s "$rc" ]; do
    if [ "$resendms" -gt 0 ] && [ $n -ge "$next" ]; then
      next=$((next + resendms / 50))
      # --kill-who: systemd 252 renamed it --kill-whom and kept the old name.
      [ "$(prop SubState)" = stop-sigterm ] &&
        systemctl kill --signal=SIGTERM --kill-who="$whom" -- "$unit" &&
        resent=$((resent + 1)) && say "term_resent=$resent"
    fi
    sleep 0.05
    n=$((n + 1))
  done
  wait
  if [ "$(cat -- "$rc")" != 0 ]; then
    say "error=systemctl stop $unit failed"
    return 1
  fi
  say "stop_result=$(prop Result)"
}
m_start() {
  a=$(prop ActiveState) r=$(prop Result)
  if [ "$a" = failed ] || [ "$r" = start-limit-hit ]; then
    systemctl reset-failed -- "$unit" && say reset_failed=1
  fi
  if ! timeout "$startlim" systemctl start -- "$unit"; then
    [ "$(prop Result)" = start-limit-hit ] || return 1
    systemctl reset-failed -- "$unit" && say reset_failed=1
    timeout "$startlim" systemctl start -- "$unit" || return 1
  fi
  case $(prop ActiveState) in
    active | activating | reloading) ;;
    *) say "error=$unit is $(prop ActiveState) ($(prop Result)) right after start"; return 1 ;;
  esac
  pid=$(prop MainPID)
  say "main_pid=$pid"
  say "invocation_id=$(prop InvocationID)"
}
m_restart_old() { m_start old; }
