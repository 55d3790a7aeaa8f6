# systemd: unit, stop bound (s), start bound (s), then the old PIDs.
unit=$1 stoplim=$2 startlim=$3 wait=$4 port=$5 gpu=$6 force=$7
shift 7
pids=$*
prop() { systemctl show -P "$1" -- "$unit"; }
m_reload() { systemctl daemon-reload; }
m_stop() {
  say "stop_was=$(prop ActiveState)"
  if ! timeout "$stoplim" systemctl stop -- "$unit"; then
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
