# svc-swap's far-side job (see job.rs): the stop-edit-start of one swap as
# one unit of work that needs neither svc-swap nor its session. Every value
# arrives as a positional parameter (set from a 0600 file, never from argv:
# job.rs WORDS); progress is appended to $dir/$id.state
# as key=value lines, the last being result=new|old|none.
dir=$1 id=$2 path=$3 mode=$4 backup=$5 restores=$6 keep=$7 gowait=$8
shift 8
st="$dir/$id.state"
# Once only, though a launch whose reply was lost may be repeated.
mkdir -- "$dir/$id.lock" 2>/dev/null || exit 0
exec >>"$dir/$id.log" 2>&1 </dev/null
say() { printf '%s\n' "$*" >>"$st"; }
# Whose job this is: a later run waits for it only while it lives.
say "job_pid=$$"
alive() {
  s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  s=${s##*) }
  case $s in Z*|X*|"") return 1 ;; esac
}
port_busy() {
  [ -n "$port" ] || return 1
  h=$(printf ':%04X' "$port")
  awk -v h="$h" '$4 == "0A" && substr($2, length($2) - 4) == h { f = 1 }
    END { exit !f }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}
# Who holds the port (ss's users:(...) list: command, pid, fd), if ss can tell.
port_holder() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -ltnpH "sport = :$port" 2>/dev/null | sed -n 's/.*users:((\(.*\)))/\1/p' | head -n 1
}
gpu_busy() {
  [ "$gpu" = 1 ] || return 1
  if ! command -v nvidia-smi >/dev/null; then
    say "gpu=skipped: nvidia-smi not found"; gpu=0; return 1
  fi
  g=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader) || return 1
  for p in $pids; do for q in $g; do [ "$p" = "$q" ] && return 0; done; done
  return 1
}
# After the stop: old PIDs gone, the port and the GPU free, within $wait s.
settle() {
  n=0 lim=$((wait * 20))
  while :; do
    left=
    for p in $pids; do alive "$p" && left="$left $p"; done
    if [ -z "$left" ] && ! port_busy && ! gpu_busy; then
      [ "$gpu" = 1 ] && say gpu=freed
      return 0
    fi
    if [ $n -ge $lim ]; then
      if [ -n "$left" ] && [ "$force" = 1 ] && [ -z "$killed" ]; then
        killed=1 n=0
        say "force_killed=${left# }"
        # shellcheck disable=SC2086 # $left: numeric PIDs, one word each
        env kill -s KILL -- $left 2>/dev/null
        continue
      fi
      if [ -n "$left" ]; then
        hint="; --force-kill sends them SIGKILL"
        [ "$force" = 1 ] && hint=
        say "error=old PIDs${left} still running ${wait}s after the stop$hint"
      elif port_busy; then
        h=$(port_holder)
        say "error=port $port is still in use ${wait}s after the stop${h:+ (held by $h: stop it or free the port)}"
      else
        say "error=old PIDs still hold GPU memory"
      fi
      return 1
    fi
    sleep 0.05
    n=$((n + 1))
  done
}
# had: whether the file was there before install (1) or not (0); undo
# removes it only when it was not, so a lost copy never costs the file.
had=
install() {
  had=0
  if [ -e "$path" ]; then had=1; cp -p -- "$path" "$dir/$id.old" || return 1; fi
  if [ -n "$backup" ]; then cp -p -- "$path" "$backup" || return 1; fi
  case $mode in
    keep) ;;
    remove) rm -f -- "$path" ;;
    write)
      n="$path.sweepkit-new.$id"
      [ -e "$path" ] && chmod --reference="$path" -- "$n" 2>/dev/null
      mv -f -- "$n" "$path" ;;
  esac
}
undo() {
  [ "$mode" = keep ] && return 0
  if [ -e "$dir/$id.old" ]; then
    cp -p -- "$dir/$id.old" "$path.sweepkit-tmp.$id" &&
      mv -f -- "$path.sweepkit-tmp.$id" "$path"
  elif [ "$had" = 0 ]; then
    rm -f -- "$path"
  fi
  rm -f -- "$path.sweepkit-new.$id"
  [ -z "$backup" ] || rm -f -- "$backup"
}
# Keep the newest $keep backups (names sort by time).
prune() {
  [ "$keep" -gt 0 ] 2>/dev/null || return 0
  set -- "$path".sweepkit-bak.*
  [ -e "$1" ] || return 0
  n=$(($# - keep))
  while [ $n -gt 0 ]; do rm -f -- "$1"; shift; n=$((n - 1)); done
}
abandon() {
  undo
  [ "$mode" = keep ] || m_reload
  say "error=$1"
  say result=old
}
# Wait for svc-swap's verdict on the installed file (go, or why not); with
# no verdict in $gowait s svc-swap is gone, and nothing has been stopped.
await_go() {
  [ "$gowait" -gt 0 ] || return 0
  n=0
  while [ ! -s "$dir/$id.go" ]; do
    if [ $n -ge $((gowait * 20)) ]; then
      abandon "no go from svc-swap within ${gowait}s; nothing stopped"
      return 1
    fi
    sleep 0.05
    n=$((n + 1))
  done
  v=$(cat -- "$dir/$id.go")
  [ "$v" = go ] && return 0
  abandon "$v"
  return 1
}
